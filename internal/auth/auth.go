// Package auth holds rcpd's least-privilege bearer tokens: several named
// tokens, each granted some of the scopes read, write and admin, read from
// a token file; the one bearer parser every route uses (rcp.BearerToken);
// and the method → scope table applied to RCP calls (Guard), console API
// requests and MCP tool calls.
//
// # Token file
//
// One token per line, fields separated by white space; blank lines and
// lines starting with # are ignored:
//
//	# name      scopes             secret
//	reader      read               sha256:5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8
//	ingest      read,write         sha256:…
//	ops         read,write,admin   sha256:…
//
// The secret is the SHA-256 of the token in hex after "sha256:" (rcpd
// token new prints a fresh token and its line), or the token itself in
// plain text. Tokens are compared by their hash in constant time. A file
// holding a single word and nothing else is the legacy one-token file: that
// token with every scope.
//
// Scopes are independent: a token may write without reading. Every valid
// token may initialize, ping and read info.
package auth

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/rcpgo/rcpgo/rcp"
)

// Scope is a permission a token may hold.
type Scope string

// The scopes.
const (
	// Read: retrieve, rerank, embed, graph, memory/recall, query/transform,
	// catalog/list, the x-rcpgo document methods; the console's evaluate
	// and chart; MCP search and resources.
	Read Scope = "read"
	// Write: index/add, index/delete, feedback, memory/build; the
	// console's extract (it is the first step of an upload); MCP tools
	// that change the index.
	Write Scope = "write"
	// Admin: /metrics and the counts of /healthz, listing and lifting
	// feedback quarantines.
	Admin Scope = "admin"
	// none is what initialize, info and ping need: any valid token.
	none Scope = ""
)

// Scopes lists the scopes in the order they are shown.
var Scopes = []Scope{Read, Write, Admin}

// Token is one named token of a Set.
type Token struct {
	Name   string
	Scopes []Scope
	hash   [sha256.Size]byte
}

// Has reports whether the token holds scope s.
func (t *Token) Has(s Scope) bool { return s == none || slices.Contains(t.Scopes, s) }

// Set is a set of tokens. The nil or empty Set authenticates nobody: a
// face without tokens serves everyone with every scope (Enabled is false).
type Set struct {
	tokens []Token
}

// Enabled reports whether the set holds any token.
func (s *Set) Enabled() bool { return s != nil && len(s.tokens) > 0 }

// Names lists the token names.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	out := make([]string, len(s.tokens))
	for i, t := range s.tokens {
		out[i] = t.Name
	}
	return out
}

// ErrFormat reports a malformed token file line.
var ErrFormat = errors.New("auth: malformed token file")

// Load reads a token file.
func Load(path string) (*Set, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	s, err := Parse(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// maxFileBytes bounds a token file. A longer file is refused, not cut:
// cut, its last line's plain-text secret became a prefix of itself (a
// 2-character admin token from a 15-character one).
const maxFileBytes = 4 << 20

// Parse reads a token file's text. A leading byte order mark is skipped.
// Two tokens may not share a secret (the token a request names would
// depend on the order of the lines), nor a name.
func Parse(r io.Reader) (*Set, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	if len(b) > maxFileBytes {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrFormat, maxFileBytes)
	}
	b = bytes.TrimPrefix(b, []byte("\uFEFF"))
	if f := strings.Fields(string(b)); len(f) == 1 && !strings.HasPrefix(f[0], "#") {
		return legacy(f[0]) // the legacy one-token file
	}
	s := &Set{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		t, err := parseLine(text)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrFormat, line, err)
		}
		if err := s.add(t); err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrFormat, line, err)
		}
	}
	if len(s.tokens) == 0 {
		return nil, fmt.Errorf("%w: no token", ErrFormat)
	}
	return s, nil
}

// add adds t unless its name or secret is taken.
func (s *Set) add(t Token) error {
	for _, o := range s.tokens {
		switch {
		case o.Name == t.Name:
			return fmt.Errorf("token name %q is used twice", t.Name)
		case o.hash == t.hash:
			return fmt.Errorf("tokens %q and %q have the same secret", o.Name, t.Name)
		}
	}
	s.tokens = append(s.tokens, t)
	return nil
}

func parseLine(text string) (Token, error) {
	f := strings.Fields(text)
	if len(f) != 3 {
		return Token{}, errors.New("want NAME SCOPES SECRET")
	}
	scopes, err := ParseScopes(f[1])
	if err != nil {
		return Token{}, err
	}
	t := Token{Name: f[0], Scopes: scopes}
	t.hash, err = secretHash(f[2])
	return t, err
}

// secretHash is the hash of a secret field: "sha256:" and 64 hex digits
// is the hash itself, anything else the token in plain text.
func secretHash(field string) ([sha256.Size]byte, error) {
	var out [sha256.Size]byte
	hx, ok := strings.CutPrefix(field, "sha256:")
	if !ok {
		return sha256.Sum256([]byte(field)), nil
	}
	h, err := hex.DecodeString(hx)
	if err != nil || len(h) != sha256.Size {
		return out, errors.New("sha256: want 64 hex digits")
	}
	copy(out[:], h)
	return out, nil
}

// legacy is the one-token file holding word: that token with every scope.
// A word of the hashed form is a hash, as on a token line: read as plain
// text, whoever saw the hash (which is what may be shown) held every scope.
func legacy(word string) (*Set, error) {
	h, err := secretHash(word)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	return &Set{tokens: []Token{{Name: "token", Scopes: slices.Clone(Scopes), hash: h}}}, nil
}

// Static is a Set of the given secrets (legacy --token, bearerTokens),
// each named name (name-2, name-3… after the first) with every scope.
func Static(name string, secrets ...string) *Set {
	s := &Set{}
	for i, sec := range secrets {
		n := name
		if i > 0 {
			n = fmt.Sprintf("%s-%d", name, i+1)
		}
		s.tokens = append(s.tokens, Token{Name: n, Scopes: slices.Clone(Scopes), hash: sha256.Sum256([]byte(sec))})
	}
	return s
}

// Merge returns a Set holding the tokens of both (nil when both are empty).
func Merge(a, b *Set) (*Set, error) {
	out := &Set{}
	for _, s := range []*Set{a, b} {
		if s == nil {
			continue
		}
		for _, t := range s.tokens {
			if err := out.add(t); err != nil {
				return nil, fmt.Errorf("auth: %w", err)
			}
		}
	}
	if len(out.tokens) == 0 {
		return nil, nil
	}
	return out, nil
}

// Lookup returns the token whose secret is secret. Every token is compared
// (by hash, in constant time) whatever matches.
func (s *Set) Lookup(secret string) (*Token, bool) {
	if !s.Enabled() {
		return nil, false
	}
	h := sha256.Sum256([]byte(secret))
	found := -1
	for i := range s.tokens {
		if subtle.ConstantTimeCompare(h[:], s.tokens[i].hash[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return nil, false
	}
	return &s.tokens[found], true
}

// FromRequest returns the token of r's "Authorization: Bearer …" header,
// read by rcp.BearerToken: the one parser of every route.
func (s *Set) FromRequest(r *http.Request) (*Token, bool) {
	secret, ok := rcp.BearerToken(r.Header.Get("Authorization"))
	if !ok {
		return nil, false
	}
	return s.Lookup(secret)
}

// ByName returns the token named name.
func (s *Set) ByName(name string) (*Token, bool) {
	if s == nil {
		return nil, false
	}
	for i := range s.tokens {
		if s.tokens[i].Name == name {
			return &s.tokens[i], true
		}
	}
	return nil, false
}

// Authenticate is an rcp.HTTPOptions.Authenticate: the request's token
// names the principal; a request without a valid token is refused. With
// no tokens every request passes anonymously.
func (s *Set) Authenticate(r *http.Request) (string, bool) {
	if !s.Enabled() {
		return "", true
	}
	t, ok := s.FromRequest(r)
	if !ok {
		return "", false
	}
	return t.Name, true
}

// Allows reports whether the HTTP request r may do what scope needs: with
// no tokens, always; else r must carry a token holding scope. status is
// 401 without a valid token, 403 when the token lacks the scope.
func (s *Set) Allows(r *http.Request, scope Scope) (status int, ok bool) {
	if !s.Enabled() {
		return http.StatusOK, true
	}
	t, found := s.FromRequest(r)
	switch {
	case !found:
		return http.StatusUnauthorized, false
	case !t.Has(scope):
		return http.StatusForbidden, false
	}
	return http.StatusOK, true
}

// Require serves h to requests allowed scope (Allows); others get 401 or
// 403 with a JSON body naming the scope.
func (s *Set) Require(scope Scope, realm string, h http.Handler) http.Handler {
	if !s.Enabled() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status, ok := s.Allows(r, scope); !ok {
			Refuse(w, status, scope, realm)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Refuse answers an HTTP request refused with status (401: no valid token;
// 403: a token without scope).
func Refuse(w http.ResponseWriter, status int, scope Scope, realm string) {
	body := map[string]string{"error": "unauthorized"}
	if status == http.StatusForbidden {
		body = map[string]string{"error": "this token lacks the " + string(scope) + " scope", "scope": string(scope)}
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm=%q, error="insufficient_scope", scope=%q`, realm, scope))
	} else {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm=%q`, realm))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// NewSecret returns a fresh random token (32 bytes, base64url).
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Hash is a token's secret field in hashed form.
func Hash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return "sha256:" + hex.EncodeToString(h[:])
}

// Line is the token file line of a token.
func Line(name string, scopes []Scope, secret string) string {
	ss := make([]string, len(scopes))
	for i, s := range scopes {
		ss[i] = string(s)
	}
	return fmt.Sprintf("%s %s %s", name, strings.Join(ss, ","), Hash(secret))
}

// ParseScopes reads a comma-separated list of scopes ("read,write").
func ParseScopes(list string) ([]Scope, error) {
	var out []Scope
	for sc := range strings.SplitSeq(list, ",") {
		s := Scope(strings.TrimSpace(sc))
		if !slices.Contains(Scopes, s) {
			return nil, fmt.Errorf("unknown scope %q (read, write, admin)", s)
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// Configure returns a face's tokens: those of the token file (when named)
// and the legacy single tokens (--token, bearerTokens: every scope, named
// token, token-2…); nil when there are none.
func Configure(file string, legacy ...string) (*Set, error) {
	var fromFile *Set
	if file != "" {
		var err error
		if fromFile, err = Load(file); err != nil {
			return nil, err
		}
	}
	legacy = slices.DeleteFunc(slices.Clone(legacy), func(s string) bool { return strings.TrimSpace(s) == "" })
	var static *Set
	if len(legacy) > 0 {
		static = Static("token", legacy...)
	}
	return Merge(fromFile, static)
}
