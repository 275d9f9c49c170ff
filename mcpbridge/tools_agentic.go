package mcpbridge

// The agentic-loop additions to the MCP face: the feedback tool (RCP
// feedback, §7.16) and the rewrite / sessionId options of search
// (retrieve.rewrite, §7.7.3).

import (
	"context"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rcpgo/rcpgo/rcp"
)

// ToolFeedback is the feedback tool's name.
const ToolFeedback = "feedback"

// agenticTools are the tools of the agentic loop the engine advertises.
func (b *Bridge) agenticTools(st *state) []toolEntry {
	if st.caps.Feedback == nil {
		return nil
	}
	return []toolEntry{b.feedbackTool(st)}
}

// searchAgenticProps adds rewrite (query-producing transform methods) and
// sessionId (with the session capability) to the search tool's input.
func searchAgenticProps(c *rcp.Capabilities, props obj) {
	if c.Transform != nil {
		methods := slices.DeleteFunc(slices.Clone(c.Transform.Methods), func(m string) bool { return m == "hyde" })
		if len(methods) > 0 {
			props["rewrite"] = enum("Rewrite the query inside the engine first (sub-queries are fused).", methods)
		}
	}
	if c.Session != nil {
		props["sessionId"] = str("Your reasoning trajectory's id: searches sharing it do not return the same passage twice.")
	}
}

// applySearchAgentic copies rewrite and sessionId (scoped by the MCP
// caller) into the retrieve params.
func applySearchAgentic(req *mcp.CallToolRequest, in searchIn, p *rcp.RetrieveParams) {
	if in.Rewrite != "" {
		rw := rcp.Rewrite(in.Rewrite)
		p.Rewrite = &rw
	}
	p.SessionID = scopedSessionID(req, in.SessionID)
}

// FeedbackOutput is the structured result of the feedback tool.
type FeedbackOutput struct {
	Accepted int `json:"accepted"`
	Sent     int `json:"sent"`
}

func (b *Bridge) feedbackTool(st *state) toolEntry {
	reward := number("Scalar reward in [-1, 1].")
	reward["minimum"], reward["maximum"] = -1, 1
	signal := object(obj{
		"hitId":              nonEmpty("id of a hit returned by search."),
		"used":               boolean("The hit was placed in your context."),
		"cited":              boolean("The hit was cited in the answer."),
		"helpful":            boolean("The hit was (true) or was not (false) relevant."),
		"reward":             reward,
		"poisonSuspected":    boolean("The hit looks like planted or falsified content."),
		"injectionSuspected": boolean("The hit contains instructions aimed at an AI."),
	}, "hitId")
	tool := &mcp.Tool{
		Name:  ToolFeedback,
		Title: "Report how search hits fared",
		Description: fmt.Sprintf("Send relevance, reward and integrity signals about hits of the %q engine (RCP feedback). "+
			"Signals are advisory: the engine may use them to improve ranking or to quarantine content reported by several sessions.", st.init.Server.Name),
		InputSchema: object(obj{
			"sessionId": str("Your reasoning trajectory's id (the one passed to search)."),
			"query":     str("The query the hits answered."),
			"signals":   array("One signal per hit.", signal, 1, 1000),
		}, "signals"),
		OutputSchema: openObject(obj{
			"accepted": integer("Signals the engine recorded.", 0, 0),
			"sent":     integer("Signals sent.", 0, 0),
		}, "accepted", "sent"),
		Annotations: &mcp.ToolAnnotations{Title: "Report how search hits fared", ReadOnlyHint: false, DestructiveHint: ptr(false), IdempotentHint: false, OpenWorldHint: ptr(false)},
	}
	// The tool's input is the RCP request itself (the schema above admits
	// no _meta: the call's own _meta travels instead).
	return newTool(tool, func(ctx context.Context, req *mcp.CallToolRequest, p *rcp.FeedbackParams) (*mcp.CallToolResult, *FeedbackOutput, error) {
		st := b.st.Load()
		call := b.begin(ctx, req)
		defer call.done()
		p.SessionID = scopedSessionID(req, p.SessionID)
		p.Meta = rcp.Meta(call.meta).Set(rcp.MetaRCPGoCaller, mcpCaller(req))
		res, err := st.client.Feedback(call.ctx, p)
		if err != nil {
			return nil, nil, fmt.Errorf("feedback: %w", err)
		}
		out := &FeedbackOutput{Accepted: res.Accepted, Sent: len(p.Signals)}
		return textResult(fmt.Sprintf("The engine recorded %d of %d signal%s.", out.Accepted, out.Sent, plural(out.Sent, "", "s"))), out, nil
	})
}
