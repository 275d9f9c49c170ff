package federation_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// referenceSDK locates the reference Python SDK (RCP_PYTHON_SDK, or the
// reference checkout next to this repository); tests skip without it.
func referenceSDK(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("interop runs python3")
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	dir := os.Getenv("RCP_PYTHON_SDK")
	if dir == "" {
		dir = "/work/scratch/rcp/sdk/python"
	}
	if _, err := os.Stat(filepath.Join(dir, "rcp", "__init__.py")); err != nil {
		t.Skipf("reference Python SDK not found at %s (set RCP_PYTHON_SDK)", dir)
	}
	return dir
}

// The reference Python client queries the gateway, lists its catalog and
// connects to an exposed engine endpoint (acceptance 2).
func TestPythonReferenceClientInterop(t *testing.T) {
	sdk := referenceSDK(t)
	script, _ := filepath.Abs("testdata/interop.py")
	tr := trio(t)
	_, gwHTTP := gatewayOver(t, tr.reg, nil)
	exe, _ := os.Executable()
	regPath := writeRegistry(t, tr.reg)
	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"http", []string{script, gwHTTP.URL}},
		{"stdio", []string{script, "stdio", exe}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.CommandContext(ctxT(t, 30*time.Second), "python3", tc.argv...)
			cmd.Env = append(os.Environ(), "PYTHONPATH="+sdk, envGatewayRegistry+"="+regPath)
			out, err := cmd.CombinedOutput()
			t.Logf("python3 %s:\n%s", strings.Join(tc.argv[1:], " "), out)
			if err != nil {
				t.Fatalf("reference client failed: %v", err)
			}
		})
	}
}
