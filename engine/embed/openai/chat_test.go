package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/rcpgo/rcpgo/engine/llm"
)

func TestChatErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"choices":[]}`)
	}))
	defer srv.Close()
	chat, _ := NewChatClient(ChatConfig{ClientConfig: fastRetry(srv.URL), Model: "m"})
	if _, err := chat.Complete(context.Background(), []llm.Message{{Role: "user", Content: "hi"}}); !errors.Is(err, errDecode) {
		t.Errorf("empty choices: %v", err)
	}
	if _, err := NewChatClient(ChatConfig{ClientConfig: ClientConfig{BaseURL: "http://x"}}); err == nil {
		t.Error("missing model accepted")
	}
}
