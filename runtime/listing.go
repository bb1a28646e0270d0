package runtime

import (
	"fmt"
	"slices"
	"strings"

	"github.com/concord-ctx/concord/locator"
)

// Listing sources (docs/protocol.md, "Listing sources"): a directory listing
// the model was shown. Its text is the canonical listing, one entry per line.
// A listing is never patched: an entry that appeared or vanished makes the
// block invalid with a notice that names them, and the model lists again.

// Lister is implemented by adapters some of whose sources are listings.
type Lister interface {
	IsListing(id string) bool
}

func isListing(s *source) bool {
	l, ok := s.adapter.(Lister)
	return ok && l.IsListing(s.id)
}

// maxNamed bounds the entries a listing notice names.
const maxNamed = 10

// listing reconciles a listing link: the same entries, or a notice. A link
// already invalid keeps its state (the model was told to list again) and
// its notice follows every later change, so it names all the entries that
// differ from the listing shown.
func (rc *reconciler) listing(l *link) {
	again := l.state != linkOK
	shown := entrySet(l.text)
	cur := entrySet(strings.Join(rc.newLines, "\n"))
	var added, removed []string
	for e := range cur {
		if !shown[e] {
			added = append(added, e)
		}
	}
	for e := range shown {
		if !cur[e] {
			removed = append(removed, e)
		}
	}
	if len(added) == 0 && len(removed) == 0 {
		if !again {
			rc.apply(l, locator.Result{Status: locator.Unchanged})
		}
		return
	}
	slices.Sort(added)
	slices.Sort(removed)
	if again {
		if n := noticeListing(l, added, removed); n != l.notice() && l.state == linkInvalid {
			l.setNotice(n)
			rc.touch(l, fmt.Sprintf("listing: %d added, %d removed", len(added), len(removed)))
		}
		return
	}
	l.tracked, l.cause, l.tail = false, causePolicy, false
	l.setAnchor(nil)
	l.state = linkInvalid
	l.setNotice(noticeListing(l, added, removed))
	rc.m.ix.count("listing")
	rc.touch(l, fmt.Sprintf("listing: %d added, %d removed", len(added), len(removed)))
}

func entrySet(text string) map[string]bool {
	set := map[string]bool{}
	for _, e := range strings.Split(text, "\n") {
		if e = strings.TrimSuffix(e, "\r"); e != "" {
			set[e] = true
		}
	}
	return set
}

// noticeListing names what changed, at most maxNamed entries in all.
func noticeListing(l *link, added, removed []string) string {
	budget := maxNamed
	part := func(verb string, es []string) string {
		if len(es) == 0 {
			return ""
		}
		n := min(len(es), max(budget, 1))
		budget -= n
		s := verb + " " + strings.Join(es[:n], ", ")
		if n < len(es) {
			s += fmt.Sprintf(" and %d more", len(es)-n)
		}
		return s
	}
	var parts []string
	if s := part("added", added); s != "" {
		parts = append(parts, s)
	}
	if s := part("removed", removed); s != "" {
		parts = append(parts, s)
	}
	return fmt.Sprintf("[concord] the listing of %s shown earlier is out of date: %s. List it again before relying on it.",
		l.name(), strings.Join(parts, "; "))
}

// noticeListingGone: the listed directory was deleted or cannot be read.
func noticeListingGone(l *link, deleted bool, reason string) string {
	what := "the directory was deleted"
	if !deleted {
		what = "the directory could not be listed (" + reason + ")"
	}
	return fmt.Sprintf("[concord] the listing of %s shown earlier is out of date: %s. List it again before relying on it.", l.name(), what)
}
