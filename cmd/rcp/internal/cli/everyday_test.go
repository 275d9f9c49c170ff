package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/text/encoding/charmap"

	"github.com/rcpgo/rcpgo/rcp"
)

// The tests of issue 34 ("everyday use, round two") run the built rcp and
// rcpd binaries on files they write, as a newcomer does.

// rcpBinary builds cmd/rcp once per test binary (beside rcpd).
func rcpBinary(t *testing.T) string {
	t.Helper()
	return rcpBin.build(t, filepath.Dir(rcpdBinary(t)))
}

// binRun runs the built rcp with args (and a deadline) and returns its exit
// code, stdout and stderr.
func binRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, rcpBinary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("rcp %q did not finish in 5 minutes:\n%s%s", args, stdout.String(), stderr.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String(), stderr.String()
}

// binServer is "-- rcpd serve --stdio --data DIR --dense none" with the
// built rcpd, logging at its default level (rcp quiets it).
func binServer(t *testing.T, data string, extra ...string) []string {
	return append([]string{"--", rcpdBinary(t), "serve", "--stdio", "--data", data, "--dense", "none"}, extra...)
}

// prose writes n bytes of words drawn from a vocabulary (seeded: the same
// text every run), with a line break every dozen words.
func prose(seed uint64, n int, marker string) string {
	words := strings.Fields("index query retrieval ranking passage document engine token vector sparse dense fusion " +
		"score corpus field filter chunk page cluster shard replica segment merge posting term weight")
	r := rand.New(rand.NewPCG(seed, 1))
	var sb strings.Builder
	sb.WriteString(marker + "\n")
	for i := 0; sb.Len() < n; i++ {
		sb.WriteString(words[r.IntN(len(words))])
		if i%12 == 11 {
			sb.WriteByte('\n')
		} else {
			sb.WriteByte(' ')
		}
	}
	return sb.String()
}

// Finding 1: a folder over 16 MiB is indexed — rcp sizes its index/add
// requests by the server's advertised limit — and the report sums it up.
// Before: "documents 0–199: rcp: PayloadTooLarge (-32013)", nothing stored.
func TestIndexLargeFolder(t *testing.T) {
	dir := t.TempDir()
	corpus, data := filepath.Join(dir, "corpus"), filepath.Join(dir, "data")
	files := map[string]string{}
	for i := range 200 {
		files[fmt.Sprintf("f%03d.txt", i)] = prose(uint64(i), 100<<10, fmt.Sprintf("marker%03d", i))
	}
	writeFiles(t, corpus, files)
	code, out, errs := binRun(t, append([]string{"index", "add", corpus}, binServer(t, data)...)...)
	if code != 0 || !strings.Contains(out, "indexed 200 files: 200 new, 0 updated, 0 unchanged") {
		t.Fatalf("add of a 20 MB folder: exit %d\n%s%s", code, out, errs)
	}
	if strings.Contains(errs, "level=INFO") {
		t.Errorf("the spawned rcpd logged INFO lines (want warnings only without --verbose):\n%s", errs)
	}
	code, out, errs = binRun(t, append([]string{"query", "marker137", "--json"}, binServer(t, data)...)...)
	var res rcp.RetrieveResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Hits) == 0 || !strings.Contains(res.Hits[0].ID.String(), "f137.txt") {
		t.Fatalf("query after the add: exit %d\n%s%s", code, out, errs)
	}
}

// Finding 2: a file larger than the server takes in one request is skipped
// by name, with the reason, and the others are indexed; the exit code says
// that something was not. Before: "documents 0–4: PayloadTooLarge", no
// file named, nothing stored.
func TestIndexSkipsHugeFileByName(t *testing.T) {
	dir := t.TempDir()
	corpus, data := filepath.Join(dir, "corpus"), filepath.Join(dir, "data")
	files := map[string]string{"huge.txt": prose(7, 17<<20, "hugemarker")}
	for i := range 4 {
		files[fmt.Sprintf("small%d.md", i)] = fmt.Sprintf("# Small %d\n\nsmallmarker%d notes", i, i)
	}
	writeFiles(t, corpus, files)
	code, out, errs := binRun(t, append([]string{"index", "add", corpus}, binServer(t, data)...)...)
	huge := filepath.Join(corpus, "huge.txt")
	if code != 1 || !strings.Contains(out, "indexed 4 files: 4 new") ||
		!strings.Contains(out, "not indexed: "+huge+": 17.0 MiB of text is more than the server takes in one request (16.0 MiB)") ||
		!strings.Contains(out, "--max-request-bytes") {
		t.Fatalf("add with a 17 MB file: exit %d, want 1, the four small files and huge.txt named\n%s%s", code, out, errs)
	}
	code, out, errs = binRun(t, append([]string{"index", "list", "--json"}, binServer(t, data)...)...)
	var page rcp.ListDocumentsResult
	if code != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page.Documents) != 4 {
		t.Fatalf("list: exit %d, want the 4 small files\n%s%s", code, out, errs)
	}
	// With the limit raised, the same command stores it too.
	code, out, errs = binRun(t, append([]string{"index", "add", corpus}, binServer(t, data, "--max-request-bytes", "33554432")...)...)
	if code != 0 || !strings.Contains(out, "indexed 5 files: 1 new, 0 updated, 4 unchanged") {
		t.Fatalf("add with --max-request-bytes 32 MiB: exit %d\n%s%s", code, out, errs)
	}
}

// Finding 4: a Latin-1 text is decoded (and the report says what it was
// read as), so "café crème" finds it. Before: stored as "Caf\uFFFD
// cr\uFFFDme", found by nothing.
func TestIndexLatin1Found(t *testing.T) {
	dir := t.TempDir()
	corpus, data := filepath.Join(dir, "corpus"), filepath.Join(dir, "data")
	latin1, err := charmap.ISO8859_1.NewEncoder().String("Menu du jour\n\nUn café crème et une crêpe à la fraise, servis près de la fenêtre.\n")
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, corpus, map[string]string{"menu.txt": latin1, "other.txt": "A plain English note about tea."})
	code, out, errs := binRun(t, append([]string{"index", "add", corpus}, binServer(t, data)...)...)
	if code != 0 || !strings.Contains(out, "indexed 2 files: 2 new") || !strings.Contains(out, "decoded 1 file that was not UTF-8: 1 as ISO-8859-1 (detected)") {
		t.Fatalf("add: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = binRun(t, append([]string{"query", "café crème", "--json"}, binServer(t, data)...)...)
	var res rcp.RetrieveResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Hits) == 0 {
		t.Fatalf("query: exit %d\n%s%s", code, out, errs)
	}
	if h := res.Hits[0]; !strings.HasSuffix(h.ID.String(), "menu.txt") || !strings.Contains(h.TextOf(), "Un café crème et une crêpe") {
		t.Fatalf("top hit %s %q, want menu.txt with its text decoded", h.ID, h.TextOf())
	}
}

// Finding 5: a text file without an extension named on the command line
// (LICENSE) is indexed; a binary one named explicitly is refused by name
// with a non-zero exit, whatever its extension; in a folder, extension-less
// text files are read and binary ones left out (exit 0). Before: "no file
// extension", rc 1; a binary random.txt gave rc 0 and "skipped 1 files".
func TestIndexNamedFiles(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	random := make([]byte, 4096)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	writeFiles(t, dir, map[string]string{
		"LICENSE":        "Permission is hereby granted, free of charge, to any person obtaining a copy of this software.",
		"random.txt":     string(random),
		"tree/COPYING":   "GNU GENERAL PUBLIC LICENSE Version 3, 29 June 2007",
		"tree/Makefile":  "build:\n\tgo build ./...\n",
		"tree/program":   "\x7fELF\x02\x01\x01\x00\x00\x00binary",
		"tree/notes.txt": "notes",
	})
	license := filepath.Join(dir, "LICENSE")
	code, out, errs := binRun(t, append([]string{"index", "add", license}, binServer(t, data)...)...)
	if code != 0 || !strings.Contains(out, "indexed 1 file: 1 new") {
		t.Fatalf("add LICENSE: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = binRun(t, append([]string{"query", "permission hereby granted", "--json"}, binServer(t, data)...)...)
	if code != 0 || !strings.Contains(out, "file://"+license) {
		t.Fatalf("query LICENSE: exit %d\n%s%s", code, out, errs)
	}
	rnd := filepath.Join(dir, "random.txt")
	code, out, errs = binRun(t, append([]string{"index", "add", rnd, license}, binServer(t, data)...)...)
	if code != 1 || !strings.Contains(out, "not indexed: "+rnd+": binary content, not text") || !strings.Contains(out, "indexed 1 file: 0 new, 0 updated, 1 unchanged") {
		t.Fatalf("add of a named binary file: exit %d, want 1 with its reason\n%s%s", code, out, errs)
	}
	code, out, errs = binRun(t, append([]string{"index", "add", filepath.Join(dir, "tree")}, binServer(t, data)...)...)
	if code != 0 || !strings.Contains(out, "indexed 3 files: 3 new") || !strings.Contains(out, "skipped 1 file: 1 binary content, not text") {
		t.Fatalf("add of a folder with extension-less files: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = binRun(t, append([]string{"index", "add", filepath.Join(dir, "missing.txt"), license}, binServer(t, data)...)...)
	if code != 1 || !strings.Contains(out, "not indexed: "+filepath.Join(dir, "missing.txt")+": no such file or directory") {
		t.Fatalf("add of a missing path: exit %d, want 1 naming it\n%s%s", code, out, errs)
	}
}

// Finding 6: a file whose stored index options differ is re-sent: after a
// plain add, --chunk updates every file. Before: "0 updated, 37 unchanged".
func TestIndexOptionChangeUpdates(t *testing.T) {
	dir := t.TempDir()
	corpus, data := filepath.Join(dir, "corpus"), filepath.Join(dir, "data")
	writeFiles(t, corpus, map[string]string{"a.md": prose(1, 4000, "# A"), "b.txt": prose(2, 4000, "B")})
	for _, step := range []struct {
		args []string
		want string
	}{
		{nil, "indexed 2 files: 2 new, 0 updated, 0 unchanged"},
		{[]string{"--chunk"}, "indexed 2 files: 0 new, 2 updated, 0 unchanged ("},
		{[]string{"--chunk"}, "indexed 2 files: 0 new, 0 updated, 2 unchanged"},
		{nil, "indexed 2 files: 0 new, 2 updated, 0 unchanged"},
	} {
		code, out, errs := binRun(t, append(append([]string{"index", "add", corpus}, step.args...), binServer(t, data)...)...)
		if code != 0 || !strings.Contains(out, step.want) {
			t.Fatalf("add %q: exit %d, want %q\n%s%s", step.args, code, step.want, out, errs)
		}
	}
}

// Finding 8: Ctrl-C while indexing prints how far it got and that running
// it again resumes, and exits 130. A slow server (this test binary, see
// TestMain) makes the interruption land mid-way.
func TestIndexInterruptSummary(t *testing.T) {
	dir := t.TempDir()
	var lines strings.Builder
	for i := range 400 {
		fmt.Fprintf(&lines, `{"_id":"d%d","text":"line %d"}`+"\n", i, i)
	}
	writeFiles(t, dir, map[string]string{"corpus.jsonl": lines.String()})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(rcpBinary(t), "index", "add", filepath.Join(dir, "corpus.jsonl"), "--batch", "10", "--", self)
	cmd.Env = append(os.Environ(), testServerEnv+"=slow")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	time.Sleep(1500 * time.Millisecond)
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("rcp did not stop after SIGINT:\n%s%s", stdout.String(), stderr.String())
	}
	out := stdout.String()
	if cmd.ProcessState.ExitCode() != 130 || !strings.Contains(out, "interrupted: ") ||
		!strings.Contains(out, " of 400 documents sent; run it again to resume") || strings.Contains(out, "interrupted: 400 of") {
		t.Fatalf("exit %d, want 130 and how far it got:\n%s%s", cmd.ProcessState.ExitCode(), out, stderr.String())
	}
}

// A server that does not advertise its limits and takes smaller requests
// than rcp assumes gets each refused request again in halves; a document
// it refuses alone is skipped by name.
func TestIndexBisectsOnPayloadTooLarge(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"big.txt": prose(9, 1200<<10, "bigmarker")}
	for i := range 24 {
		files[fmt.Sprintf("f%02d.txt", i)] = prose(uint64(i), 100<<10, fmt.Sprintf("m%02d", i))
	}
	writeFiles(t, dir, files)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(rcpBinary(t), "index", "add", dir, "--", self)
	cmd.Env = append(os.Environ(), testServerEnv+"=small")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	out := stdout.String()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(out, "indexed 24 files: 24 new") ||
		!strings.Contains(out, "not indexed: "+filepath.Join(dir, "big.txt")+": the server refused it as too large") {
		t.Fatalf("%v: want 24 files indexed and big.txt named:\n%s%s", err, out, stderr.String())
	}
}

// Findings 3, 8 and 10: every printing command takes --json (info, ping,
// index status), info and index status print people's text by default,
// a read-only server's refusal says why, and -32012 comes with the way
// out (--token, RCP_TOKEN).
func TestEverydayPolish(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	writeFiles(t, dir, map[string]string{"a.txt": "alpha"})
	for _, args := range [][]string{{"info", "--json"}, {"ping", "-n", "1", "--json"}, {"index", "status", "--json"}} {
		code, out, errs := binRun(t, append(args, binServer(t, data)...)...)
		if code != 0 || !json.Valid([]byte(strings.TrimSpace(out))) {
			t.Errorf("rcp %q: exit %d, want JSON:\n%s%s", args, code, out, errs)
		}
	}
	code, out, errs := binRun(t, append([]string{"info"}, binServer(t, data)...)...)
	if code != 0 || !strings.Contains(out, "retrieve: modes") || !strings.Contains(out, "index:    writable, chunking, contextual · requests up to 16.0 MiB") {
		t.Errorf("rcp info: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = binRun(t, append([]string{"index", "add", filepath.Join(dir, "a.txt")}, binServer(t, data, "--read-only")...)...)
	if code != 1 || !strings.Contains(errs, "the server's index is read-only: the server was started read-only (--read-only)") {
		t.Errorf("index add on a read-only server: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = binRun(t, append([]string{"index", "status"}, binServer(t, data)...)...)
	if code != 0 || !strings.Contains(out, "documents: 0") || !strings.Contains(out, "index:     writable") {
		t.Errorf("index status: exit %d\n%s%s", code, out, errs)
	}

	// An HTTP rcpd with a token: a call without it is -32012 with a hint.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv := exec.Command(rcpdBinary(t), "serve", "--http", addr, "--token", "s3cret", "--data", filepath.Join(dir, "http"), "--dense", "none", "--log-level", "error")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	url := "http://" + addr + "/rcp"
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("rcpd did not listen")
		}
	}
	code, _, errs = binRun(t, "ping", "-n", "1", "--http", url)
	if code != 1 || !strings.Contains(errs, "Unauthorized") || !strings.Contains(errs, "hint: ") || !strings.Contains(errs, "--token TOKEN or set RCP_TOKEN") {
		t.Errorf("ping without the token: exit %d\n%s", code, errs)
	}
	if code, _, errs = binRun(t, "ping", "-n", "1", "--http", url, "--token", "s3cret"); code != 0 {
		t.Errorf("ping with the token: exit %d\n%s", code, errs)
	}
}
