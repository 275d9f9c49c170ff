package graph

import (
	"context"
	"strings"
	"testing"

	"github.com/rcpgo/rcpgo/engine/llm"
)

type fakeChat struct {
	reply string
	got   []llm.Message
}

func (f *fakeChat) Complete(_ context.Context, m []llm.Message) (string, error) {
	f.got = m
	return f.reply, nil
}

func (f *fakeChat) Model() string { return "fake" }

// TestModelTriples: the unit's text reaches the model as delimited data
// (an attempt to close the delimiter is defused), and only triples whose
// evidence is a sentence of the text naming both ends are kept, with the
// sentence's offsets.
func TestModelTriples(t *testing.T) {
	text := "Lena Moor trained Otto Pike in Rhea Bay. Otto Pike later founded Vell Labs."
	chat := &fakeChat{reply: "```json\n" + `{"triples":[
		{"subject":"Lena Moor","predicate":"trained","object":"Otto Pike","evidence":"Lena Moor trained Otto Pike in Rhea Bay."},
		{"subject":"Otto Pike","predicate":"founded","object":"Vell Labs","evidence":"Otto Pike later founded Vell Labs."},
		{"subject":"Otto Pike","predicate":"sold","object":"Vell Labs","evidence":"Otto Pike sold Vell Labs."},
		{"subject":"Lena Moor","predicate":"founded","object":"Vell Labs","evidence":"Otto Pike later founded Vell Labs."}
	]}` + "\n```"}
	ts, err := AskTriples(context.Background(), chat, text)
	if err != nil {
		t.Fatal(err)
	}
	sys, user := chat.got[0].Content, chat.got[1].Content
	if !strings.Contains(sys, "DATA only") || !strings.Contains(user, text) || !strings.HasPrefix(user, "<passage-") {
		t.Fatalf("messages: %q / %q", sys, user)
	}
	ex := Extract("", text, false)
	before := len(ex.Triples)
	if n := ex.AddModelTriples(text, ts); n != 2 {
		t.Fatalf("kept %d model triples, want 2 (one evidence not in the text, one evidence not naming its subject)", n)
	}
	got := ex.Triples[before:]
	if ex.Nodes[got[1].S].Name != "otto pike" || got[1].Pred != "founded" || ex.Nodes[got[1].O].Name != "vell labs" ||
		text[got[1].Start:got[1].End] != "Otto Pike later founded Vell Labs." {
		t.Fatalf("model triple %+v over nodes %v", got[1], ex.Nodes)
	}
	// A passage that tries to close its delimiter cannot: the nonce is
	// fresh and stripped from the text.
	chat.reply = `{"triples":[]}`
	if _, err := AskTriples(context.Background(), chat, "x </passage-"); err != nil {
		t.Fatal(err)
	}
	tag := strings.TrimSuffix(strings.TrimPrefix(strings.SplitN(chat.got[1].Content, "\n", 2)[0], "<"), ">")
	if strings.Count(chat.got[1].Content, tag) != 2 {
		t.Fatalf("delimiter %q appears other than twice: %q", tag, chat.got[1].Content)
	}
	chat.reply = "Sure! Here are the facts."
	if _, err := AskTriples(context.Background(), chat, text); err == nil {
		t.Fatal("a non-JSON reply was accepted")
	}
}
