// Package console serves the rcpd web console: one page and its script and
// style sheet, embedded in the binary, that talk RCP over HTTP to the
// endpoint they are served next to. The page needs no build step and loads
// nothing from elsewhere (no CDN, no web fonts); every retrieval it shows
// goes through the ordinary RCP endpoint with the caller's bearer token.
//
// Besides the page, the console serves three small JSON endpoints under
// /console/api/ for what a browser cannot do on its own: extracting text
// from uploaded files (package internal/ingest), running an evaluation on a
// dataset directory of the server (package eval), and drawing an eval
// report's chart. They are guarded like the RCP endpoint (the same tokens,
// read with the same parser: extract needs the write scope, the others
// read) and refuse cross-site requests.
package console

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/rcpgo/rcpgo/internal/auth"
	"github.com/rcpgo/rcpgo/internal/ingest"
	"github.com/rcpgo/rcpgo/rcp"
)

//go:embed assets
var assets embed.FS

// Options configure the console. Server is required.
type Options struct {
	// Server is the RCP server behind the endpoint; evaluations connect to
	// it in-process (the caller's credentials were checked by the API guard).
	Server *rcp.Server
	// Base is the RCP endpoint's path prefix (default "/rcp").
	Base string
	// Tokens are the RCP endpoint's tokens; each console API needs a scope
	// (extract: write; datasets, eval, chart: read). Nil or empty allows
	// all (an endpoint without auth). The page and its assets are public:
	// they hold no data.
	Tokens *auth.Set
	// Datasets is a directory whose subdirectories are BEIR datasets the
	// Evaluate tab may run; empty disables running evaluations (a stored
	// report can still be shown).
	Datasets string
	// Title is the page title (default "rcpd console").
	Title string
	// Version is shown in the page footer.
	Version string
	// AllowedHosts are host names accepted in the Host header of API
	// requests besides IP literals and localhost ("*": any); a console
	// reached under a DNS name must list it.
	AllowedHosts []string
	// MaxUploadBytes caps one uploaded file (default 32 MiB).
	MaxUploadBytes int64
	// Extract turns an upload into documents (default: ingest.ReadUpload
	// in this process, bounded by ExtractTimeout; rcpd runs it in a child
	// process, ingest.Isolated).
	Extract func(ctx context.Context, name string, b []byte) ([]rcp.Document, error)
	// ExtractTimeout bounds one extraction (default 10 s).
	ExtractTimeout time.Duration
	// MaxExtractions caps the extractions running at once (default 2):
	// each may be a child process of up to 512 MiB and a core for its
	// timeout. An upload beyond it waits up to ExtractWait for a slot, its
	// body unread, then gets 503 with Retry-After.
	MaxExtractions int
	// Logger receives diagnostics (default slog.Default()).
	Logger *slog.Logger
}

// Handler serves the console. Mount it at "/" next to the RCP endpoint.
type Handler struct {
	opts  Options
	page  *template.Template
	files fs.FS
	etags map[string]string // asset name -> content hash
	mux   *http.ServeMux
	cop   *http.CrossOriginProtection
	slots chan struct{} // one per running extraction
}

// New returns the console handler.
func New(opts Options) *Handler {
	if opts.Base == "" {
		opts.Base = "/rcp"
	}
	opts.Base = "/" + strings.Trim(opts.Base, "/")
	if opts.Title == "" {
		opts.Title = "rcpd console"
	}
	if opts.MaxUploadBytes <= 0 {
		opts.MaxUploadBytes = 32 << 20
	}
	if opts.Extract == nil {
		opts.Extract = ingest.ReadUpload
	}
	if opts.ExtractTimeout <= 0 {
		opts.ExtractTimeout = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxExtractions <= 0 {
		opts.MaxExtractions = 2
	}
	files, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	h := &Handler{
		opts:  opts,
		page:  template.Must(template.ParseFS(files, "index.html.tmpl")),
		files: files,
		etags: map[string]string{},
		cop:   http.NewCrossOriginProtection(),
		slots: make(chan struct{}, opts.MaxExtractions),
	}
	for _, name := range []string{"console.js", "console.css"} {
		b, err := fs.ReadFile(files, name)
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(b)
		h.etags[name] = hex.EncodeToString(sum[:8])
	}
	h.mux = http.NewServeMux()
	h.mux.HandleFunc("GET /{$}", h.servePage)
	h.mux.HandleFunc("GET /console/assets/{name}", h.serveAsset)
	h.mux.HandleFunc("POST /console/api/extract", h.guard(auth.Write, h.serveExtract))
	h.mux.HandleFunc("GET /console/api/datasets", h.guard(auth.Read, h.serveDatasets))
	h.mux.HandleFunc("POST /console/api/eval", h.guard(auth.Read, h.serveEval))
	h.mux.HandleFunc("POST /console/api/chart", h.guard(auth.Read, h.serveChart))
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.mux.ServeHTTP(w, r)
}

// csp allows the page only its own script, style and API (eval charts are
// SVG the script draws).
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"

type pageData struct {
	Title, Base, Version, JS, CSS string
	Eval                          bool
}

func (h *Handler) servePage(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp)
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Set("Cache-Control", "no-cache")
	d := pageData{
		Title: h.opts.Title, Base: h.opts.Base, Version: h.opts.Version,
		JS:   "/console/assets/console.js?v=" + h.etags["console.js"],
		CSS:  "/console/assets/console.css?v=" + h.etags["console.css"],
		Eval: h.opts.Datasets != "",
	}
	if err := h.page.Execute(w, d); err != nil {
		h.opts.Logger.Warn("console: rendering the page", "err", err)
	}
}

func (h *Handler) serveAsset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	tag, ok := h.etags[name]
	if !ok {
		http.NotFound(w, r)
		return
	}
	b, err := fs.ReadFile(h.files, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	ctype := "text/css; charset=utf-8"
	if path.Ext(name) == ".js" {
		ctype = "text/javascript; charset=utf-8"
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("ETag", `"`+tag+`"`)
	w.Header().Set("Cache-Control", "no-cache")
	if r.Header.Get("If-None-Match") == `"`+tag+`"` {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	_, _ = w.Write(b)
}

// guard applies the console API's request checks: a known host name,
// same-origin only (net/http's CrossOriginProtection), a token holding
// scope, and no simple (form-postable) POST bodies.
func (h *Handler) guard(scope auth.Scope, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !h.hostAllowed(r.Host) {
			apiError(w, http.StatusForbidden, "host "+r.Host+" is not allowed (DNS rebinding protection)")
			return
		}
		// The console API is for the page served beside it: no origin is
		// trusted. Safe methods pass (a cross-site page cannot read them).
		if err := h.cop.Check(r); err != nil {
			apiError(w, http.StatusForbidden, "cross-origin request refused")
			return
		}
		if status, ok := h.opts.Tokens.Allows(r, scope); !ok {
			auth.Refuse(w, status, scope, "rcp")
			return
		}
		if r.Method == http.MethodPost && simpleContentType(r.Header.Get("Content-Type")) {
			// A form or a no-cors fetch from another site can send these
			// without a preflight; the console never does.
			apiError(w, http.StatusUnsupportedMediaType, "want Content-Type application/json or application/octet-stream")
			return
		}
		next(w, r)
	}
}

// hostAllowed refuses Host names a DNS-rebinding page would use to reach
// a loopback server under its own domain: IP literals, localhost and the
// configured AllowedHosts pass.
func (h *Handler) hostAllowed(hostport string) bool {
	host := strings.ToLower(hostport)
	if hh, _, err := net.SplitHostPort(host); err == nil {
		host = hh
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || net.ParseIP(host) != nil {
		return true
	}
	for _, a := range h.opts.AllowedHosts {
		if a == "*" || strings.EqualFold(a, host) || strings.EqualFold(a, hostport) {
			return true
		}
	}
	return false
}

// simpleContentType reports whether ct is one of the CORS-safelisted types
// an HTML form can post.
func simpleContentType(ct string) bool {
	mt, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(ct)), ";")
	switch strings.TrimSpace(mt) {
	case "", "application/x-www-form-urlencoded", "multipart/form-data", "text/plain":
		return true
	}
	return false
}
