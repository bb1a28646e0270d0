//go:build feed

package natsfeed_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/concord-ctx/concord/feed"
	"github.com/concord-ctx/concord/feed/natsfeed"
	"github.com/concord-ctx/concord/protocol"
)

// hosts starts one instance per host name on the cluster, each with its
// own root over w's shared directory, and waits until every feed is live
// (a consumer created later would not see earlier changes).
func hosts(tb testing.TB, c *cluster, w *workspace, names ...string) []*instance {
	tb.Helper()
	ins := make([]*instance, len(names))
	for i, h := range names {
		ins[i] = startInstance(tb, w, c.url(), h)
	}
	for _, in := range ins {
		in.waitLive()
	}
	return ins
}

func ptr(s string) *string { return &s }

// TestFeedWriteInvalidatesOtherHosts: three instances over one shared
// directory, no watcher. hostA's agent edits a file and a keyed resource;
// hostB and hostC hear of both through the feed (blocksChanged arrives with
// no sync of theirs), and their next sync shows the file repaired and the
// resource's read marked changed on hostA.
func TestFeedWriteInvalidatesOtherHosts(t *testing.T) {
	c := startCluster(t, 3)
	w := newWorkspace(t)
	w.write(t, "app.py", "import os\n\ndef main():\n    return 1\n")
	ins := hosts(t, c, w, "hostA", "hostB", "hostC")
	a, others := ins[0], ins[1:]

	blocks := map[*instance][2]string{}
	for _, in := range others {
		fb := in.observe("main", "call_1", in.fileURI("app.py"), "import os\n\ndef main():\n    return 1\n", "")
		kb := in.observe("main", "call_2", "res://issues/7", "title: crash on start\nstate: open", "v1")
		blocks[in] = [2]string{fb, kb}
	}
	before := map[*instance]int{}
	for _, in := range others {
		before[in] = in.notifications()
	}

	w.write(t, "app.py", "import os\n\ndef main():\n    return 2\n")
	a.sourceChanged("writer", a.fileURI("app.py"), "", nil)
	a.sourceChanged("writer", "res://issues/7", "v2", ptr("title: crash on start\nstate: closed"))

	for _, in := range others {
		waitFor(t, 10*time.Second, in.host+"'s blocksChanged from the feed", func() bool { return in.notifications() >= before[in]+1 })
		views := in.collect("main", 10*time.Second, "both blocks changed", func(v map[string]protocol.BlockView) bool {
			return len(v) == 2
		})
		fv, kv := views[blocks[in][0]], views[blocks[in][1]]
		if fv.Status != protocol.Patched || len(fv.Sources) != 1 || !strings.Contains(fv.Sources[0].Text, "return 2") {
			t.Errorf("%s: file block %+v, want patched with the new text", in.host, fv)
		}
		if kv.Status != protocol.Invalid || !strings.Contains(kv.Notice, "changed on host hostA by agent writer") {
			t.Errorf("%s: keyed block %+v, want invalid with a notice naming hostA", in.host, kv)
		}
	}
	// The writer's own instance is not told its own change again.
	if got := a.sync("writer"); len(got.Blocks) != 0 || got.Feed == nil || got.Feed.State != protocol.FeedLive {
		t.Errorf("hostA sync = %+v, want nothing and a live feed", got)
	}
}

// TestFeedPublishesWatcherChanges: a file written on hostA by something
// that reports nothing (an editor, git) is seen by hostA's poller, and the
// feed brings it to hostB, which watches nothing.
func TestFeedPublishesWatcherChanges(t *testing.T) {
	c := startCluster(t, 3)
	w := newWorkspace(t)
	w.write(t, "notes.md", "# notes\nfirst\n")
	a := startInstance(t, w, c.url(), "hostA", "--poll-interval", "20ms")
	b := startInstance(t, w, c.url(), "hostB")
	a.waitLive()
	b.waitLive()
	a.observe("main", "call_1", a.fileURI("notes.md"), "# notes\nfirst\n", "") // hostA watches what it tracks
	blk := b.observe("main", "call_1", b.fileURI("notes.md"), "# notes\nfirst\n", "")
	seen := b.notifications()

	w.write(t, "notes.md", "# notes\nsecond line, longer\n")
	waitFor(t, 10*time.Second, "hostB's blocksChanged from hostA's watcher", func() bool { return b.notifications() > seen })
	v := b.collect("main", 10*time.Second, "the file's block", func(v map[string]protocol.BlockView) bool { return len(v) == 1 })[blk]
	if v.Status != protocol.Patched || len(v.Sources) != 1 || !strings.Contains(v.Sources[0].Text, "second line") {
		t.Errorf("hostB's view %+v, want patched with the new text", v)
	}
}

// TestFeedNodeKilled: one of three NATS servers dies while hostA publishes
// 30 changes; the stream has three replicas, so hostB and hostC still see
// every one of them.
func TestFeedNodeKilled(t *testing.T) {
	c := startCluster(t, 3)
	ins := hosts(t, c, nil, "hostA", "hostB", "hostC")
	a, others := ins[0], ins[1:]
	const n = 30
	ids := map[*instance]map[string]bool{}
	for _, in := range others {
		ids[in] = map[string]bool{}
		for i := 0; i < n; i++ {
			ids[in][in.observe("main", fmt.Sprintf("call_%d", i), fmt.Sprintf("res://k/%d", i), "old", "v1")] = true
		}
	}
	victim := c.streamLeader(t)
	for i := 0; i < n; i++ {
		if i == n/2 {
			// Mid-run, the server leading the stream: a new leader is
			// elected and instances connected to it move to another.
			victim.Shutdown()
		}
		a.sourceChanged("writer", fmt.Sprintf("res://k/%d", i), "v2", nil)
	}
	for _, in := range others {
		views := in.collect("main", 60*time.Second, "every change despite the dead node", func(v map[string]protocol.BlockView) bool {
			return len(v) == n
		})
		for id, v := range views {
			if !ids[in][id] || v.Status != protocol.Invalid || !strings.Contains(v.Notice, "hostA") {
				t.Errorf("%s: %s = %+v, want one of its blocks, invalid, naming hostA", in.host, id, v)
			}
		}
	}
}

// TestFeedReconnectCatchesUp: hostB loses its connection (a proxy cuts
// it). Its syncs go on and say the feed is behind; hostA's changes made
// meanwhile reach it when it reconnects, through its durable consumer.
func TestFeedReconnectCatchesUp(t *testing.T) {
	c := startCluster(t, 3)
	p := newProxy(t, strings.TrimPrefix(c.urls[1], "nats://"))
	a := startInstance(t, nil, c.url(), "hostA")
	b := startInstance(t, nil, p.url(), "hostB")
	a.waitLive()
	b.waitLive()
	const n = 5
	for i := 0; i < n; i++ {
		b.observe("main", fmt.Sprintf("call_%d", i), fmt.Sprintf("res://r/%d", i), "old", "v1")
	}
	fromB := a.observe("main", "call_b", "res://b/1", "old", "v1")

	p.down()
	var st *protocol.FeedStatus
	waitFor(t, 10*time.Second, "hostB's sync to say the feed is behind", func() bool {
		st = b.sync("main").Feed
		return st != nil && st.State == protocol.FeedBehind
	})
	if st.Since == "" || !strings.Contains(st.Notice, "unreachable") {
		t.Errorf("behind status %+v, want since and a notice", st)
	}
	for i := 0; i < n; i++ {
		a.sourceChanged("writer", fmt.Sprintf("res://r/%d", i), "v2", nil)
	}
	// hostB's own change while cut off is queued, not waited for.
	start := time.Now()
	b.sourceChanged("main", "res://b/1", "v2", nil)
	if d := time.Since(start); d > time.Second {
		t.Errorf("sourceChanged while disconnected took %v", d)
	}
	// A sync while cut off answers at once, with nothing new.
	start = time.Now()
	if res := b.sync("main"); len(res.Blocks) != 0 || res.Feed.State != protocol.FeedBehind {
		t.Errorf("sync while disconnected = %+v, want no blocks, feed behind", res)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("sync while disconnected took %v", d)
	}

	p.up(t)
	views := b.collect("main", 30*time.Second, "the changes missed while disconnected", func(v map[string]protocol.BlockView) bool {
		return len(v) == n
	})
	for _, v := range views {
		if v.Status != protocol.Invalid || !strings.Contains(v.Notice, "changed on host hostA") {
			t.Errorf("after reconnecting: %+v, want invalid naming hostA", v)
		}
	}
	b.waitLive()
	// And hostB's queued change reached hostA.
	v := a.collect("main", 30*time.Second, "hostB's change made while it was cut off", func(v map[string]protocol.BlockView) bool {
		_, ok := v[fromB]
		return ok
	})[fromB]
	if v.Status != protocol.Invalid || !strings.Contains(v.Notice, "changed on host hostB by agent main") {
		t.Errorf("hostA's view of hostB's change: %+v", v)
	}
}

// TestFeedIgnoresForeignAndMalformed: garbage on the feed's subject, and a
// well-formed message claiming another workspace, are ignored and logged;
// the message after them is applied.
func TestFeedIgnoresForeignAndMalformed(t *testing.T) {
	c := startCluster(t, 3)
	b := hosts(t, c, nil, "hostB")[0]
	foreign := b.observe("main", "call_1", "res://m/foreign", "old", "v1")
	good := b.observe("main", "call_2", "res://m/good", "old", "v1")

	nc, js := c.connect(t)
	defer nc.Close()
	msg := func(workspace, uri string) []byte {
		data, err := feed.Encode(feed.Message{Workspace: workspace, Origin: "tester", Host: "hostX", URI: uri, Version: "v2"})
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	for _, data := range [][]byte{
		[]byte("not json at all"),
		[]byte(`{"v":1,"workspace":"ws","origin":"tester","host":"hostX","path":"../../etc/passwd"}`),
		msg("another-ws", "res://m/foreign"),
		msg(feedName, "res://m/good"),
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := js.Publish(ctx, natsfeed.Subject(feedName), data); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	views := b.collect("main", 10*time.Second, "the good message applied", func(v map[string]protocol.BlockView) bool {
		_, ok := v[good]
		return ok
	})
	if v := views[good]; v.Status != protocol.Invalid || !strings.Contains(v.Notice, "hostX") {
		t.Errorf("good message: %+v, want invalid naming hostX", v)
	}
	if v, ok := views[foreign]; ok {
		t.Errorf("a message of another workspace changed %+v", v)
	}
	logs := b.logs.String()
	// At least once: a redelivered message is logged again.
	if got := strings.Count(logs, "feed: malformed message ignored"); got < 2 {
		t.Errorf("%d malformed messages logged, want 2:\n%s", got, logs)
	}
	if !strings.Contains(logs, "feed: message for another workspace ignored") || !strings.Contains(logs, "workspace=another-ws") {
		t.Errorf("the foreign message was not logged:\n%s", logs)
	}
}

// BenchmarkFeedPublishToSync: the latency from hostA's sourceChanged (the
// publish) to a sync of hostB that shows the change, over a 3-node cluster
// with three instances. hostB syncs once its blocksChanged arrives, as a
// binding would before the next model call. keyed: a resource hostB cannot
// read is marked changed on hostA; file: a file of the shared directory,
// which hostB (watching nothing) re-reads.
func BenchmarkFeedPublishToSync(b *testing.B) {
	c := startCluster(b, 3)
	w := newWorkspace(b)
	w.write(b, "bench.txt", "line -1\n")
	ins := hosts(b, c, w, "hostA", "hostB", "hostC")
	a, rb := ins[0], ins[1]
	b.Run("keyed", func(b *testing.B) {
		measure(b, rb, func(i int) (func(), func(protocol.BlockView) bool) {
			uri := fmt.Sprintf("res://bench/%d", i) // i counts across runs: every change is new
			blk := rb.observe("main", fmt.Sprintf("call_%d", i), uri, "old", "v1")
			ins[2].observe("main", fmt.Sprintf("call_%d", i), uri, "old", "v1")
			return func() { a.sourceChanged("writer", uri, "v2", nil) },
				func(v protocol.BlockView) bool { return v.Block == blk && v.Status == protocol.Invalid }
		})
	})
	fileBlocks := map[*instance]string{}
	for _, in := range ins[1:] {
		fileBlocks[in] = in.observe("files", "call_f", in.fileURI("bench.txt"), "line -1\n", "")
	}
	b.Run("file", func(b *testing.B) {
		measure(b, rb, func(i int) (func(), func(protocol.BlockView) bool) {
			text := fmt.Sprintf("line %d", i)
			return func() {
					w.write(b, "bench.txt", text+"\n")
					a.sourceChanged("writer", a.fileURI("bench.txt"), "", nil)
				}, func(v protocol.BlockView) bool {
					return v.Block == fileBlocks[rb] && len(v.Sources) == 1 && v.Sources[0].Text == text
				}
		})
	})
}

// changes numbers the benchmark's changes across its runs (b.N grows).
var changes int

// measure runs b.N changes: prepare(i) sets one up untimed and returns the
// change and the view of hostB's sync that shows it; it reports p50 and p99.
func measure(b *testing.B, rb *instance, prepare func(i int) (change func(), shows func(protocol.BlockView) bool)) {
	agent := "main"
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		changes++
		change, shows := prepare(changes)
		select { // a notification of the preparation is not the change
		case <-rb.kick:
		default:
		}
		b.StartTimer()
		start := time.Now()
		change()
		select {
		case <-rb.kick:
		case <-time.After(10 * time.Second):
			b.Fatal("no blocksChanged on hostB")
		}
		deadline := time.Now().Add(10 * time.Second)
		for shown := false; !shown; {
			if time.Now().After(deadline) {
				b.Fatal("hostB's syncs never showed the change")
			}
			for _, a := range []string{agent, "files"} {
				for _, v := range rb.sync(a).Blocks {
					shown = shown || shows(v)
				}
			}
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.50), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
}

// TestFeedConsumerLost: hostB's durable consumer disappears from the server
// (an operator deleted it, or it outlived InactiveThreshold); hostB
// recreates it from the last message it handled, and misses nothing.
func TestFeedConsumerLost(t *testing.T) {
	c := startCluster(t, 3)
	ins := hosts(t, c, nil, "hostA", "hostB")
	a, b := ins[0], ins[1]
	first := b.observe("main", "call_1", "res://lost/1", "old", "v1")
	second := b.observe("main", "call_2", "res://lost/2", "old", "v1")
	a.sourceChanged("writer", "res://lost/1", "v2", nil)
	b.collect("main", 10*time.Second, "the first change", func(v map[string]protocol.BlockView) bool {
		_, ok := v[first]
		return ok
	})

	nc, js := c.connect(t)
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, natsfeed.Stream(feedName))
	if err != nil {
		t.Fatal(err)
	}
	deleted := 0
	for name := range stream.ConsumerNames(ctx).Name() {
		if strings.HasPrefix(name, "hostB_") {
			if err := stream.DeleteConsumer(ctx, name); err != nil {
				t.Fatal(err)
			}
			deleted++
		}
	}
	if deleted != 1 {
		t.Fatalf("deleted %d consumers of hostB, want 1", deleted)
	}
	a.sourceChanged("writer", "res://lost/2", "v2", nil)
	v := b.collect("main", 30*time.Second, "the change made after the consumer was lost", func(v map[string]protocol.BlockView) bool {
		_, ok := v[second]
		return ok
	})[second]
	if v.Status != protocol.Invalid || !strings.Contains(v.Notice, "hostA") {
		t.Errorf("after recovery: %+v", v)
	}
	if !strings.Contains(b.logs.String(), "feed: consumer lost; recreating it") {
		t.Errorf("hostB did not say it recreated its consumer")
	}
}
