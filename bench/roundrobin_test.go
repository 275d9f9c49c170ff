package bench

import (
	"context"
	"encoding/json"
	"testing"
)

func TestRoundRobin(t *testing.T) {
	var got []string
	mk := func(name string) Caller {
		return CallerFunc(func(context.Context, string, any) (json.RawMessage, error) {
			got = append(got, name)
			return json.RawMessage(`{}`), nil
		})
	}
	rr := RoundRobin(mk("a"), mk("b"))
	for range 4 {
		if _, err := rr.Call(context.Background(), "ping", nil); err != nil {
			t.Fatal(err)
		}
	}
	if want := "a b a b"; fmtList(got) != want {
		t.Fatalf("calls went to %v, want %s", got, want)
	}
}

func fmtList(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}
