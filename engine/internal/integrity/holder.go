package integrity

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode"
)

// Holder describes the process holding a data directory. The engine that
// takes a directory's lock writes its Holder (Config.Holder, with its PID)
// into DIR/LOCK, so a second process that finds the directory held can
// say by whom, and how to reach it instead.
type Holder struct {
	PID int `json:"pid"`
	// What names the holder ("rcpd serve"); URL is an RCP endpoint that
	// reaches it ("http://127.0.0.1:7700/rcp"), when it serves one.
	What string `json:"what,omitempty"`
	URL  string `json:"url,omitempty"`
}

// String is "rcpd serve (PID 4242, http://127.0.0.1:7700/rcp)", or
// "another process" when nothing is known.
func (h Holder) String() string {
	var in []string
	if h.PID > 0 {
		in = append(in, fmt.Sprintf("PID %d", h.PID))
	}
	if h.URL != "" {
		in = append(in, h.URL)
	}
	what := h.What
	if what == "" {
		what = "another process"
	}
	if len(in) == 0 {
		return what
	}
	return what + " (" + strings.Join(in, ", ") + ")"
}

// LockedError is the ErrLocked of a data directory, naming its holder.
type LockedError struct {
	Dir    string
	Holder Holder
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("engine: the data directory %s is in use by %s", e.Dir, e.Holder)
}

// Is makes errors.Is(err, ErrLocked) hold.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// HeldBy reports whether another process holds dir's lock, and which
// (as far as its LOCK file says). It does not take the lock: a process
// may take or release it right after.
func HeldBy(dir string) (Holder, bool) {
	var le *LockedError
	if err := probeLock(dir); errors.As(err, &le) {
		return le.Holder, true
	}
	return Holder{}, false
}

// holderRecord is what a lock holder writes into DIR/LOCK.
func holderRecord(h Holder) []byte {
	h.PID = os.Getpid()
	b, _ := json.Marshal(h) // a struct of strings and an int always marshals
	return append(b, '\n')
}

// readHolder parses DIR/LOCK's content (an empty or foreign file gives the
// zero Holder). What and URL are shown on a terminal: their control
// characters (escape sequences that would rewrite what is shown) are
// dropped, and each is cut at 256 bytes.
func readHolder(b []byte) Holder {
	var h Holder
	_ = json.Unmarshal(b, &h)
	h.What, h.URL = shown(h.What), shown(h.URL)
	return h
}

func shown(s string) string {
	s = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return -1
		}
		return r
	}, s)
	if len(s) > 256 {
		s = strings.ToValidUTF8(s[:256], "")
	}
	return s
}
