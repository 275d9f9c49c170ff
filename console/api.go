package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/rcpgo/rcpgo/eval"
	"github.com/rcpgo/rcpgo/internal/ingest"
	"github.com/rcpgo/rcpgo/rcp"
)

// apiError answers a console API request with {"error": msg}.
func apiError(w http.ResponseWriter, status int, msg string) {
	writeAPI(w, status, map[string]string{"error": msg})
}

func writeAPI(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"cannot encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// extractResult is the answer of /console/api/extract.
type extractResult struct {
	Documents []rcp.Document `json:"documents"`
}

// serveExtract turns one uploaded file (the raw body, its name in ?name=)
// into RCP documents with internal/ingest, the code `rcp index add` uses.
// It stores nothing: the page indexes the documents with index/add, so
// writes take the RCP path (auth, read-only mode, limits) like any other.
func (h *Handler) serveExtract(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	if name == "" {
		apiError(w, http.StatusBadRequest, "the file name is required (?name=)")
		return
	}
	if !ingest.Supported(name) {
		apiError(w, http.StatusUnprocessableEntity, fmt.Sprintf("%s: unsupported file type (want txt, md, html, pdf or jsonl)", name))
		return
	}
	if !h.takeSlot(r.Context()) {
		w.Header().Set("Retry-After", "2")
		w.Header().Set("Connection", "close") // the upload stays unread
		apiError(w, http.StatusServiceUnavailable, fmt.Sprintf("%d extractions are running; retry in a moment", cap(h.slots)))
		return
	}
	defer func() { <-h.slots }()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxUploadBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			apiError(w, http.StatusRequestEntityTooLarge, "file exceeds "+strconv.FormatInt(h.opts.MaxUploadBytes, 10)+" bytes")
			return
		}
		apiError(w, http.StatusBadRequest, "cannot read the upload: "+err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.opts.ExtractTimeout)
	defer cancel()
	docs, err := h.opts.Extract(ctx, name, body)
	if err != nil {
		apiError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	if docs == nil {
		docs = []rcp.Document{}
	}
	writeAPI(w, http.StatusOK, extractResult{Documents: docs})
}

// extractWait is how long an upload waits for an extraction slot.
var extractWait = 5 * time.Second

// takeSlot waits up to extractWait for one of the MaxExtractions slots
// (uncapped, 8 uploads of a 117 KB PDF at once ran 8 extractor children,
// 1.24 GB together, each killed at its timeout with 2 cores shared).
func (h *Handler) takeSlot(ctx context.Context) bool {
	t := time.NewTimer(extractWait)
	defer t.Stop()
	select {
	case h.slots <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// serveChart answers what the chart of a stored eval report (the JSON
// `rcp eval -json` writes) shows, as eval.Chart; the page draws it.
func (h *Handler) serveChart(w http.ResponseWriter, r *http.Request) {
	var rep eval.Report
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, h.opts.MaxUploadBytes))
	if err := dec.Decode(&rep); err != nil {
		apiError(w, http.StatusBadRequest, "not an eval report: "+err.Error())
		return
	}
	if len(rep.Modes) == 0 {
		apiError(w, http.StatusUnprocessableEntity, "the report has no modes")
		return
	}
	for i, m := range rep.Modes {
		if m == nil || m.Scores == nil {
			apiError(w, http.StatusUnprocessableEntity, fmt.Sprintf("modes[%d] has no scores", i))
			return
		}
	}
	c, err := rep.Chart()
	if err != nil {
		apiError(w, http.StatusUnprocessableEntity, err.Error())
		return
	}
	writeAPI(w, http.StatusOK, c)
}
