// Package fetch dereferences the Content uris of requests (§4.8) under the
// server's policy (§15.5): which schemes and hosts, never private or local
// addresses unless allowed (checked on the address actually dialled), text
// bodies only, bounded in size, time and concurrency.
package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/rcpgo/rcpgo/rcp"
)

// Policy says which Content `uri`s the engine dereferences (§4.8,
// §15.5). The engine serves text only, so a fetched body must be text/*
// (UTF-8); it becomes the block's text.
type Policy struct {
	// Disabled refuses every uri.
	Disabled bool
	// Schemes allowed (default http, https). file is refused unless listed.
	Schemes []string
	// Hosts, when non-empty, is the allow-list of host names (exact, or
	// ".example.com" for a domain and its subdomains).
	Hosts []string
	// AllowPrivate permits every special-purpose address (loopback,
	// private, link-local, CGNAT, documentation, benchmarking, reserved,
	// NAT64, 6to4, Teredo, …; see blockedPrefixes) and this host's own
	// interface addresses; they are refused by default, checked on the
	// address actually dialled (so DNS cannot smuggle them in).
	AllowPrivate bool
	// MaxBytes bounds one body (default 1 MiB); Timeout bounds a fetch
	// (default 10 s).
	MaxBytes int64
	Timeout  time.Duration
	// MaxBlocks bounds the uri blocks of one request (default 8) and
	// MaxTotalBytes their bodies together (default 4 MiB); MaxConcurrent
	// bounds the fetches in flight across all requests (default 4).
	MaxBlocks     int
	MaxTotalBytes int64
	MaxConcurrent int
}

// WithDefaults fills in what p leaves to the server.
func (p Policy) WithDefaults() Policy {
	if len(p.Schemes) == 0 {
		p.Schemes = []string{"http", "https"}
	}
	if p.MaxBytes <= 0 {
		p.MaxBytes = 1 << 20
	}
	if p.Timeout <= 0 {
		p.Timeout = 10 * time.Second
	}
	if p.MaxBlocks <= 0 {
		p.MaxBlocks = 8
	}
	if p.MaxTotalBytes <= 0 {
		p.MaxTotalBytes = 4 << 20
	}
	if p.MaxConcurrent <= 0 {
		p.MaxConcurrent = 4
	}
	return p
}

var errPrivateAddress = errors.New("address is loopback, private, link-local, reserved or this host's own")

// errFetchFailed is the one answer for every network-side failure (DNS,
// refused, unreachable, refused address, timeout, HTTP status): telling
// them apart would make the server a port scanner for its callers.
var errFetchFailed = errors.New("the uri could not be fetched")

// blockedPrefixes is the IANA special-purpose address registry (IPv4 and
// IPv6) plus multicast: nothing a public document lives at.
var blockedPrefixes = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24", "192.88.99.0/24", "192.168.0.0/16",
		"192.175.48.0/24", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "::/96", "::ffff:0:0/96", "64:ff9b::/96", "64:ff9b:1::/48", "100::/64",
		"2001::/23", "2001:db8::/32", "2002::/16", "3fff::/20", "5f00::/16", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// blockedAddr reports addresses refused unless AllowPrivate: the special
// purpose registry (an IPv4-mapped address is judged as IPv4) and this
// host's own interface addresses, public ones included.
func blockedAddr(a netip.Addr) bool {
	if a.Is4In6() {
		a = a.Unmap()
	}
	a = a.WithZone("")
	for _, p := range blockedPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return ownAddr(a)
}

// ownAddr reports one of this host's interface addresses.
func ownAddr(a netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true // cannot tell: refuse
	}
	for _, ia := range addrs {
		if pn, ok := ia.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(pn.IP); ok && ip.Unmap() == a {
				return true
			}
		}
	}
	return false
}

// check validates u against the policy without network access.
func (p Policy) check(raw string) (*url.URL, error) {
	if p.Disabled {
		return nil, errors.New("fetching content uris is disabled on this server")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return nil, fmt.Errorf("uri %q is not an absolute URI", raw)
	}
	scheme := strings.ToLower(u.Scheme)
	if !slices.Contains(p.Schemes, scheme) {
		return nil, fmt.Errorf("uri scheme %q is not allowed (allowed: %s)", scheme, strings.Join(p.Schemes, ", "))
	}
	if scheme != "http" && scheme != "https" {
		return nil, fmt.Errorf("uri scheme %q cannot be fetched by this server", scheme)
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return nil, fmt.Errorf("uri %q has no host", raw)
	}
	if len(p.Hosts) > 0 && !slices.ContainsFunc(p.Hosts, func(h string) bool {
		h = strings.ToLower(h)
		if strings.HasPrefix(h, ".") {
			return host == h[1:] || strings.HasSuffix(host, h)
		}
		return host == h
	}) {
		return nil, fmt.Errorf("uri host %q is not in the allowed hosts", host)
	}
	if !p.AllowPrivate {
		if host == "localhost" || strings.HasSuffix(host, ".localhost") {
			return nil, fmt.Errorf("uri host %q: %w", host, errPrivateAddress)
		}
		if a, err := netip.ParseAddr(host); err == nil && blockedAddr(a) {
			return nil, fmt.Errorf("uri host %q: %w", host, errPrivateAddress)
		}
	}
	return u, nil
}

// client returns the HTTP client that enforces the policy at dial time.
func (p Policy) client() *http.Client {
	d := &net.Dialer{Timeout: p.Timeout, Control: func(_, address string, _ syscall.RawConn) error {
		if p.AllowPrivate {
			return nil
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return err
		}
		if blockedAddr(ap.Addr()) {
			return fmt.Errorf("dial %s: %w", address, errPrivateAddress)
		}
		return nil
	}}
	tr := &http.Transport{DialContext: d.DialContext, Proxy: nil, TLSHandshakeTimeout: p.Timeout, ResponseHeaderTimeout: p.Timeout}
	return &http.Client{Transport: tr, Timeout: p.Timeout, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 3 {
			return errors.New("too many redirects")
		}
		_, err := p.check(req.URL.String())
		return err
	}}
}

// Fetcher dereferences uris under a Policy. Safe for concurrent use.
type Fetcher struct {
	policy Policy
	client *http.Client
	sem    chan struct{} // bounds concurrent fetches (MaxConcurrent)
	log    *slog.Logger
}

// New is a Fetcher under p (with its defaults).
func New(p Policy, log *slog.Logger) *Fetcher {
	p = p.WithDefaults()
	return &Fetcher{policy: p, client: p.client(), sem: make(chan struct{}, p.MaxConcurrent), log: log}
}

// fetchText dereferences one uri under the policy, reading at most limit
// bytes; the body must be text/* in UTF-8. Policy refusals name their
// reason; every failure on the network side is errFetchFailed (the cause
// is logged at debug level).
func (f *Fetcher) fetchText(ctx context.Context, raw string, limit int64) (string, error) {
	p := f.policy
	u, err := p.check(raw)
	if err != nil {
		return "", err
	}
	select {
	case f.sem <- struct{}{}:
		defer func() { <-f.sem }()
	case <-ctx.Done():
		return "", ctx.Err()
	}
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	failed := func(cause any) (string, error) {
		f.log.Debug("engine: content uri fetch failed", "uri", raw, "cause", cause)
		return "", fmt.Errorf("fetching %q: %w", raw, errFetchFailed)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("uri %q: %w", raw, err)
	}
	req.Header.Set("Accept", "text/*")
	resp, err := f.client.Do(req)
	if err != nil {
		return failed(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return failed(resp.Status)
	}
	mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mt, "text/") {
		return "", fmt.Errorf("fetching %q: content type %q is not text/* (this server embeds text only)", raw, resp.Header.Get("Content-Type"))
	}
	if cs := strings.ToLower(params["charset"]); cs != "" && cs != "utf-8" && cs != "us-ascii" {
		return "", fmt.Errorf("fetching %q: charset %q is not UTF-8", raw, cs)
	}
	if resp.ContentLength > limit {
		return "", fmt.Errorf("fetching %q: body exceeds %d bytes", raw, limit)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return failed(err)
	}
	if int64(len(body)) > limit {
		return "", fmt.Errorf("fetching %q: body exceeds %d bytes", raw, limit)
	}
	if !utf8.Valid(body) {
		return "", fmt.Errorf("fetching %q: body is not UTF-8", raw)
	}
	return string(body), nil
}

// Resolve checks content blocks (§4.8): non-text blocks are -32005
// (option = the type; no multimodal model is configured); a text block
// carrying a uri instead of text has the uri fetched under
// the policy, its text/* body becoming the text, and -32602 (field
// "<field>[i].uri") when the policy refuses it, the fetch fails, or the
// blocks exceed MaxBlocks or MaxTotalBytes together.
func (f *Fetcher) Resolve(ctx context.Context, blocks []rcp.Content, field string) error {
	p := f.policy
	fetched, budget := 0, p.MaxTotalBytes
	for i := range blocks {
		b := &blocks[i]
		if b.URI == "" && b.IsText() && b.Validate() == nil {
			continue // plain text: nothing to resolve (and no field name to format)
		}
		at := fmt.Sprintf("%s[%d]", field, i)
		if err := b.Validate(); err != nil {
			return rcp.InvalidParams(at, "%v", err)
		}
		if !b.IsText() {
			return rcp.OptionUnsupported(b.Type, "%s: content of type %q is not supported (modalities: text)", at, b.Type)
		}
		if b.URI == "" {
			continue
		}
		if b.Text != "" {
			return rcp.InvalidParams(at+".uri", "a text block carries text or uri, not both")
		}
		if fetched++; fetched > p.MaxBlocks {
			return rcp.InvalidParams(at+".uri", "at most %d uri blocks per request", p.MaxBlocks)
		}
		if budget <= 0 {
			return rcp.InvalidParams(at+".uri", "the uri bodies of one request exceed %d bytes together", p.MaxTotalBytes)
		}
		text, err := f.fetchText(ctx, b.URI, min(p.MaxBytes, budget))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return rcp.InvalidParams(at+".uri", "%v", err)
		}
		budget -= int64(len(text))
		b.Text, b.URI = text, ""
	}
	return nil
}
