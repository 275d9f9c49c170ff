package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rcpgo/rcpgo/internal/auth"
)

func init() {
	commands["token"] = command{summary: "make a scoped bearer token for --token-file: token new --name N --scopes read[,write,admin]", run: runToken}
}

// runToken is "rcpd token new": a fresh random token, printed once on
// stdout, and its hashed line, appended to --file (created 0600) or
// printed on stderr to paste into a token file.
func runToken(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rcpd token new", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "the token's name (required; it names the caller in logs and feedback)")
	scopes := fs.String("scopes", "read", "comma-separated scopes: read, write, admin")
	file := fs.String("file", "", "append the token's line (hashed) to this token `FILE`")
	if len(args) == 0 || args[0] != "new" {
		fmt.Fprintln(stderr, "usage: rcpd token new --name NAME [--scopes read,write,admin] [--file FILE]")
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return 0
		}
		return 2
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	sc, err := auth.ParseScopes(*scopes)
	if err != nil || *name == "" || strings.ContainsAny(*name, " \t#") {
		fmt.Fprintln(stderr, "rcpd token new: want --name (no spaces or #) and --scopes from read, write, admin")
		return 2
	}
	secret := auth.NewSecret()
	line := auth.Line(*name, sc, secret)
	if *file != "" {
		f, err := os.OpenFile(*file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			_, err = fmt.Fprintln(f, line)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintln(stderr, "rcpd token new:", err)
			return 1
		}
	} else {
		fmt.Fprintln(stderr, "token file line:", line)
	}
	fmt.Fprintln(stdout, secret)
	return 0
}
