package mcpcmd

import (
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/rcpgo/rcpgo/rcp"
)

// rcpd mcp --connect sends a bearer token to an engine that requires one
// (issue 19 item 15).
func TestConnectWithBearerToken(t *testing.T) {
	eng, err := openTestEngine(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	hh := rcp.NewServer(eng, &rcp.ServerOptions{Logger: discardLogger()}).HTTPHandler(&rcp.HTTPOptions{BearerTokens: []string{"s3cret"}})
	srv := httptest.NewServer(hh)
	defer srv.Close()
	defer hh.Close()
	tokFile := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(tokFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c := &config{connect: srv.URL + "/rcp"}
	if _, _, err := c.dial(ctx, discardLogger(), io.Discard, nil); err == nil {
		t.Fatal("connected without the token")
	}
	c.connectTokenFile = tokFile
	_, closeA, err := c.dial(ctx, discardLogger(), io.Discard, nil)
	if err != nil {
		t.Fatalf("with --connect-token-file: %v", err)
	}
	closeA()
	t.Setenv(ConnectTokenEnv, "s3cret")
	c.connectTokenFile = ""
	_, closeB, err := c.dial(ctx, discardLogger(), io.Discard, nil)
	if err != nil {
		t.Fatalf("with $%s: %v", ConnectTokenEnv, err)
	}
	closeB()
}
