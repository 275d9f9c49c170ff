package fedtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// FakeEngine serves a scripted RCP engine over HTTP on loopback until the
// test ends and returns its URL (…/rcp; it answers on every path): answer
// writes the JSON answer to each request, whose id and method are decoded
// from body. For engines that misbehave on purpose (hostile answers, a
// forged trust level), where the toy engines above are too well behaved.
func FakeEngine(t testing.TB, answer func(w http.ResponseWriter, id json.RawMessage, method string, body []byte)) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "application/json")
		answer(w, req.ID, req.Method, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/rcp"
}
