package openai

import (
	"context"
	"errors"
	"fmt"

	"github.com/rcpgo/rcpgo/engine/llm"
)

// ChatConfig configures a ChatClient.
type ChatConfig struct {
	ClientConfig
	Model string // required
	// MaxTokens bounds the completion (default 512).
	MaxTokens int
}

// ChatClient calls an OpenAI-compatible /chat/completions endpoint: an
// llm.Chat.
type ChatClient struct{ cfg ChatConfig }

// Model implements llm.Chat.
func (c *ChatClient) Model() string { return c.cfg.Model }

var _ llm.Chat = (*ChatClient)(nil)

// NewChatClient validates cfg.
func NewChatClient(cfg ChatConfig) (*ChatClient, error) {
	if err := cfg.ClientConfig.defaults(); err != nil {
		return nil, err
	}
	if cfg.Model == "" {
		return nil, errors.New("openai: Model is required")
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = 512
	}
	return &ChatClient{cfg: cfg}, nil
}

type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []llm.Message `json:"messages"`
	Temperature float64       `json:"temperature"`
	MaxTokens   int           `json:"max_tokens,omitempty"`
}

type chatResponse struct {
	Choices []struct {
		Message llm.Message `json:"message"`
	} `json:"choices"`
}

// Complete sends messages at temperature 0 and returns the first choice's
// content.
func (c *ChatClient) Complete(ctx context.Context, messages []llm.Message) (string, error) {
	var resp chatResponse
	req := chatRequest{Model: c.cfg.Model, Messages: messages, Temperature: 0, MaxTokens: c.cfg.MaxTokens}
	if err := c.cfg.postJSON(ctx, "/chat/completions", req, &resp); err != nil {
		return "", err
	}
	if len(resp.Choices) == 0 {
		return "", fmt.Errorf("%w: no choices", errDecode)
	}
	return resp.Choices[0].Message.Content, nil
}
