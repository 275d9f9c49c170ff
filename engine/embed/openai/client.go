// Package openai talks to OpenAI-compatible HTTP APIs (OpenAI, Ollama, vLLM,
// TEI, llama.cpp server): /v1/embeddings for dense embeddings and
// /v1/chat/completions for LLM reranking.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// ClientConfig holds what both the embedder and the chat client need.
type ClientConfig struct {
	// BaseURL is the API root including the version segment, e.g.
	// "http://localhost:11434/v1" or "https://api.openai.com/v1".
	BaseURL string
	// APIKeyEnv names the environment variable that holds the API key
	// (default OPENAI_API_KEY). An unset or empty variable sends no
	// Authorization header (local servers need none).
	APIKeyEnv string
	// MaxRetries bounds retries of 429 and 5xx answers and transport errors
	// (default 4; negative for none).
	MaxRetries int
	// InitialBackoff is the first retry delay, doubled each retry with
	// jitter (default 500ms); MaxBackoff caps it and any Retry-After
	// (default 30s).
	InitialBackoff, MaxBackoff time.Duration
	// Timeout bounds each HTTP attempt (default 60s).
	Timeout time.Duration
	// MaxResponseBytes bounds a response body (default 256 MiB).
	MaxResponseBytes int64
	// HTTPClient defaults to a client with no overall timeout (attempts are
	// bounded by Timeout and the caller's context).
	HTTPClient *http.Client
	Logger     *slog.Logger
}

func (c *ClientConfig) defaults() error {
	if c.BaseURL == "" {
		return errors.New("openai: BaseURL is required")
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.APIKeyEnv == "" {
		c.APIKeyEnv = "OPENAI_API_KEY"
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = 4
	} else if c.MaxRetries < 0 {
		c.MaxRetries = 0
	}
	if c.InitialBackoff <= 0 {
		c.InitialBackoff = 500 * time.Millisecond
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 30 * time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = 60 * time.Second
	}
	if c.MaxResponseBytes <= 0 {
		c.MaxResponseBytes = 256 << 20
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// StatusError is an unsuccessful HTTP answer.
type StatusError struct {
	StatusCode int
	Body       string // at most 1 KiB of the response body
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("openai: HTTP %d: %s", e.StatusCode, e.Body)
}

func retryable(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500
}

// postJSON posts body to BaseURL+path and decodes the JSON answer into out,
// retrying 408/429/5xx and transport errors with exponential backoff, and
// honouring Retry-After.
func (c *ClientConfig) postJSON(ctx context.Context, path string, body, out any) error {
	payload, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("openai: encode request: %w", err)
	}
	url := c.BaseURL + path
	key := os.Getenv(c.APIKeyEnv)
	backoff := c.InitialBackoff
	for attempt := 0; ; attempt++ {
		wait, err := c.attempt(ctx, url, key, payload, out)
		if err == nil {
			return nil
		}
		var se *StatusError
		isStatus := errors.As(err, &se)
		if ctx.Err() != nil || attempt >= c.MaxRetries || (isStatus && !retryable(se.StatusCode)) || errors.Is(err, errDecode) {
			return err
		}
		if wait <= 0 {
			// Full jitter in [backoff/2, backoff].
			wait = backoff/2 + time.Duration(rand.Int64N(int64(backoff/2)+1))
			backoff = min(2*backoff, c.MaxBackoff)
		}
		wait = min(wait, c.MaxBackoff)
		c.Logger.Warn("openai: retrying", "url", url, "attempt", attempt+1, "wait", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("openai: %w (last error: %w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

var errDecode = errors.New("openai: malformed response")

func (c *ClientConfig) attempt(ctx context.Context, url, key string, payload []byte, out any) (time.Duration, error) {
	actx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return 0, fmt.Errorf("openai: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := c.HTTPClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("openai: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.MaxResponseBytes+1))
	if err != nil {
		return 0, fmt.Errorf("openai: read response: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		excerpt := body
		if len(excerpt) > 1024 {
			excerpt = excerpt[:1024]
		}
		return retryAfter(resp.Header.Get("Retry-After")), &StatusError{resp.StatusCode, strings.TrimSpace(string(excerpt))}
	}
	if int64(len(body)) > c.MaxResponseBytes {
		return 0, fmt.Errorf("%w: response larger than %d bytes", errDecode, c.MaxResponseBytes)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return 0, fmt.Errorf("%w: %w", errDecode, err)
	}
	return 0, nil
}

// retryAfter parses a Retry-After header (delay-seconds or HTTP-date).
func retryAfter(h string) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(h, 64); err == nil && secs >= 0 {
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(h); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
