//go:build feed

// Package natsfeed is the change feed's transport on NATS JetStream: one
// stream per workspace feed, a durable pull consumer per instance. It is
// built only with -tags feed, so the default plugin binary stays small (the
// NATS client brings TLS and more).
package natsfeed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/concord-ctx/concord/feed"
)

// Subject is where the changes of feed name go; Stream is the stream that
// keeps them.
func Subject(name string) string { return "concord.feed." + name + ".changes" }
func Stream(name string) string  { return "CONCORD_FEED_" + name }

// The stream keeps a day of changes: an instance away longer than that (or
// whose consumer the server forgot after InactiveThreshold) catches up by
// the verify pass of its next syncs, not by replay.
const (
	keepFor       = 24 * time.Hour
	keepMsgs      = 1 << 20
	setupRetryMax = 2 * time.Second
	// pullExpiry bounds one pull request: a consumer whose server died is
	// noticed within about half of it (the heartbeat).
	pullExpiry = 5 * time.Second
)

// Transport is a feed.Transport on NATS JetStream.
type Transport struct {
	cfg  feed.TransportConfig
	log  *slog.Logger
	nc   *nats.Conn
	js   jetstream.JetStream
	subj string

	mu         sync.Mutex
	ready      bool      // stream and consumer set up
	lastSeen   time.Time // the stored time of the last message handled
	recovering bool      // a lost consumer is being recreated
	opened     time.Time // when Open was called: not joined since then
	down       time.Time // when the connection was lost (zero while connected)
	consume    jetstream.ConsumeContext
	handle     func(context.Context, []byte)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // setup and recovery goroutines
}

var _ feed.Transport = (*Transport)(nil)

// Open connects to cfg.URL and returns at once: the stream and the consumer
// are set up in the background, and an unreachable server only makes the
// feed "behind" (a lost connection never blocks a model call).
func Open(ctx context.Context, cfg feed.TransportConfig) (feed.Transport, error) {
	if err := feed.CheckName(cfg.Name); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	if cfg.Consumer == "" {
		return nil, errors.New("natsfeed: no consumer name")
	}
	cfg.Consumer = consumerName(cfg.Consumer)
	now := time.Now()
	t := &Transport{cfg: cfg, log: log, subj: Subject(cfg.Name), opened: now, down: now}
	opts := []nats.Option{
		nats.Name("concord " + cfg.Host),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(100 * time.Millisecond),
		nats.RetryOnFailedConnect(true),
		nats.ConnectHandler(func(*nats.Conn) { t.setDown(false) }),
		nats.ReconnectHandler(func(c *nats.Conn) {
			log.Info("feed: reconnected", "server", c.ConnectedUrlRedacted())
			t.setDown(false)
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			log.Warn("feed: connection error", "err", err)
		}),
		nats.ClosedHandler(func(c *nats.Conn) {
			if err := c.LastError(); err != nil {
				log.Warn("feed: connection closed; the feed stays behind", "err", err)
			}
			t.setDown(true)
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			log.Warn("feed: disconnected; local work goes on", "err", err)
			t.setDown(true)
		}),
	}
	// Credentials go to the client as given and are never logged.
	if cfg.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	}
	if cfg.NKeyFile != "" {
		o, err := nats.NkeyOptionFromSeed(cfg.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("feed nkey: %w", err)
		}
		opts = append(opts, o)
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("feed connect %s: %w", redact(cfg.URL), err)
	}
	if nc.IsConnected() {
		t.setDown(false)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("feed jetstream: %w", err)
	}
	t.nc, t.js = nc, js
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return t, nil
}

var userinfo = regexp.MustCompile(`//[^@/]*@`)

// redact drops user:password@ from URLs for logs and errors.
func redact(u string) string { return userinfo.ReplaceAllString(u, "//***@") }

// consumerName keeps what a durable name may hold.
func consumerName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

func (t *Transport) setDown(down bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case !down:
		t.down = time.Time{}
	case t.down.IsZero():
		t.down = time.Now()
	}
}

// State is connected once the connection is up and the consumer set up.
func (t *Transport) State() (bool, time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.down.IsZero() && t.ready && t.nc.IsConnected() {
		return true, time.Time{}
	}
	if t.down.IsZero() {
		return false, t.opened // connected, not joined yet
	}
	return false, t.down
}

// Publish stores one message; id is JetStream's Nats-Msg-Id, so a retry of
// a message the server already has is dropped there.
func (t *Transport) Publish(ctx context.Context, data []byte, id string) error {
	if _, err := t.js.Publish(ctx, t.subj, data, jetstream.WithMsgID(id)); err != nil {
		return fmt.Errorf("feed publish %s: %w", t.subj, err)
	}
	return nil
}

// Start sets up the stream and this instance's durable consumer (retrying
// until the servers answer) and delivers messages to handle.
func (t *Transport) Start(handle func(context.Context, []byte)) {
	t.handle = handle
	t.wg.Add(1)
	go t.setupLoop()
}

func (t *Transport) setupLoop() {
	defer t.wg.Done()
	wait := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := t.setup()
		if err == nil {
			return
		}
		if t.ctx.Err() != nil {
			return
		}
		if attempt == 1 || attempt%20 == 0 {
			t.log.Warn("feed: setting up the stream and consumer failed; retrying", "attempt", attempt, "err", err)
		}
		select {
		case <-t.ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, setupRetryMax)
	}
}

func (t *Transport) setup() error {
	ctx, cancel := context.WithTimeout(t.ctx, 10*time.Second)
	defer cancel()
	name := Stream(t.cfg.Name)
	if _, err := t.js.Stream(ctx, name); errors.Is(err, jetstream.ErrStreamNotFound) {
		// The first instance creates it; an operator may create it
		// beforehand with other limits, and those are kept.
		_, err = t.js.CreateStream(ctx, jetstream.StreamConfig{
			Name: name, Subjects: []string{t.subj}, Storage: jetstream.FileStorage,
			Replicas: t.cfg.Replicas, MaxAge: keepFor, MaxMsgs: keepMsgs, Discard: jetstream.DiscardOld,
		})
		if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return fmt.Errorf("feed create stream %s: %w", name, err)
		}
	} else if err != nil {
		return fmt.Errorf("feed stream %s: %w", name, err)
	}
	cc := jetstream.ConsumerConfig{
		Durable: t.cfg.Consumer, AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverNewPolicy,
		FilterSubject: t.subj, AckWait: 30 * time.Second, InactiveThreshold: keepFor,
	}
	t.mu.Lock()
	if !t.lastSeen.IsZero() {
		// A consumer recreated after it was lost starts where the last one
		// stopped (that message comes again: at least once).
		since := t.lastSeen
		cc.DeliverPolicy, cc.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
	}
	t.mu.Unlock()
	cons, err := t.js.CreateOrUpdateConsumer(ctx, name, cc)
	if err != nil {
		return fmt.Errorf("feed consumer %s: %w", t.cfg.Consumer, err)
	}
	consume, err := cons.Consume(func(msg jetstream.Msg) {
		t.handle(t.ctx, msg.Data())
		if md, err := msg.Metadata(); err == nil {
			t.mu.Lock()
			t.lastSeen = md.Timestamp
			t.mu.Unlock()
		}
		// Acked after it was applied: a message lost with a connection
		// comes again.
		if err := msg.Ack(); err != nil {
			t.log.Debug("feed: ack failed; the message will come again", "err", err)
		}
	}, jetstream.PullExpiry(pullExpiry), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		t.log.Debug("feed: consumer", "err", err)
		if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrNoHeartbeat) {
			t.recover()
		}
	}))
	if err != nil {
		return fmt.Errorf("feed consume %s: %w", t.cfg.Consumer, err)
	}
	t.mu.Lock()
	t.consume, t.ready = consume, true
	t.mu.Unlock()
	t.log.Info("feed: joined", "stream", name, "consumer", t.cfg.Consumer, "server", t.nc.ConnectedUrlRedacted())
	return nil
}

// recover recreates the consumer when the server lost it (deleted by an
// operator, or after InactiveThreshold), from the last message handled.
// Missing heartbeats only make it check: a consumer that is still there
// resumes by itself.
func (t *Transport) recover() {
	t.mu.Lock()
	if t.recovering || t.ctx.Err() != nil {
		t.mu.Unlock()
		return
	}
	t.recovering = true
	t.wg.Add(1)
	t.mu.Unlock()
	go func() {
		defer t.wg.Done()
		defer func() {
			t.mu.Lock()
			t.recovering = false
			t.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
		_, err := t.js.Consumer(ctx, Stream(t.cfg.Name), t.cfg.Consumer)
		cancel()
		if !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return
		}
		t.log.Warn("feed: consumer lost; recreating it from the last message seen", "consumer", t.cfg.Consumer)
		t.mu.Lock()
		old := t.consume
		t.consume, t.ready = nil, false
		t.mu.Unlock()
		if old != nil {
			old.Stop()
		}
		t.wg.Add(1)
		t.setupLoop()
	}()
}

// Close stops consuming and closes the connection; the durable consumer
// stays on the server until InactiveThreshold.
func (t *Transport) Close() error {
	t.mu.Lock() // no recovery starts once cancelled (recover checks under mu)
	t.cancel()
	t.mu.Unlock()
	t.wg.Wait()
	t.mu.Lock()
	cc := t.consume
	t.mu.Unlock()
	if cc != nil {
		cc.Stop()
		select {
		case <-cc.Closed():
		case <-time.After(2 * time.Second):
		}
		// A clean end needs no replay: the consumer goes with the
		// instance (a crashed one is dropped after InactiveThreshold).
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := t.js.DeleteConsumer(ctx, Stream(t.cfg.Name), t.cfg.Consumer); err != nil {
			t.log.Debug("feed: consumer not deleted", "err", err)
		}
		cancel()
	}
	t.nc.Close()
	return nil
}
