package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

func readAll(t *testing.T, r io.Reader, max int) (frames []string, oversize int) {
	t.Helper()
	rd := NewReader(r, max)
	for {
		f, err := rd.Next()
		if errors.Is(err, ErrFrameTooLarge) {
			oversize++
			continue
		}
		if errors.Is(err, io.EOF) {
			return frames, oversize
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		frames = append(frames, string(f))
	}
}

func TestReader(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		max      int
		want     []string
		oversize int
	}{
		{"one frame", "{\"a\":1}\n", 0, []string{`{"a":1}`}, 0},
		{"no trailing newline", "{\"a\":1}", 0, []string{`{"a":1}`}, 0},
		{"blank lines tolerated", "\n\n{\"a\":1}\n   \n\r\n{\"b\":2}\n\n", 0, []string{`{"a":1}`, `{"b":2}`}, 0},
		{"CRLF", "{\"a\":1}\r\n{\"b\":2}\r\n", 0, []string{`{"a":1}`, `{"b":2}`}, 0},
		{"leading BOM stripped", "\xef\xbb\xbf{\"a\":1}\n", 0, []string{`{"a":1}`}, 0},
		{"oversize skipped, reader recovers", strings.Repeat("x", 100) + "\n{\"a\":1}\n", 50, []string{`{"a":1}`}, 1},
		{"oversize spanning the buffer", strings.Repeat("y", 200<<10) + "\n{\"b\":2}\n", 1 << 10, []string{`{"b":2}`}, 1},
		{"oversize at EOF", "{\"a\":1}\n" + strings.Repeat("z", 100), 50, []string{`{"a":1}`}, 1},
		{"exactly at the cap", strings.Repeat("w", 50) + "\n", 50, []string{strings.Repeat("w", 50)}, 0},
		{"empty input", "", 0, nil, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, split := range []bool{false, true} {
				var r io.Reader = strings.NewReader(tc.in)
				if split {
					r = iotest.OneByteReader(r) // messages split across reads
				}
				got, over := readAll(t, r, tc.max)
				if strings.Join(got, "|") != strings.Join(tc.want, "|") || over != tc.oversize {
					t.Fatalf("split=%v: got %q (%d oversize), want %q (%d)", split, got, over, tc.want, tc.oversize)
				}
			}
		})
	}
}

func TestWriter(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if err := w.WriteFrame([]byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFrame([]byte("{\"a\":\n1}")); err == nil {
		t.Fatal("accepted an embedded newline")
	}
	if buf.String() != "{\"a\":1}\n" {
		t.Fatalf("%q", buf.String())
	}
	ew := NewWriter(errWriter{})
	first, second := ew.WriteFrame([]byte(`{}`)), ew.WriteFrame([]byte(`{}`))
	if first == nil || second == nil {
		t.Fatal("write errors must stick")
	}
}

type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestDecode(t *testing.T) {
	tests := []struct {
		in    string
		kinds []Kind
		code  int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"m"}`, []Kind{KindRequest}, 0},
		{`{"jsonrpc":"2.0","method":"m"}`, []Kind{KindNotification}, 0},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, []Kind{KindResponse}, 0},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, []Kind{KindResponse}, 0},
		{`{"jsonrpc":"2.0","id":null,"method":"m"}`, []Kind{KindInvalid}, 0},
		{`[{"jsonrpc":"2.0","id":1,"method":"m"},5]`, []Kind{KindRequest, KindInvalid}, 0},
		{`[]`, nil, CodeInvalidRequest},
		{`{`, nil, CodeParseError},
		{"\"\xff\"", nil, CodeParseError},
		{strings.Repeat("[", 300) + strings.Repeat("]", 300), nil, CodeParseError},
	}
	for _, tc := range tests {
		f := Decode([]byte(tc.in), Options{})
		if f.Code != tc.code {
			t.Errorf("%.40s: code %d, want %d", tc.in, f.Code, tc.code)
			continue
		}
		var kinds []Kind
		for _, m := range f.Messages {
			kinds = append(kinds, m.Kind)
		}
		if len(kinds) != len(tc.kinds) {
			t.Errorf("%s: kinds %v, want %v", tc.in, kinds, tc.kinds)
			continue
		}
		for i := range kinds {
			if kinds[i] != tc.kinds[i] {
				t.Errorf("%s: kinds %v, want %v", tc.in, kinds, tc.kinds)
			}
		}
	}
	if IDKey(json.RawMessage(`"a\u0062"`)) != IDKey(json.RawMessage(`"ab"`)) || IDKey(json.RawMessage(`1`)) == IDKey(json.RawMessage(`"1"`)) {
		t.Fatal("IDKey")
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}`, `[{"jsonrpc":"2.0","method":"x"},1]`, `[]`, `{"method":"m"}`,
		`{"jsonrpc":"2.0","id":1,"result":{"a":[1,2]}}`, `{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"m","data":null}}`, "\xff", `[[[[]]]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr := Decode(b, Options{MaxDepth: 64})
		checkSameAsSlow(t, b, 64)
		if fr.Code != 0 {
			if fr.Code != CodeParseError && fr.Code != CodeInvalidRequest {
				t.Fatalf("code %d", fr.Code)
			}
			return
		}
		if len(fr.Messages) == 0 {
			t.Fatal("a decodable frame has no messages")
		}
		for _, m := range fr.Messages {
			switch m.Kind {
			case KindRequest:
				if _, ok := validID(m.ID); !ok {
					t.Fatalf("request with id %q", m.ID)
				}
				out := Response(m.ID, []byte("{}"))
				if !json.Valid(out) {
					t.Fatalf("response for id %q is not JSON: %s", m.ID, out)
				}
			case KindInvalid:
				if m.Code != CodeInvalidRequest {
					t.Fatalf("invalid member code %d", m.Code)
				}
			}
			if m.Params != nil && !json.Valid(m.Params) {
				t.Fatal("params not JSON")
			}
		}
	})
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n\n{\"b\":2}\r\n"), uint8(3), uint16(16))
	f.Add([]byte("\xef\xbb\xbf"+strings.Repeat("x", 40)+"\n{}"), uint8(1), uint16(8))
	f.Fuzz(func(t *testing.T, in []byte, _ uint8, max uint16) {
		limit := int(max%512) + 1
		r := NewReader(iotest.HalfReader(bytes.NewReader(in)), limit)
		for range len(in) + 2 {
			fr, err := r.Next()
			if errors.Is(err, ErrFrameTooLarge) {
				continue
			}
			if err != nil {
				return
			}
			if len(fr) > limit || bytes.IndexByte(fr, '\n') >= 0 || len(bytes.TrimSpace(fr)) == 0 {
				t.Fatalf("bad frame %q (limit %d)", fr, limit)
			}
		}
	})
}

// checkSameAsSlow asserts that Decode (single-pass fast path) answers b
// exactly as the encoding/json-based decoder does.
func checkSameAsSlow(t *testing.T, b []byte, maxDepth int) {
	t.Helper()
	got := Decode(b, Options{MaxDepth: maxDepth})
	var want Frame
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	if !utf8.Valid(b) {
		want = Frame{Code: CodeParseError, Reason: "frame is not valid UTF-8"}
	} else {
		want = decodeSlow(b, maxDepth)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\nfast %+v\nslow %+v", b, got, want)
	}
}

func TestDecodeFastMatchesSlow(t *testing.T) {
	frames := []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"nonce":"x"}}`,
		` {"jsonrpc":"2.0","id":"a\u0062","method":"retrieve","params":{"query":"q","k":2,"_meta":{"a":[1,{"b":null}]}}} `,
		`{"JSONRPC":"2.0","Id":7,"METHOD":"ping"}`,
		`{"jsonrpc":"2.0","id":1,"method":"m","method":"n","params":null}`,
		`{"jsonrpc":"2.0","id":1,"method":"m\u0041\n","params":[1,2]}`,
		`{"jsonrpc":"2.0","id":1,"method":"café","params":"x"}`,
		`{"jsonrpc":"2.0","id":1,"method":5}`,
		`{"jsonrpc":"2.0","id":true,"method":"m"}`,
		`{"jsonrpc":"2.0","id":null,"method":"m"}`,
		`{"jsonrpc":"1.0","id":3,"method":"m"}`,
		`{"jsonrpc":"2.0","id":-1.5e+3,"result":{"a":[1,2,{"b":"c"}]}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x","data":{"k":1}}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"error":null,"result":null}`,
		`{"method":"ping","params":{}}`,
		`{"method":"ping","id":1}`,
		`{"jsonr\u0070c":"2.0","id":1,"method":"m"}`,
		"{\"j\u017fonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}",
		"{\"jſonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}",
		"\u00a0{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}",
		"\t{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\r\n",
		`[{"jsonrpc":"2.0","id":1,"method":"m"},5,"x",null,[],{},{"method":"n"}]`,
		`[]`, ` [ ] `, `[1]`, `{}`, `1`, `"x"`, `null`, `true`, ``, `   `,
		`{`, `[`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `01`, `-`, `1.`, `1e`, `.5`, `+1`, `1 2`,
		`{"a":"\x"}`, `{"a":"\u12g4"}`, "{\"a\":\"\x01\"}", `{"a":tru}`, `{"a":nul}`, `{} {}`, `{}]`,
		`{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}}`,
		strings.Repeat("[", 64) + strings.Repeat("]", 64),
		strings.Repeat("[", 65) + strings.Repeat("]", 65),
		strings.Repeat("[", 65) + `{"a":}`,
		`{"a":1}` + strings.Repeat("[", 70),
	}
	for _, f := range frames {
		checkSameAsSlow(t, []byte(f), 64)
		checkSameAsSlow(t, []byte(f), 0)
	}
}

// TestMember: Member agrees with encoding/json decoding into a tagged field.
func TestMember(t *testing.T) {
	objs := []string{`{"nonce":1}`, ` {"a":{"nonce":2},"NONCE":"x"} `, `{"nonce":1,"nonce":[1,{"b":2}]}`, `{}`, `{"nonce":null}`,
		`{"non\u0063e":3}`, `{"noncé":3}`, `{"nonce":1,}`, `[1]`, `{"nonce":1} x`, `{"Nonce" : "a\"b" }`}
	for _, o := range objs {
		var p struct {
			Nonce json.RawMessage `json:"nonce"`
		}
		err := json.Unmarshal([]byte(o), &p)
		val, found, ok := Member([]byte(o), "nonce")
		if !ok {
			if err == nil && !strings.Contains(o, "\\u") && !strings.Contains(o, "é") {
				t.Errorf("%s: declined a plain object", o)
			}
			continue
		}
		if err != nil || found != (p.Nonce != nil) || string(val) != string(p.Nonce) {
			t.Errorf("%s: Member %q %v, encoding/json %q %v", o, val, found, p.Nonce, err)
		}
	}
}

// BenchmarkDecode compares the single-pass decoder (Decode) with the
// encoding/json one it falls back to (decodeSlow, the previous Decode).
func BenchmarkDecode(b *testing.B) {
	frames := map[string]string{
		"ping":     `{"jsonrpc":"2.0","id":12345,"method":"ping","params":{"nonce":12345}}`,
		"retrieve": `{"jsonrpc":"2.0","id":"req-12345","method":"retrieve","params":{"query":"eiffel tower paris","k":10,"mode":"hybrid","filter":{"all":[{"field":"lang","op":"eq","value":"en"}]},"_meta":{"progressToken":7,"deadlineMs":5000}}}`,
		"batch":    `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping","params":{"nonce":"x"}},{"jsonrpc":"2.0","method":"notifications/cancel","params":{"id":1}}]`,
	}
	for _, name := range []string{"ping", "retrieve", "batch"} {
		f := []byte(frames[name])
		b.Run(name+"/single-pass", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				Decode(f, Options{})
			}
		})
		b.Run(name+"/encoding-json", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if utf8.Valid(f) {
					decodeSlow(f, DefaultMaxDepth)
				}
			}
		})
	}
}

func TestFrameBufferedIgnoresBlankLines(t *testing.T) {
	tests := []struct {
		in   string
		want bool // after the first frame has been read
	}{
		{"{\"a\":1}\n\n", false},
		{"{\"a\":1}\n \t\r\n", false},
		{"{\"a\":1}\n\n{\"b\":2}\n", true},
		{"{\"a\":1}\n{\"b\":2", false},
	}
	for _, tt := range tests {
		r := NewReader(strings.NewReader(tt.in), 1<<20)
		if _, err := r.Next(); err != nil {
			t.Fatalf("%q: %v", tt.in, err)
		}
		// Fill the buffer the way the server sees it: everything already read.
		if got := r.FrameBuffered(); got != tt.want {
			t.Errorf("%q: FrameBuffered = %v, want %v", tt.in, got, tt.want)
		}
	}
}
