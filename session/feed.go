package session

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/concord-ctx/concord/feed"
	"github.com/concord-ctx/concord/protocol"
)

// FeedOptions are the operator's change-feed settings (serve's --feed
// flags). No URL: no feed.
type FeedOptions struct {
	URL       string
	Name      string // the workspace's feed
	Host      string // default: the hostname
	Root      string // the shared workspace root (default: the first root)
	CredsFile string
	NKeyFile  string
	Replicas  int // of the stream, when this instance creates it
}

// merge lays initialize's feed over the operator's and checks the result.
func (o FeedOptions) merge(p *protocol.FeedParams, open feed.OpenFunc) (FeedOptions, error) {
	if p != nil {
		for _, f := range []struct {
			dst *string
			src string
		}{{&o.URL, p.URL}, {&o.Name, p.Name}, {&o.Host, p.Host}, {&o.Root, p.Root}} {
			if f.src != "" {
				*f.dst = f.src
			}
		}
	}
	if o.URL == "" {
		return o, nil
	}
	if open == nil {
		return o, protocol.FieldErrorf("feed", "%s", feed.ErrNotBuilt.Error())
	}
	if o.Name == "" {
		return o, protocol.FieldErrorf("feed.name", "required with a feed: the workspace's feed name, the same on every host")
	}
	if err := feed.CheckName(o.Name); err != nil {
		return o, protocol.FieldErrorf("feed.name", "%s", err.Error())
	}
	if o.Root != "" && !filepath.IsAbs(o.Root) {
		return o, protocol.FieldErrorf("feed.root", "must be an absolute path, not %q", o.Root)
	}
	if o.Host == "" {
		o.Host, _ = os.Hostname()
		if o.Host == "" {
			o.Host = "unknown"
		}
	}
	if strings.ContainsFunc(o.Host, func(r rune) bool { return r < ' ' || r == 0x7f }) || len(o.Host) > 255 {
		return o, protocol.FieldErrorf("feed.host", "%q is not a usable host name", o.Host)
	}
	return o, nil
}

// feedRoot is the shared root source keys are relative to, symlinks
// resolved as the file adapter resolves source paths.
func feedRoot(o FeedOptions, roots []string) string {
	r := o.Root
	if r == "" && len(roots) > 0 {
		r = roots[0]
	}
	if rp, err := filepath.EvalSymlinks(r); err == nil {
		r = rp
	}
	return r
}
