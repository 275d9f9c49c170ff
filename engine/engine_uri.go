package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// URIPolicy says which Content `uri`s the engine dereferences (§4.8,
// §15.5). The engine serves text only, so a fetched body must be text/*
// (UTF-8); it becomes the block's text.
type URIPolicy struct {
	// Disabled refuses every uri.
	Disabled bool
	// Schemes allowed (default http, https). file is refused unless listed.
	Schemes []string
	// Hosts, when non-empty, is the allow-list of host names (exact, or
	// ".example.com" for a domain and its subdomains).
	Hosts []string
	// AllowPrivate permits loopback, private (RFC 1918, ULA), link-local,
	// CGNAT and unspecified addresses; they are refused by default, checked
	// on the address actually dialled (so DNS cannot smuggle them in).
	AllowPrivate bool
	// MaxBytes bounds a body (default 1 MiB); Timeout bounds a fetch
	// (default 10 s).
	MaxBytes int64
	Timeout  time.Duration
}

func (p URIPolicy) withDefaults() URIPolicy {
	if len(p.Schemes) == 0 {
		p.Schemes = []string{"http", "https"}
	}
	if p.MaxBytes <= 0 {
		p.MaxBytes = 1 << 20
	}
	if p.Timeout <= 0 {
		p.Timeout = 10 * time.Second
	}
	return p
}

var errPrivateAddress = errors.New("address is loopback, private, link-local or unspecified")

// privateAddr reports addresses refused unless AllowPrivate.
func privateAddr(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsUnspecified() || a.IsMulticast() ||
		netip.MustParsePrefix("100.64.0.0/10").Contains(a) // CGNAT
}

// check validates u against the policy without network access.
func (p URIPolicy) check(raw string) (*url.URL, error) {
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
		if a, err := netip.ParseAddr(host); err == nil && privateAddr(a) {
			return nil, fmt.Errorf("uri host %q: %w", host, errPrivateAddress)
		}
	}
	return u, nil
}

// client returns the HTTP client that enforces the policy at dial time.
func (p URIPolicy) client() *http.Client {
	d := &net.Dialer{Timeout: p.Timeout, Control: func(_, address string, _ syscall.RawConn) error {
		if p.AllowPrivate {
			return nil
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return err
		}
		if privateAddr(ap.Addr()) {
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

// fetchText dereferences one uri under the policy; the body must be
// text/* in UTF-8.
func (e *Engine) fetchText(ctx context.Context, raw string) (string, error) {
	p := e.cfg.URIPolicy
	u, err := p.check(raw)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, p.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("uri %q: %w", raw, err)
	}
	req.Header.Set("Accept", "text/*")
	resp, err := e.uriClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("fetching %q: %w", raw, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("fetching %q: HTTP %d", raw, resp.StatusCode)
	}
	mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mt, "text/") {
		return "", fmt.Errorf("fetching %q: content type %q is not text/* (this server embeds text only)", raw, resp.Header.Get("Content-Type"))
	}
	if cs := strings.ToLower(params["charset"]); cs != "" && cs != "utf-8" && cs != "us-ascii" {
		return "", fmt.Errorf("fetching %q: charset %q is not UTF-8", raw, cs)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, p.MaxBytes+1))
	if err != nil {
		return "", fmt.Errorf("fetching %q: %w", raw, err)
	}
	if int64(len(body)) > p.MaxBytes {
		return "", fmt.Errorf("fetching %q: body exceeds %d bytes", raw, p.MaxBytes)
	}
	if !utf8.Valid(body) {
		return "", fmt.Errorf("fetching %q: body is not UTF-8", raw)
	}
	return string(body), nil
}

// resolveBlocks checks content blocks (§4.8): non-text blocks are -32005
// (option = the type; no multimodal model is configured); a text block
// carrying a uri instead of text has the uri fetched under
// Config.URIPolicy, its text/* body becoming the text, and -32602 (field
// "<field>[i].uri") when the policy refuses it or the fetch fails.
func (e *Engine) resolveBlocks(ctx context.Context, blocks []rcp.Content, field string) error {
	for i := range blocks {
		b := &blocks[i]
		f := fmt.Sprintf("%s[%d]", field, i)
		if err := b.Validate(); err != nil {
			return rcp.InvalidParams(f, "%v", err)
		}
		if !b.IsText() {
			return rcp.OptionUnsupported(b.Type, "%s: content of type %q is not supported (modalities: text)", f, b.Type)
		}
		if b.URI == "" {
			continue
		}
		if b.Text != "" {
			return rcp.InvalidParams(f+".uri", "a text block carries text or uri, not both")
		}
		text, err := e.fetchText(ctx, b.URI)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return rcp.InvalidParams(f+".uri", "%v", err)
		}
		b.Text, b.URI = text, ""
	}
	return nil
}
