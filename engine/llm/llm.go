// Package llm is the engine's view of a chat model, whatever serves it:
// the Chat interface and its Message, and the relevance judge that ranks
// passages with one (Reranker). Providers implement Chat —
// engine/embed/openai's ChatClient over HTTP, the MCP face's client model
// through sampling — and the engine's users of a model (query/transform,
// the summary tree, rerank) know nothing else about them.
package llm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
)

// Chat is a chat model.
type Chat interface {
	// Complete returns the model's reply to messages.
	Complete(ctx context.Context, messages []Message) (string, error)
	// Model names the model (for identities).
	Model() string
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Nonce is a fresh random tag for the delimiters that mark text sent to a
// model as data (<query-NONCE>…</query-NONCE>): text cannot close a tag it
// cannot guess (§15.2).
func Nonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
