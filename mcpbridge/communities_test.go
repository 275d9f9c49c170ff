package mcpbridge

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/rcpgo/rcpgo/engine"
	"github.com/rcpgo/rcpgo/rcp"
)

// Community resources follow graph.ops: read by level and id with the
// summary and members, absent when the engine does not serve communities.
func TestCommunityResources(t *testing.T) {
	b, _ := newBridge(t, fullCaps(), Options{})
	cs, _ := connect(t, b)
	ctx := context.Background()
	rd, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: b.communityURI(0, "fr/tour 1")})
	if err != nil {
		t.Fatalf("read community: %v", err)
	}
	c := rd.Contents[0]
	if c.MIMEType != "text/plain" || !strings.Contains(c.Text, "Tour Eiffel: la tour de fer.") || !strings.Contains(c.Text, "- tour\n") {
		t.Errorf("contents = %+v", c)
	}
	info, _ := c.Meta["rcp"].(map[string]any)
	if info["id"] != "fr/tour 1" || info["level"] != float64(0) || len(info["members"].([]any)) != 1 || info["notice"] == nil {
		t.Errorf("_meta.rcp = %v", info)
	}
	for _, uri := range []string{
		"rcp://memtest/community/0/nope", // no such community
		"rcp://memtest/community/1/c0",   // a level the graph does not have
		"rcp://memtest/community/01/c0",  // not canonical
		"rcp://memtest/community/-1/c0",  // negative
		"rcp://memtest/community/0/",     // no id
		"rcp://memtest/community/0/c0/x", // two segments
		"rcp://memtest/community/x/c0",   // not a number
		"rcp://memtest/community/0/%zz",  // bad escape
	} {
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("read %s succeeded", uri)
		}
	}

	// Completion: levels the graph has, ids of the chosen level.
	tplRef := &mcp.CompleteReference{Type: "ref/resource", URI: b.communityTemplate().URITemplate}
	got, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: tplRef, Argument: mcp.CompleteParamsArgument{Name: "level"}})
	if err != nil || !slices.Equal(got.Completion.Values, []string{"0"}) {
		t.Errorf("complete level: %+v %v", got, err)
	}
	got, err = cs.Complete(ctx, &mcp.CompleteParams{Ref: tplRef, Argument: mcp.CompleteParamsArgument{Name: "id", Value: "fr"},
		Context: &mcp.CompleteContext{Arguments: map[string]string{"level": "0"}}})
	if err != nil || !slices.Equal(got.Completion.Values, []string{"fr/tour 1"}) {
		t.Errorf("complete id: %+v %v", got, err)
	}

	// Without graph op "communities": no template, nothing listed or read.
	caps := fullCaps()
	caps.Graph = &rcp.GraphCap{Ops: []string{"neighbors"}}
	b2, _ := newBridge(t, caps, Options{})
	cs2, _ := connect(t, b2)
	tpl, err := cs2.ListResourceTemplates(ctx, nil)
	if err != nil || slices.ContainsFunc(tpl.ResourceTemplates, func(r *mcp.ResourceTemplate) bool { return strings.Contains(r.URITemplate, "community") }) {
		t.Errorf("templates without communities: %+v %v", tpl, err)
	}
	ls, err := cs2.ListResources(ctx, nil)
	if err != nil || slices.ContainsFunc(ls.Resources, func(r *mcp.Resource) bool { return strings.Contains(r.URI, "community") }) {
		t.Errorf("resources without communities: %v", err)
	}
	if _, err := cs2.ReadResource(ctx, &mcp.ReadResourceParams{URI: "rcp://memtest/community/0/c0"}); err == nil {
		t.Error("read a community of an engine without communities")
	}
}

// The real engine with the graph on: every listed community reads back
// with its summary and the units behind it.
func TestRealEngineCommunities(t *testing.T) {
	ctx := context.Background()
	eng, err := engine.Open(ctx, engine.Config{Dir: t.TempDir(), Name: "kb", Dense: engine.DenseNone, Graph: true, Logger: discardLogger(),
		Preload: []engine.Preload{
			{ID: "curie", Text: "Marie Curie worked in Paris. Paris lies on the river Seine."},
			{ID: "seine", Text: "The river Seine flows through Rouen before reaching Le Havre."},
			{ID: "monet", Text: "Rouen Cathedral was painted by Claude Monet. Claude Monet lived in Giverny."},
			{ID: "rhone", Text: "The Rhone flows from the Alps through Lyon to the Mediterranean Sea."},
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	if err := eng.SyncGraph(ctx); err != nil {
		t.Fatal(err)
	}
	cs := bridgeEngine(t, eng)
	ls, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	for _, r := range ls.Resources {
		if !strings.Contains(r.URI, "/community/") {
			continue
		}
		rd, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: r.URI})
		if err != nil {
			t.Fatalf("read %s: %v", r.URI, err)
		}
		info, _ := rd.Contents[0].Meta["rcp"].(map[string]any)
		members, _ := info["members"].([]any)
		if len(members) == 0 || !strings.Contains(rd.Contents[0].Text, "Members") || r.Description == "" {
			t.Errorf("%s: %q, _meta %v", r.URI, rd.Contents[0].Text, info)
		}
		read++
	}
	if read == 0 {
		t.Fatalf("no community listed: %+v", ls.Resources)
	}
}
