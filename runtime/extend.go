package runtime

// Optional Adapter extensions. The core checks for them with a type
// assertion, so an adapter implements only what applies to its sources.

// Reporter is implemented by adapters whose sources' versions and content the
// client reports (keyed sources). The manager hands it every version and text
// the client states, in observe and sourceChanged, so that Stamp and Read can
// answer from what was reported instead of asking the client again. Observe
// requires a version for the sources of a Reporter.
type Reporter interface {
	Report(id, version string, text *string)
}

// Displayer is implemented by adapters whose sources have a friendlier name
// than their URI for notices (the file adapter: the plain path).
type Displayer interface {
	Display(id string) string
}
