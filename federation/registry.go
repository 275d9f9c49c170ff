// Package federation implements spec §16 on top of the rcp SDK: the rcp.json
// engine registry, the Selector (pick one engine), the Federation facade
// (query every engine and fuse) and the gateway Handler that makes a
// federation an RCP server of its own.
//
// Engines are reached through Engine handles: dialled lazily, dropped when
// their transport dies (§13.1) and redialled on the next call; the last
// handshake is remembered so capabilities survive an engine's death.
//
// Federation.Retrieve fans out concurrently to the engines advertising
// retrieve (and the requested mode), each under a client-side deadline no
// larger than the caller's remaining budget minus a fusion reserve; that
// budget travels as _meta.deadlineMs, always strictly smaller than the one
// received. The hop budget travels as _meta.federation {depth, path}
// (originating depth 3); an engine whose advertised identity (initialize
// _meta.federation.id, which gateways set) is already in the path is skipped
// and the cycle noted in usage.notes. A call succeeds while one engine
// answered; failures are listed in usage.notes and _meta.degraded
// ([{engine, code, message}]), a failing required engine fails the call
// with its own code, and when nothing answered the error is -32010. Hits are
// fused with package rcp/fusion (RRF by default; convex only when every
// engine advertises scoreFloor), deduplicated by stringified id (or
// citation.uri / content hash) and tagged with meta.engine, engineRank and
// engineScore. _meta.engines reports each engine's status.
//
// Gateway is an rcp.Handler over a Federation; Gateway.Serve exposes it over
// HTTP or stdio (the "rcpd gateway" command lives in cmd/rcpd).
package federation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/rcpgo/rcpgo/rcp"
)

// Transports of a registry entry.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
)

// Registry is an rcp.json document (§16.1).
type Registry struct {
	Engines []EngineSpec `json:"engines"`
}

// EngineSpec is one registry entry. Header values may reference environment
// variables as ${NAME} so secrets stay out of the file; Env does the same
// for a stdio engine's environment.
type EngineSpec struct {
	ID        string            `json:"id"`
	Transport string            `json:"transport,omitempty"` // default: http when url is set, else stdio
	Command   []string          `json:"command,omitempty"`
	URL       string            `json:"url,omitempty"`
	Priority  int               `json:"priority,omitempty"`
	Weight    *float64          `json:"weight,omitempty"` // default 1.0
	Required  bool              `json:"required,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Dir       string            `json:"dir,omitempty"`
	// Trust is the highest trust.level the gateway lets this engine's hits
	// claim: "trusted", "community" or "untrusted" (the default): an
	// engine is not believed about its own provenance (§15.1).
	Trust string `json:"trust,omitempty"`
}

// EffectiveWeight returns the fusion weight (default 1.0).
func (s *EngineSpec) EffectiveWeight() float64 {
	if s.Weight == nil {
		return 1
	}
	return *s.Weight
}

// EffectiveTransport returns the transport, inferring it when absent.
func (s *EngineSpec) EffectiveTransport() string {
	if s.Transport != "" {
		return s.Transport
	}
	if s.URL != "" {
		return TransportHTTP
	}
	return TransportStdio
}

// RegistryError locates a problem in a registry document.
type RegistryError struct {
	Path   string // e.g. "engines[1].url"
	Detail string
}

func (e *RegistryError) Error() string {
	if e.Path == "" {
		return "registry: " + e.Detail
	}
	return "registry: " + e.Path + ": " + e.Detail
}

// LoadRegistry reads and validates an rcp.json file.
func LoadRegistry(path string) (*Registry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	reg, err := ParseRegistry(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return reg, nil
}

// ParseRegistry decodes and validates a registry document. Unknown keys
// (such as "$schema") are ignored, per §4.6.
func ParseRegistry(b []byte) (*Registry, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	var reg Registry
	if err := dec.Decode(&reg); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, &RegistryError{Path: te.Field, Detail: fmt.Sprintf("expected %s, got JSON %s", te.Type, te.Value)}
		}
		return nil, &RegistryError{Detail: "not valid JSON: " + err.Error()}
	}
	if err := reg.Validate(); err != nil {
		return nil, err
	}
	return &reg, nil
}

var engineIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]*$`)

// Validate checks every entry and reports the first problem with its path.
func (r *Registry) Validate() error {
	if r.Engines == nil {
		return &RegistryError{Path: "engines", Detail: "is required"}
	}
	seen := map[string]bool{}
	for i := range r.Engines {
		e := &r.Engines[i]
		at := func(field string) string { return fmt.Sprintf("engines[%d].%s", i, field) }
		switch {
		case e.ID == "":
			return &RegistryError{Path: at("id"), Detail: "is required"}
		case !engineIDPattern.MatchString(e.ID):
			return &RegistryError{Path: at("id"), Detail: fmt.Sprintf("%q: use letters, digits and . _ : -", e.ID)}
		case seen[e.ID]:
			return &RegistryError{Path: at("id"), Detail: fmt.Sprintf("duplicate id %q", e.ID)}
		}
		seen[e.ID] = true
		if e.Weight != nil && *e.Weight < 0 {
			return &RegistryError{Path: at("weight"), Detail: "must be ≥ 0"}
		}
		if trustRank(e.Trust) < 0 {
			return &RegistryError{Path: at("trust"), Detail: fmt.Sprintf("%q: want trusted, community or untrusted", e.Trust)}
		}
		switch e.EffectiveTransport() {
		case TransportStdio:
			if len(e.Command) == 0 || e.Command[0] == "" {
				return &RegistryError{Path: at("command"), Detail: "a stdio engine needs a non-empty command array"}
			}
			if e.URL != "" {
				return &RegistryError{Path: at("url"), Detail: "a stdio engine takes command, not url"}
			}
		case TransportHTTP:
			u, err := url.Parse(e.URL)
			if e.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return &RegistryError{Path: at("url"), Detail: fmt.Sprintf("%q is not an http(s) URL", e.URL)}
			}
			if len(e.Command) > 0 {
				return &RegistryError{Path: at("command"), Detail: "an http engine takes url, not command"}
			}
		default:
			return &RegistryError{Path: at("transport"), Detail: fmt.Sprintf("%q: want stdio or http", e.Transport)}
		}
		for k, v := range e.Headers {
			if _, err := expandEnv(v); err != nil {
				return &RegistryError{Path: at("headers." + k), Detail: err.Error()}
			}
		}
	}
	return nil
}

// Engine returns the entry with id.
func (r *Registry) Engine(id string) (*EngineSpec, bool) {
	for i := range r.Engines {
		if r.Engines[i].ID == id {
			return &r.Engines[i], true
		}
	}
	return nil, false
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandEnv replaces ${NAME} with the variable's value; an unset variable is
// an error, so a missing secret fails at connect time with its name.
func expandEnv(s string) (string, error) {
	var missing []string
	out := envRef.ReplaceAllStringFunc(s, func(m string) string {
		name := envRef.FindStringSubmatch(m)[1]
		v, ok := os.LookupEnv(name)
		if !ok {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("environment variable %s is not set", strings.Join(missing, ", "))
	}
	return out, nil
}

// Connect opens a client to the engine. opts may be nil; the spec's headers,
// environment and working directory are added to a copy of it.
func (s *EngineSpec) Connect(ctx context.Context, opts *rcp.ClientOptions) (*rcp.Client, error) {
	var o rcp.ClientOptions
	if opts != nil {
		o = *opts
	}
	switch s.EffectiveTransport() {
	case TransportHTTP:
		if len(s.Headers) > 0 {
			h := http.Header{}
			for k, vs := range o.Header {
				h[k] = append([]string(nil), vs...)
			}
			for k, v := range s.Headers {
				ev, err := expandEnv(v)
				if err != nil {
					return nil, fmt.Errorf("engine %s: header %s: %w", s.ID, k, err)
				}
				h.Set(k, ev)
			}
			o.Header = h
		}
		c, err := rcp.ConnectHTTP(ctx, s.URL, &o)
		if err != nil {
			return nil, fmt.Errorf("engine %s: %w", s.ID, err)
		}
		return c, nil
	default:
		o.Env = append([]string(nil), o.Env...)
		for _, k := range slices.Sorted(maps.Keys(s.Env)) {
			ev, err := expandEnv(s.Env[k])
			if err != nil {
				return nil, fmt.Errorf("engine %s: env %s: %w", s.ID, k, err)
			}
			o.Env = append(o.Env, k+"="+ev)
		}
		if s.Dir != "" {
			o.Dir = s.Dir
		}
		c, err := rcp.ConnectStdio(ctx, s.Command, &o)
		if err != nil {
			return nil, fmt.Errorf("engine %s: %w", s.ID, err)
		}
		return c, nil
	}
}
