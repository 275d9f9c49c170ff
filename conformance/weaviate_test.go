package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/rcpgo/rcpgo/engine/analysis"
	"github.com/rcpgo/rcpgo/engine/embed/lsa"
	"github.com/rcpgo/rcpgo/internal/demo"
	"github.com/rcpgo/rcpgo/internal/testutil/gobuild"
	"github.com/rcpgo/rcpgo/internal/testutil/weaviatetest"
)

// TestRcpdWeaviateCertifies is acceptance 1 of issue 14: rcpd serve --demo
// --backend weaviate (one Weaviate node, dense from an LSA model fitted on
// the demo corpus) certifies at the level it declares, over stdio and
// HTTP, each against its own collection.
func TestRcpdWeaviateCertifies(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rcpd and runs Weaviate; skipped with -short")
	}
	cl := weaviatetest.Start(t, 1)
	bin := t.TempDir()
	rcpd := gobuild.Binary(t, bin, "github.com/rcpgo/rcpgo/cmd/rcpd")
	model := filepath.Join(bin, "lsa.model")
	fitDemoLSA(t, model)
	node := cl.Nodes[0]
	args := func(class, data string) []string {
		return []string{rcpd, "serve", "--demo", "--data", filepath.Join(bin, data), "--backend", "weaviate",
			"--weaviate-url", node.URL(), "--weaviate-grpc", node.GRPC(), "--weaviate-class", class,
			"--dense", "lsa", "--lsa-model", model}
	}
	t.Run("stdio", func(t *testing.T) {
		certify(t, Target{Command: append(args("RcpConfStdio", "stdio"), "--stdio")})
	})
	t.Run("http", func(t *testing.T) {
		addr := freeAddr(t)
		stop := startHTTP(t, append(args("RcpConfHttp", "http"), "--http", addr), addr)
		defer stop()
		certify(t, Target{URL: "http://" + addr + "/rcp"})
	})
}

// fitDemoLSA fits the offline LSA encoder on the demo corpus (what an
// embedded rcpd --demo fits at start) and saves it to path.
func fitDemoLSA(t *testing.T, path string) {
	t.Helper()
	var texts []string
	sc := bufio.NewScanner(bytes.NewReader(demo.CorpusJSONL))
	for sc.Scan() {
		var d struct{ Title, Text string }
		if json.Unmarshal(sc.Bytes(), &d) == nil && d.Text != "" {
			texts = append(texts, d.Title+"\n"+d.Text)
		}
	}
	m, err := lsa.FitTexts(context.Background(), texts, analysis.Default().Terms, lsa.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
}
