// Package weaviate serves the engine's Backend seam (search.Backend,
// search.DenseBackend) on a Weaviate cluster through the official Go client:
// documents and chunks are Weaviate objects with deterministic UUIDs,
// sparse recall is Weaviate's BM25, dense recall is nearVector over the
// vectors rcpd's own encoder computed at write time (the collection's
// vectorizer is "none"), and RCP filters are compiled to parameterised
// where-filters (filter.go). Hybrid fusion stays in rcpd (rcp/fusion): it
// serves every fusion method RCP names, exactly.
//
// # What a version means here
//
// Weaviate keeps no snapshots a reader can pin: Version returns the name
// of the live collection ("weaviate:<class>[/<tenant>]"), not a snapshot.
// A request pinned to that name reads the live collection; pages of one
// cursor are re-ranked against the live data, so a write between two pages
// may shift them (the engine advertises retrieve.snapshots false).
//
// # Outages
//
// Open returns at once; a goroutine connects with exponential backoff
// (and the client's gRPC channel reconnects by itself later). Every call
// made while Weaviate is unreachable fails with -32010 (retryable), so the
// engine keeps answering ping and info.
package weaviate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rcpgo/rcpgo/engine/analysis"
	"github.com/rcpgo/rcpgo/engine/internal/fault"
	"github.com/rcpgo/rcpgo/engine/search"

	"github.com/maypok86/otter/v2"
	wv "github.com/weaviate/weaviate-go-client/v5/weaviate"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/auth"
	wvgrpc "github.com/weaviate/weaviate-go-client/v5/weaviate/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/rcpgo/rcpgo/engine/embed"
)

// DefaultClass is the collection rcpd uses when Config.Class is empty.
const DefaultClass = "Rcpgo"

// Config configures a Backend.
type Config struct {
	// URL is Weaviate's REST endpoint (http://127.0.0.1:8080).
	URL string
	// GRPCAddr is its gRPC endpoint (host:port; default the URL's host
	// with port 50051).
	GRPCAddr string
	// APIKey authenticates (empty: anonymous access).
	APIKey string
	// Class is the collection (default DefaultClass); it is created when
	// missing, with vectorizer "none".
	Class string
	// Tenant, when set, makes the collection multi-tenant and reads and
	// writes this tenant only (created when missing).
	Tenant string
	// Replicas is the replication factor of a collection this backend
	// creates (0: Weaviate's default, 1).
	Replicas int
	// WriteConsistency and ReadConsistency are Weaviate consistency levels
	// (ONE, QUORUM, ALL; empty: Weaviate's default, QUORUM).
	WriteConsistency, ReadConsistency string
	// Fields are the filterable metadata fields, name → §8 type.
	Fields map[string]string
	// Dense embeds documents at Add and queries for dense recall (nil:
	// sparse only).
	Dense embed.Provider
	// Timeout bounds one Weaviate call (default 30 s).
	Timeout time.Duration
	// RecentWindow is how long a written document counts as possibly not
	// flushed by Weaviate, whose BM25 ranks such documents too low
	// (recent.go; default DefaultRecentWindow, negative: off); RecentMax
	// bounds the documents its searches rank exactly (default
	// DefaultRecentMax).
	RecentWindow time.Duration
	RecentMax    int
	Logger       *slog.Logger
}

// Backend is a Weaviate collection behind the engine. Safe for concurrent
// use.
type Backend struct {
	cfg    Config
	log    *slog.Logger
	schema *schema

	mu        sync.Mutex
	client    *wv.Client // nil until connected and the schema is ensured
	connErr   error      // the last connection error
	connected chan struct{}
	stop      context.CancelFunc
	done      chan struct{}

	words  *otter.Cache[string, float64] // WordMax answers (the confidence normaliser)
	recent *recentWrites                 // documents written within RecentWindow (recent.go)
	an     *analysis.Analyzer            // analyses quoted phrases and their candidates' texts
	stats  atomic.Pointer[cachedStats]
}

var classRE = regexp.MustCompile(`^[A-Z][_0-9A-Za-z]{0,230}$`)

// Open validates cfg and starts connecting in the background.
func Open(cfg Config) (*Backend, error) {
	if cfg.Class == "" {
		cfg.Class = DefaultClass
	}
	if !classRE.MatchString(cfg.Class) {
		return nil, fmt.Errorf("weaviate: class %q must start with an upper-case letter and hold only letters, digits and _", cfg.Class)
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("weaviate: URL %q must be http(s)://host[:port]", cfg.URL)
	}
	if cfg.GRPCAddr == "" {
		cfg.GRPCAddr = u.Hostname() + ":50051"
	}
	for _, c := range []string{cfg.WriteConsistency, cfg.ReadConsistency} {
		switch c {
		case "", "ONE", "QUORUM", "ALL":
		default:
			return nil, fmt.Errorf("weaviate: consistency level %q (want ONE, QUORUM or ALL)", c)
		}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.RecentWindow == 0 {
		cfg.RecentWindow = DefaultRecentWindow
	}
	if cfg.RecentMax <= 0 {
		cfg.RecentMax = DefaultRecentMax
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	sc, err := newSchema(cfg.Fields)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	b := &Backend{cfg: cfg, log: cfg.Logger, schema: sc, connected: make(chan struct{}), stop: stop, done: make(chan struct{}), an: analysis.Default()}
	b.words = newWordCache()
	b.recent = newRecentWrites(cfg.RecentWindow, cfg.RecentMax)
	go b.connectLoop(ctx, u)
	return b, nil
}

// WaitConnected waits until the backend is connected (or ctx ends) and
// returns the last connection error when ctx ends first.
func (b *Backend) WaitConnected(ctx context.Context) error {
	select {
	case <-b.connected:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.connErr != nil {
			return fmt.Errorf("weaviate: not connected: %w", b.connErr)
		}
		return ctx.Err()
	}
}

// connectLoop connects and ensures the schema, retrying with exponential
// backoff (0.25 s doubling to 15 s) until it succeeds or Close.
func (b *Backend) connectLoop(ctx context.Context, u *url.URL) {
	defer close(b.done)
	wait := 250 * time.Millisecond
	for {
		c, err := b.connect(ctx, u)
		if err == nil {
			b.mu.Lock()
			b.client, b.connErr = c, nil
			b.mu.Unlock()
			close(b.connected)
			b.log.Info("weaviate: connected", "url", b.cfg.URL, "class", b.cfg.Class, "tenant", b.cfg.Tenant)
			return
		}
		b.mu.Lock()
		b.connErr = err
		b.mu.Unlock()
		b.log.Warn("weaviate: not ready (unreachable, or the collection could not be set up); retrying", "url", b.cfg.URL, "in", wait, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 15*time.Second)
	}
}

func (b *Backend) connect(ctx context.Context, u *url.URL) (*wv.Client, error) {
	cfg := wv.Config{Host: u.Host, Scheme: u.Scheme, Timeout: b.cfg.Timeout, StartupTimeout: time.Second,
		GrpcConfig: &wvgrpc.Config{Host: b.cfg.GRPCAddr, Secured: u.Scheme == "https"}}
	if b.cfg.APIKey != "" {
		cfg.AuthConfig = auth.ApiKey{Value: b.cfg.APIKey}
	}
	c, err := wv.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	if err := b.schema.ensure(cctx, c, b.cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// conn returns the connected client, or -32010 while connecting.
func (b *Backend) conn() (*wv.Client, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.client != nil {
		return b.client, nil
	}
	detail := "connecting"
	if b.connErr != nil {
		detail = b.connErr.Error()
	}
	return nil, unavailable(detail)
}

// Close stops connecting. Calls after Close fail.
func (b *Backend) Close() error {
	b.stop()
	<-b.done
	return nil
}

// Version names the live collection (see the package comment).
func (b *Backend) Version() string {
	v := "weaviate:" + b.cfg.Class
	if b.cfg.Tenant != "" {
		v += "/" + b.cfg.Tenant
	}
	return v
}

// unavailable is search.ErrUnavailable, saying what failed.
func unavailable(detail string) error {
	return &fault.Error{Err: search.ErrUnavailable, Message: "the Weaviate backend is unavailable", Detail: detail}
}

// classify turns a transport failure into -32010 (retryable) and wraps
// anything else. A call that failed because its own context ended reports
// that (the caller's deadline is -32014, not an outage): gRPC reports it as
// a cancelled stream, indistinguishable from a server going away.
func classify(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("weaviate: %s: %w", op, cerr)
	}
	// The deadline can have passed before the context's timer fires: gRPC
	// then already reports the stream cut (it forwards our deadline to the
	// server, which cancels at the same instant) while ctx.Err() is still nil.
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return fmt.Errorf("weaviate: %s: %w", op, context.DeadlineExceeded)
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	if s, ok := status.FromError(unwrapAll(err)); ok {
		switch s.Code() {
		case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted:
			return fmt.Errorf("weaviate: %s: %w", op, unavailable(s.Message()))
		}
	}
	msg := err.Error()
	for _, s := range []string{"connection refused", "connection reset", "no such host", "EOF", "i/o timeout",
		"context deadline exceeded", "broken pipe", "Unavailable", "status code: 5", "statusCode: 5",
		"not enough replicas", "cannot achieve consistency", "replica"} {
		if strings.Contains(msg, s) {
			return fmt.Errorf("weaviate: %s: %w", op, unavailable(op+": "+msg))
		}
	}
	return fmt.Errorf("weaviate: %s: %w", op, err)
}

// unwrapAll returns the innermost error (status.FromError needs the gRPC
// status error itself).
func unwrapAll(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// wordCacheSize bounds the cached WordMax answers; each expires a minute
// after it was fetched (the corpus changes under it).
const wordCacheSize = 4096

func newWordCache() *otter.Cache[string, float64] {
	return otter.Must(&otter.Options[string, float64]{
		MaximumSize:      wordCacheSize,
		ExpiryCalculator: otter.ExpiryWriting[string, float64](time.Minute),
	})
}
