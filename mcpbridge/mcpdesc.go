package mcpbridge

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rcpgo/rcpgo/mcpbridge/tasks"
)

// MCPDescVersion is the MCP Description format version produced.
const MCPDescVersion = "0.7.0"

// Description is an MCP Description 0.7.0 document.
type Description struct {
	Schema            string           `json:"$schema,omitempty"`
	MCPDesc           string           `json:"mcpdesc"`
	Info              DescInfo         `json:"info"`
	Transports        []DescTransport  `json:"transports"`
	Security          []SecurityScheme `json:"security,omitempty"`
	Capabilities      *Capabilities    `json:"capabilities,omitempty"`
	Tools             []DescTool       `json:"tools,omitempty"`
	Resources         []DescResource   `json:"resources,omitempty"`
	ResourceTemplates []DescTemplate   `json:"resourceTemplates,omitempty"`
	Prompts           []DescPrompt     `json:"prompts,omitempty"`
	Tags              []DescTag        `json:"tags,omitempty"`
	// XRCP is the x-rcp extension: the RCP engine behind the MCP face.
	XRCP map[string]any `json:"x-rcp,omitempty"`
}

// DescInfo is the info object.
type DescInfo struct {
	Name            string     `json:"name"`
	Title           string     `json:"title,omitempty"`
	Description     string     `json:"description,omitempty"`
	Version         string     `json:"version"`
	ProtocolVersion string     `json:"protocolVersion,omitempty"`
	WebsiteURL      string     `json:"websiteUrl,omitempty"`
	Icons           []mcp.Icon `json:"icons,omitempty"`
}

// DescTransport is one transport (stdio or streamable-http).
type DescTransport struct {
	Type     string            `json:"type"`
	Command  string            `json:"command,omitempty"`
	Args     []string          `json:"args,omitempty"`
	Env      map[string]string `json:"env,omitempty"`
	URL      string            `json:"url,omitempty"`
	Security []SecurityScheme  `json:"security,omitempty"`
}

// SecurityScheme is an OpenAPI security scheme object.
type SecurityScheme struct {
	Type        string `json:"type"`
	Scheme      string `json:"scheme,omitempty"`
	Description string `json:"description,omitempty"`
}

// DescTool is one tool.
type DescTool struct {
	Name         string               `json:"name"`
	Title        string               `json:"title,omitempty"`
	Description  string               `json:"description,omitempty"`
	InputSchema  any                  `json:"inputSchema,omitempty"`
	OutputSchema any                  `json:"outputSchema,omitempty"`
	Annotations  *mcp.ToolAnnotations `json:"annotations,omitempty"`
	Execution    *tasks.Execution     `json:"execution,omitempty"`
	Tags         []string             `json:"tags,omitempty"`
}

// DescResource is one concrete resource.
type DescResource struct {
	URI         string   `json:"uri"`
	Name        string   `json:"name"`
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	MIMEType    string   `json:"mimeType,omitempty"`
	Tags        []string `json:"tags,omitempty"`
}

// DescTemplate is one resource template.
type DescTemplate struct {
	URITemplate string   `json:"uriTemplate"`
	Name        string   `json:"name"`
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	MIMEType    string   `json:"mimeType,omitempty"`
	Tags        []string `json:"tags,omitempty"`
}

// DescPrompt is one prompt.
type DescPrompt struct {
	Name        string                `json:"name"`
	Title       string                `json:"title,omitempty"`
	Description string                `json:"description,omitempty"`
	Arguments   []*mcp.PromptArgument `json:"arguments,omitempty"`
	Tags        []string              `json:"tags,omitempty"`
}

// DescTag declares a tag.
type DescTag struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

var tagDocs = []DescTag{
	{"retrieval", "Finding passages in the engine's index."},
	{"ranking", "Scoring and ordering passages."},
	{"embedding", "Dense vectors."},
	{"index", "Writing to the engine's index."},
	{"graph", "Knowledge-graph retrieval."},
	{"query", "Query rewriting and planning."},
	{"memory", "Retrieval memories."},
	{"grounding", "Prompts that ground answers in retrieved passages."},
	{"documents", "Stored documents."},
	{"engine", "The RCP engine itself."},
}

var featureTags = map[string][]string{
	ToolSearch: {"retrieval"}, ToolRerank: {"retrieval", "ranking"}, ToolEmbed: {"embedding"},
	ToolIndexAdd: {"index"}, ToolIndexDelete: {"index"}, ToolGraph: {"retrieval", "graph"},
	ToolTransform: {"query"}, ToolMemoryBuild: {"memory"}, ToolMemoryRecall: {"memory", "retrieval"},
	PromptGroundedAnswer: {"grounding", "retrieval"}, PromptResearch: {"grounding", "query"},
	"document": {"documents"}, "engine-info": {"engine"},
}

// DescribeOptions say how the MCP face is reached.
type DescribeOptions struct {
	// Stdio, when Command is set, is the command line that serves the
	// bridge over stdio.
	Command string
	Args    []string
	// HTTPURL, when set, is the streamable HTTP endpoint.
	HTTPURL string
	// Bearer reports that the HTTP endpoint requires a bearer token.
	Bearer bool
}

// Describe produces the MCP Description of the live MCP face: it connects an
// MCP client to the bridge in memory and records what that client observes
// (initialize, tools/list, prompts/list, resources/templates/list), so the
// document is what every client sees.
func (b *Bridge) Describe(ctx context.Context, opts DescribeOptions) (*Description, error) {
	ct, st := mcp.NewInMemoryTransports()
	ss, err := b.srv.Connect(ctx, st, nil)
	if err != nil {
		return nil, fmt.Errorf("mcpdesc: %w", err)
	}
	defer ss.Close()
	cl := mcp.NewClient(&mcp.Implementation{Name: "rcpgo-mcpdesc", Version: "0.1.0"}, nil)
	cs, err := cl.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		return nil, fmt.Errorf("mcpdesc: %w", err)
	}
	defer cs.Close()
	d, err := Observe(ctx, cs, opts)
	if err != nil {
		return nil, err
	}
	// What the go-sdk client cannot decode, the bridge knows: the tasks
	// capability and each tool's task support.
	d.Capabilities.Tasks = b.Capabilities().Tasks
	for i := range d.Tools {
		if s := b.tasks.SupportOf(d.Tools[i].Name); s != tasks.Forbidden {
			d.Tools[i].Execution = &tasks.Execution{TaskSupport: s}
		}
	}
	eng := b.st.Load()
	d.XRCP = map[string]any{"protocol": fmt.Sprintf("RCP/%d", eng.init.ProtocolVersion), "engine": eng.init.Server,
		"conformance": eng.client.Conformance(), "capabilities": eng.init.Capabilities}
	return d, nil
}

// Observe builds the MCP Description from what client session cs observes
// of a server.
func Observe(ctx context.Context, cs *mcp.ClientSession, opts DescribeOptions) (*Description, error) {
	init := cs.InitializeResult()
	d := &Description{
		MCPDesc: MCPDescVersion,
		Info: DescInfo{Name: init.ServerInfo.Name, Title: init.ServerInfo.Title, Version: init.ServerInfo.Version,
			Description: init.ServerInfo.Description, ProtocolVersion: init.ProtocolVersion,
			WebsiteURL: init.ServerInfo.WebsiteURL, Icons: init.ServerInfo.Icons},
		Capabilities: &Capabilities{ServerCapabilities: init.Capabilities},
	}
	if opts.Command != "" {
		d.Transports = append(d.Transports, DescTransport{Type: "stdio", Command: opts.Command, Args: opts.Args})
	}
	if opts.HTTPURL != "" {
		t := DescTransport{Type: "streamable-http", URL: opts.HTTPURL}
		if opts.Bearer {
			t.Security = []SecurityScheme{{Type: "http", Scheme: "bearer", Description: "Authorization: Bearer token configured on the server."}}
		}
		d.Transports = append(d.Transports, t)
	}
	if len(d.Transports) == 0 {
		return nil, fmt.Errorf("mcpdesc: no transport described")
	}
	used := map[string]bool{}
	tag := func(name string) []string {
		t := featureTags[name]
		for _, x := range t {
			used[x] = true
		}
		return t
	}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcpdesc: tools/list: %w", err)
		}
		d.Tools = append(d.Tools, DescTool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema,
			OutputSchema: t.OutputSchema, Annotations: t.Annotations, Tags: tag(t.Name)})
	}
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcpdesc: prompts/list: %w", err)
		}
		d.Prompts = append(d.Prompts, DescPrompt{Name: p.Name, Title: p.Title, Description: p.Description, Arguments: p.Arguments, Tags: tag(p.Name)})
	}
	for t, err := range cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcpdesc: resources/templates/list: %w", err)
		}
		d.ResourceTemplates = append(d.ResourceTemplates, DescTemplate{URITemplate: t.URITemplate, Name: t.Name, Title: t.Title,
			Description: t.Description, MIMEType: t.MIMEType, Tags: tag(t.Name)})
	}
	// Concrete resources: the first page only, without documents (they
	// are data, listed live; the template describes them).
	if init.Capabilities != nil && init.Capabilities.Resources != nil {
		res, err := cs.ListResources(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("mcpdesc: resources/list: %w", err)
		}
		for _, r := range res.Resources {
			if r.Name == "engine-info" {
				d.Resources = append(d.Resources, DescResource{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description,
					MIMEType: r.MIMEType, Tags: tag(r.Name)})
			}
		}
	}
	for _, t := range tagDocs {
		if used[t.Name] {
			d.Tags = append(d.Tags, t)
		}
	}
	slices.SortStableFunc(d.Tools, func(a, b DescTool) int { return strings.Compare(a.Name, b.Name) })
	return d, nil
}
