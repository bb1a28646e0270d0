//go:build !feed

package session

import (
	"context"
	"log/slog"

	"github.com/concord-ctx/concord/feed"
	"github.com/concord-ctx/concord/fileadapter"
	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/runtime"
	"github.com/concord-ctx/concord/runtime/keyed"
)

// Without -tags feed the bridge is not linked at all (feed_on.go has it):
// the plugin binary stays as it was.

// withFeed refuses a feed: this build has none.
func withFeed(_ context.Context, m *runtime.Manager, o FeedOptions, _ feed.OpenFunc, _ *fileadapter.Adapter, _ *keyed.Adapter, _ string, _ *slog.Logger) (manager, error) {
	if o.URL == "" {
		return m, nil
	}
	m.Close()
	return nil, protocol.FieldErrorf("feed", "%s", feed.ErrNotBuilt.Error())
}

// feedHint is the file adapter's notify: the manager's hint.
type feedHint struct{ m *runtime.Manager }

func (h *feedHint) notify(id string) { h.m.Hint(id) }
func (h *feedHint) attach(manager)  {}
