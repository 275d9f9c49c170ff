// Package completion writes shell completion scripts (bash, zsh, fish) for
// a command with subcommands. The flags of each subcommand are read from
// its own -h output (flag.PrintDefaults), so the scripts never drift from
// the flags the commands really take.
package completion

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// Command is one subcommand: its name, its flags (without dashes) and its
// own subcommands.
type Command struct {
	Name  string
	Flags []string
	Subs  []Command
}

// Shells are the shells Write supports.
var Shells = []string{"bash", "zsh", "fish"}

var flagLine = regexp.MustCompile(`(?m)^  --?([A-Za-z0-9][A-Za-z0-9_.-]*)`)

// FlagsFromHelp extracts the flag names from a flag.PrintDefaults listing.
func FlagsFromHelp(help string) []string {
	var out []string
	for _, m := range flagLine.FindAllStringSubmatch(help, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	return out
}

// Write writes the completion script of prog for shell.
func Write(w io.Writer, shell, prog string, cmds []Command) error {
	switch shell {
	case "bash":
		return writeBash(w, prog, cmds, false)
	case "zsh":
		return writeBash(w, prog, cmds, true)
	case "fish":
		return writeFish(w, prog, cmds)
	}
	return fmt.Errorf("unknown shell %q (want %s)", shell, strings.Join(Shells, ", "))
}

func names(cmds []Command) string {
	var n []string
	for _, c := range cmds {
		n = append(n, c.Name)
	}
	return strings.Join(n, " ")
}

func dashed(flags []string) string {
	var out []string
	for _, f := range flags {
		out = append(out, "--"+f)
	}
	return strings.Join(out, " ")
}

// fn is the shell function name for prog.
func fn(prog string) string {
	return "_" + strings.NewReplacer("-", "_", ".", "_").Replace(prog) + "_complete"
}

// writeBash writes a bash script; zsh loads the same through bashcompinit.
func writeBash(w io.Writer, prog string, cmds []Command, zsh bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s completion", prog)
	if zsh {
		fmt.Fprintf(&b, " for zsh: eval \"$(%s completion zsh)\" in ~/.zshrc\nautoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n", prog)
	} else {
		fmt.Fprintf(&b, " for bash: eval \"$(%s completion bash)\" in ~/.bashrc\n", prog)
	}
	fmt.Fprintf(&b, "%s() {\n", fn(prog))
	b.WriteString("\tlocal cur=\"${COMP_WORDS[COMP_CWORD]}\" cmd=\"${COMP_WORDS[1]}\" sub=\"${COMP_WORDS[2]}\" words=\"\"\n")
	fmt.Fprintf(&b, "\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n\t\tCOMPREPLY=($(compgen -W %q -- \"$cur\"))\n\t\treturn\n\tfi\n", names(cmds)+" help")
	b.WriteString("\tcase \"$cmd\" in\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "\t%s)\n", c.Name)
		if len(c.Subs) > 0 {
			fmt.Fprintf(&b, "\t\tif [ \"$COMP_CWORD\" -eq 2 ]; then\n\t\t\tCOMPREPLY=($(compgen -W %q -- \"$cur\"))\n\t\t\treturn\n\t\tfi\n", names(c.Subs))
			b.WriteString("\t\tcase \"$sub\" in\n")
			for _, s := range c.Subs {
				fmt.Fprintf(&b, "\t\t%s) words=%q ;;\n", s.Name, dashed(s.Flags))
			}
			b.WriteString("\t\tesac\n\t\t;;\n")
			continue
		}
		fmt.Fprintf(&b, "\t\twords=%q\n\t\t;;\n", dashed(c.Flags))
	}
	b.WriteString("\tesac\n")
	b.WriteString("\tif [[ \"$cur\" == -* ]]; then\n\t\tCOMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n\telse\n\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n\tfi\n}\n")
	fmt.Fprintf(&b, "complete -o default -F %s %s\n", fn(prog), prog)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeFish(w io.Writer, prog string, cmds []Command) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s completion for fish: %s completion fish > ~/.config/fish/completions/%s.fish\n", prog, prog, prog)
	fmt.Fprintf(&b, "complete -c %s -f\n", prog)
	fmt.Fprintf(&b, "complete -c %s -n __fish_use_subcommand -a %q\n", prog, names(cmds)+" help")
	for _, c := range cmds {
		cond := "__fish_seen_subcommand_from " + c.Name
		if len(c.Subs) > 0 {
			fmt.Fprintf(&b, "complete -c %s -n %q -a %q\n", prog, cond+"; and not __fish_seen_subcommand_from "+names(c.Subs), names(c.Subs))
			for _, s := range c.Subs {
				for _, f := range s.Flags {
					fmt.Fprintf(&b, "complete -c %s -n %q -l %s\n", prog, cond+"; and __fish_seen_subcommand_from "+s.Name, f)
				}
			}
			continue
		}
		for _, f := range c.Flags {
			fmt.Fprintf(&b, "complete -c %s -n %q -l %s\n", prog, cond, f)
		}
	}
	fmt.Fprintf(&b, "complete -c %s -n 'not __fish_use_subcommand' -F\n", prog)
	_, err := io.WriteString(w, b.String())
	return err
}
