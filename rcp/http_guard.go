package rcp

import (
	"crypto/subtle"
	"mime"
	"net"
	"net/http"
	"strings"
)

// requestGuard refuses requests a browser could have been tricked into
// sending (CSRF, DNS rebinding) before they reach the JSON-RPC layer:
//
//   - the body must be declared Content-Type: application/json (§5.2), which
//     no HTML form can send and no cross-site fetch can send without a CORS
//     preflight;
//   - the Host header must be an IP literal, localhost, or an allowed host
//     name: a DNS-rebinding page reaches a loopback server under its own
//     domain name;
//   - cross-site browser requests (Sec-Fetch-Site, else Origin against Host)
//     are refused unless their origin is trusted (http.CrossOriginProtection).
//
// Non-browser clients (curl with -H 'Content-Type: application/json', the
// SDKs, other servers) send neither Origin nor Sec-Fetch-Site and pass.
type requestGuard struct {
	anyHost bool
	hosts   map[string]bool
	cop     *http.CrossOriginProtection // nil: any origin (CORSOrigin "*")
}

func newRequestGuard(o *HTTPOptions) (*requestGuard, error) {
	g := &requestGuard{hosts: map[string]bool{}}
	for _, h := range o.AllowedHosts {
		if h == "*" {
			g.anyHost = true
		}
		g.hosts[strings.ToLower(h)] = true
	}
	if o.CORSOrigin == "*" {
		return g, nil
	}
	g.cop = http.NewCrossOriginProtection()
	origins := o.TrustedOrigins
	if o.CORSOrigin != "" {
		origins = append([]string{o.CORSOrigin}, origins...)
	}
	for _, origin := range origins {
		if origin == "*" {
			g.cop = nil
			return g, nil
		}
		if err := g.cop.AddTrustedOrigin(origin); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// check returns the HTTP status and reason of a refused request (0 when
// the request may proceed).
func (g *requestGuard) check(r *http.Request) (int, string) {
	if !g.hostAllowed(r.Host) {
		return http.StatusForbidden, "host " + r.Host + " is not allowed (DNS rebinding protection; see --allow-host)"
	}
	if g.cop != nil {
		if err := g.cop.Check(r); err != nil {
			return http.StatusForbidden, "cross-origin request refused (see --allow-origin)"
		}
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return http.StatusUnsupportedMediaType, "Content-Type must be application/json"
	}
	return 0, ""
}

func (g *requestGuard) hostAllowed(hostport string) bool {
	if g.anyHost {
		return true
	}
	host := strings.ToLower(hostport)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if g.hosts[host] || g.hosts[strings.ToLower(hostport)] {
		return true
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	return net.ParseIP(host) != nil
}

// BearerToken extracts the credentials of an "Authorization: Bearer …"
// header; the scheme name is case-insensitive (RFC 7235 §2.1).
func BearerToken(auth string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(auth), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// TokenMatches compares tok with every accepted token in constant time.
func TokenMatches(tok string, want []string) bool {
	ok := false
	for _, w := range want {
		if subtle.ConstantTimeCompare([]byte(tok), []byte(w)) == 1 {
			ok = true
		}
	}
	return ok
}
