package recognize

// The command classification, for the public corpus's golden test
// (public_test.go): the decision is internal, not part of the API.
type Intent = intent

const KindUnparsed = kindUnparsed

var Classify = classify
