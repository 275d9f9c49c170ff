package completion

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var cmds = []Command{
	{Name: "query", Flags: []string{"json", "k"}},
	{Name: "index", Subs: []Command{{Name: "add", Flags: []string{"prune", "verbose"}}, {Name: "list", Flags: []string{"all"}}}},
}

func TestFlagsFromHelp(t *testing.T) {
	help := "Usage: rcp query\n\nFlags:\n  -json\n    \tprint JSON\n  -k int\n    \t--dense openai: number of hits (default 10)\n  --long value\n"
	if got := FlagsFromHelp(help); !reflect.DeepEqual(got, []string{"json", "k", "long"}) {
		t.Fatalf("%q", got)
	}
}

// complete runs the bash script's completion function for words.
func complete(t *testing.T, script string, words ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "c.bash")
	if err := os.WriteFile(p, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = "'" + w + "'"
	}
	prog := `source "$1"; COMP_WORDS=(` + strings.Join(quoted, " ") + `); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _rcp_complete; echo "${COMPREPLY[*]}"`
	out, err := exec.Command("bash", "-c", prog, "bash", p).CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestBash(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, "bash", "rcp", cmds); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{[]string{"rcp", "qu"}, "query"},
		{[]string{"rcp", "index", "l"}, "list"},
		{[]string{"rcp", "index", "add", "--ve"}, "--verbose"},
		{[]string{"rcp", "query", "--j"}, "--json"},
	} {
		if got := complete(t, b.String(), tc.words...); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.words, got, tc.want)
		}
	}
}

func TestZshAndFish(t *testing.T) {
	var z, f bytes.Buffer
	if err := Write(&z, "zsh", "rcp", cmds); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(z.String(), "bashcompinit") || !strings.Contains(z.String(), "complete -o default -F _rcp_complete rcp") {
		t.Errorf("zsh script:\n%s", z.String())
	}
	if err := Write(&f, "fish", "rcp", cmds); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`complete -c rcp -n __fish_use_subcommand -a "query index help"`,
		`complete -c rcp -n "__fish_seen_subcommand_from index; and __fish_seen_subcommand_from add" -l verbose`,
		`complete -c rcp -n "__fish_seen_subcommand_from query" -l json`,
	} {
		if !strings.Contains(f.String(), want) {
			t.Errorf("fish script lacks %s:\n%s", want, f.String())
		}
	}
	if err := Write(&f, "tcsh", "rcp", cmds); err == nil {
		t.Error("unknown shell accepted")
	}
}
