package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"golang.org/x/text/encoding/charmap"

	"github.com/rcpgo/rcpgo/internal/ingest"
	"github.com/rcpgo/rcpgo/rcp"
)

// consoleLocalFiles (issue 34): files indexed as `rcp index add` indexes
// them (internal/ingest: file:// ids, a Latin-1 file decoded) show as the
// operator's local files — a neutral "local file" trust badge, not a red
// "untrusted" one —, query words are highlighted as whole words in their
// forms ("Converting" for convert), and the Index tab lists them with
// human sizes and Delete buttons on one line. It takes the README's
// console-local-search.png and console-index.png.
func consoleLocalFiles(t *testing.T, ctx context.Context, base, dir string) {
	notes, err := os.MkdirTemp("", "notes-") // a short path: the ids show in the screenshots
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(notes) })
	latin1, err := charmap.ISO8859_1.NewEncoder().String("Menu du café\n\nUn café crème et une crêpe, servis près de la fenêtre.\n")
	if err != nil {
		t.Fatal(err)
	}
	var long strings.Builder
	long.WriteString("# Converting text\n\nConverting a string to bytes copies it; converting bytes back to a string copies again. ")
	for long.Len() < 36<<10 {
		long.WriteString("A byte slice and a string share no memory after the conversion, so converting in a loop allocates each time. ")
	}
	files := map[string]string{"strings.md": long.String(), "menu.txt": latin1,
		"encoding.txt": "Byte order marks tell UTF-16 from UTF-8; the converter reads the bytes and writes runes."}
	var docs []rcp.Document
	for name, body := range files {
		p := filepath.Join(notes, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		ds, err := ingest.ReadFile(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, ds...)
	}
	indexAdd(t, base, docs)

	do(t, ctx, "search the local files", chromedp.Navigate(base+"/?q=converting+bytes&k=3&mode=sparse"), chromedp.WaitVisible(`#hits li.hit`))
	hit := js[map[string]string](t, ctx, `(li => ({id: li.dataset.id,
		badge: Array.from(li.querySelectorAll(".hit-head .badge")).map(b => b.className + ":" + b.textContent).join(" "),
		marks: Array.from(li.querySelectorAll(".hit-text mark")).map(m => m.textContent).join(" ")}))(document.querySelector("#hits li.hit"))`)
	if !strings.HasPrefix(hit["id"], "file://") || !strings.Contains(hit["badge"], "badge unvetted:local file") || strings.Contains(hit["badge"], "untrusted") {
		t.Errorf("a local file's hit: %v, want the neutral \"local file\" badge", hit)
	}
	if !strings.Contains(hit["marks"], "Converting") || !strings.Contains(hit["marks"], "bytes") {
		t.Errorf("marked words %q, want whole forms (Converting, bytes)", hit["marks"])
	}
	if split := js[[]string](t, ctx, splitMarks); len(split) > 0 {
		t.Errorf("highlighting splits words: %q", split)
	}
	shot(t, ctx, dir, "console-local-search.png")

	do(t, ctx, "find the Latin-1 file", chromedp.Navigate(base+"/?q=café+crème&k=1&mode=sparse"), chromedp.WaitVisible(`#hits li.hit`))
	if text := js[string](t, ctx, `document.querySelector("#hits li.hit .hit-text").textContent`); !strings.Contains(text, "Un café crème et une crêpe") {
		t.Errorf("the Latin-1 file's hit reads %q", text)
	}

	do(t, ctx, "list the local files", chromedp.Navigate(base+"/?tab=index"), chromedp.WaitVisible(`#doc-rows tr`),
		chromedp.SetValue(`#list-prefix`, "file://"), chromedp.Click(`#list-button`),
		discard(chromedp.Poll[bool](`document.querySelectorAll("#doc-rows tr[data-id^='file://']").length === 3`)),
		discard(chromedp.Evaluate[bool](`document.querySelector("table.docs").closest(".card").scrollIntoView({block: "start"}), true`)))
	sizes := js[[]string](t, ctx, `Array.from(document.querySelectorAll("#doc-rows td.size")).map(td => td.textContent)`)
	if !slicesContainMatch(sizes, regexp.MustCompile(`^3\d\.\d KiB$`)) {
		t.Errorf("sizes %q, want the 36 KiB file in KiB", sizes)
	}
	time.Sleep(100 * time.Millisecond) // the scroll settles
	shot(t, ctx, dir, "console-index.png")
}

func slicesContainMatch(ss []string, re *regexp.Regexp) bool {
	for _, s := range ss {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// indexAdd writes docs to the server at base with one index/add.
func indexAdd(t *testing.T, base string, docs []rcp.Document) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "index/add", "params": map[string]any{"documents": docs}})
	resp, err := http.Post(base+"/rcp/index/add", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans struct {
		Error *rcp.Error `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil || ans.Error != nil || resp.StatusCode != 200 {
		t.Fatalf("index/add: HTTP %d, %v %v", resp.StatusCode, err, ans.Error)
	}
}
