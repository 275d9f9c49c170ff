package mcpbridge

//lint:file-ignore SA1019 MCP logging and sampling are deprecated by SEP-2577 from protocol version 2026-07-28 on, but clients of the earlier versions this face serves still use them; the face keeps them for the deprecation window.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rcpgo/rcpgo/engine/llm"
	"github.com/rcpgo/rcpgo/engine/transform"
	"github.com/rcpgo/rcpgo/rcp"
)

// Sampling as an LLM: with Options.Sampling, search offers three steps that
// run on the MCP client's own model (sampling/createMessage) instead of a
// model configured in the engine:
//
//   - hyde: the model writes a short hypothetical passage answering the
//     query, and the search uses query + passage (HyDE);
//   - modelRewrite: the model rewrites the query into one clear search
//     query, and the search uses it;
//   - modelRerank: the model grades the top candidates 0–10 and they are
//     reordered by its grades.
//
// The prompts are the engine's own (engine/transform for hyde and rewrite,
// engine/llm's judge for rerank): the instructions are the
// system prompt, and the query and passages travel as data inside
// delimiters with a fresh random nonce, never as instructions (§15.2).
// What the model wrote is returned marked as generated, never as evidence.
// Off by default: it spends the user's model budget, and the client must
// declare the sampling capability.

// clientModel is the MCP client's model, reached through
// sampling/createMessage; it serves as a chat model for engine/transform and
// llm.Reranker.
type clientModel struct {
	ss *mcp.ServerSession
}

// samplingMaxTokens bounds what the client's model writes per request.
const samplingMaxTokens = 512

// maxHypothetical bounds the hyde passage searched with: asked for 120
// words, a client's model may still write more than an engine accepts.
const maxHypothetical = 4096

// modelRerankMax bounds the candidates graded by modelRerank (two sampling
// requests of ten passages).
const modelRerankMax = 20

var _ llm.Chat = clientModel{}

// Model implements llm.Chat.
func (clientModel) Model() string { return "mcp-client" }

// Complete implements llm.Chat: system messages become the system
// prompt, the others the conversation.
func (m clientModel) Complete(ctx context.Context, messages []llm.Message) (string, error) {
	var system []string
	var conv []*mcp.SamplingMessage
	for _, msg := range messages {
		if msg.Role == "system" {
			system = append(system, msg.Content)
			continue
		}
		conv = append(conv, &mcp.SamplingMessage{Role: mcp.Role(msg.Role), Content: &mcp.TextContent{Text: msg.Content}})
	}
	res, err := m.ss.CreateMessage(ctx, &mcp.CreateMessageParams{
		SystemPrompt:     strings.Join(system, "\n\n"),
		Messages:         conv,
		MaxTokens:        samplingMaxTokens,
		IncludeContext:   "none",
		ModelPreferences: &mcp.ModelPreferences{SpeedPriority: 0.8, CostPriority: 0.8, IntelligencePriority: 0.3},
	})
	if err != nil {
		return "", fmt.Errorf("sampling/createMessage: %w", err)
	}
	tc, ok := res.Content.(*mcp.TextContent)
	if !ok || strings.TrimSpace(tc.Text) == "" {
		return "", fmt.Errorf("sampling/createMessage: the client's model returned no text")
	}
	return tc.Text, nil
}

// modelSteps are the sampling steps a search asked for.
type modelSteps struct {
	hyde, rewrite, rerank bool
}

func (s modelSteps) any() bool { return s.hyde || s.rewrite || s.rerank }

// firstOption names the first step asked for (for errors).
func (s modelSteps) firstOption() string {
	switch {
	case s.hyde:
		return "hyde"
	case s.rewrite:
		return "modelRewrite"
	}
	return "modelRerank"
}

// clientModelFor returns the model of the client behind req, or a -32602
// naming option when the client does not declare sampling.
func clientModelFor(req *mcp.CallToolRequest, option string) (clientModel, error) {
	if req == nil || req.Session == nil {
		return clientModel{}, rcp.InvalidParams(option, "%s needs a client that declares the sampling capability", option)
	}
	ip := req.Session.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Sampling == nil {
		return clientModel{}, rcp.InvalidParams(option, "%s needs a client that declares the sampling capability", option)
	}
	return clientModel{ss: req.Session}, nil
}

// prepareQuery runs the query-side steps (rewrite, then hyde on the
// rewritten query) and returns the text to search with.
func prepareQuery(ctx context.Context, m clientModel, steps modelSteps, out *SearchOutput) (string, error) {
	q := out.Query
	if steps.rewrite {
		res, err := transform.WithModel(ctx, m, transform.Request{Query: q, Method: transform.Rewrite})
		if err != nil {
			return "", fmt.Errorf("modelRewrite: %w", err)
		}
		q = res.Queries[0]
		out.RewrittenQuery = q
	}
	if steps.hyde {
		res, err := transform.WithModel(ctx, m, transform.Request{Query: q, Method: transform.HyDE})
		if err != nil {
			return "", fmt.Errorf("hyde: %w", err)
		}
		out.Hypothetical = res.Hypothetical
		if len(out.Hypothetical) > maxHypothetical {
			out.Hypothetical = strings.ToValidUTF8(out.Hypothetical[:maxHypothetical], "")
		}
		return q + "\n\n" + out.Hypothetical, nil
	}
	return q, nil
}

// rerankByModel grades hits with the client's model and orders them by
// grade (engine order among equal grades), keeping the first k.
func rerankByModel(ctx context.Context, m clientModel, query string, hits []Hit, k int) ([]Hit, error) {
	passages := make([]string, len(hits))
	for i, h := range hits {
		passages[i] = h.Text
		if h.Title != "" {
			passages[i] = h.Title + "\n" + h.Text
		}
	}
	grades, err := llm.NewReranker(m).Score(ctx, query, passages)
	if err != nil {
		return nil, fmt.Errorf("modelRerank: %w", err)
	}
	for i := range hits {
		g := float64(grades[i])
		hits[i].Grade = &g
	}
	slices.SortStableFunc(hits, func(a, b Hit) int { return cmp.Compare(*b.Grade, *a.Grade) })
	hits = hits[:min(k, len(hits))]
	for i := range hits {
		hits[i].Rank = i + 1
	}
	return hits, nil
}

// modelMethods are the transform methods the client's model serves.
var modelMethods = []string{transform.Rewrite, transform.HyDE, transform.MultiQuery, transform.Decompose, transform.StepBack}

// transformByModel runs the transform tool's method on the client's model.
func transformByModel(ctx context.Context, req *mcp.CallToolRequest, method string, in transformIn) (*rcp.TransformResult, error) {
	m, err := clientModelFor(req, "useMyModel")
	if err != nil {
		return nil, err
	}
	n := 0
	if in.N != nil {
		if *in.N > transform.MaxN {
			return nil, rcp.InvalidParams("n", "at most %d queries", transform.MaxN)
		}
		n = *in.N
	}
	if len(in.Query) > transform.MaxQueryBytes {
		return nil, rcp.InvalidParams("query", "the query is %d bytes long; at most %d are accepted", len(in.Query), transform.MaxQueryBytes)
	}
	res, err := transform.WithModel(ctx, m, transform.Request{Query: in.Query, Method: method, N: n})
	if err != nil {
		return nil, err
	}
	return &rcp.TransformResult{Queries: res.Queries, Hypothetical: res.Hypothetical}, nil
}

// samplingNote tells, in the search tool's description, what uses the
// client's model.
func samplingNote(on bool) string {
	if !on {
		return ""
	}
	return " With hyde, modelRewrite or modelRerank it asks YOUR model, through MCP sampling (sampling/createMessage), " +
		"to write a hypothetical answer passage, rewrite the query, or grade the candidates; the query and passages are sent as delimited data."
}
