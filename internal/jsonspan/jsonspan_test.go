package jsonspan

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestValueEnd(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int // index just past the first value; -1 for none
	}{
		{`"a\"b" ,`, 6},
		{`"a\\" ,`, 5},
		{`{"k": [1, "]}", {"x": null}]} rest`, 29},
		{`[1, 2]`, 6},
		{`-1.5e+3,`, 7},
		{`true}`, 4},
		{`null`, 4},
		{`"unterminated`, -1},
		{`{"k": [1, 2}`, -1},
		{`,`, -1},
		{``, -1},
	} {
		if got := ValueEnd([]byte(tc.in), 0); got != tc.want {
			t.Errorf("ValueEnd(%q) = %d, want %d", tc.in, got, tc.want)
		}
		if tc.want > 0 && !json.Valid([]byte(tc.in[:tc.want])) {
			t.Errorf("ValueEnd(%q): %q is not one JSON value", tc.in, tc.in[:tc.want])
		}
	}
}

func TestSkipSpace(t *testing.T) {
	if got := SkipSpace([]byte(" \t\r\n x"), 0); got != 5 {
		t.Errorf("SkipSpace: got %d, want 5", got)
	}
	if got := SkipSpace([]byte("  "), 0); got != 2 {
		t.Errorf("SkipSpace of spaces only: got %d, want 2", got)
	}
}

func TestHex4(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want rune
		ok   bool
	}{
		{"00e9", 'é', true},
		{"00E9rest", 'é', true},
		{"d83d", 0xd83d, true},
		{"12g4", 0, false},
		{"+123", 0, false},
		{"abc", 0, false},
	} {
		r, ok := Hex4([]byte(tc.in))
		if r != tc.want || ok != tc.ok {
			t.Errorf("Hex4(%q) = %q, %v; want %q, %v", tc.in, r, ok, tc.want, tc.ok)
		}
	}
}

// FuzzValueEnd: on any input that is one JSON value (after leading space),
// ValueEnd finds exactly its end.
func FuzzValueEnd(f *testing.F) {
	for _, s := range []string{`"x"`, `{"a":[1,{"b":"}"}]}`, `-0.5`, `[true,false,null]`, `"\\\""`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		if !json.Valid(b) {
			return
		}
		i := SkipSpace(b, 0)
		e := ValueEnd(b, i)
		if e < 0 || SkipSpace(b, e) != len(b) {
			t.Errorf("ValueEnd(%q, %d) = %d, want the end of the value", s, i, e)
		}
	})
}

// Unescape agrees with encoding/json on every escape JSON has, and
// refuses what JSON refuses.
func TestUnescape(t *testing.T) {
	for _, esc := range []string{`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u0041`, `\u00e9`, `\u20AC`, `\u0000`} {
		var want string
		if err := json.Unmarshal([]byte(`"`+esc+`"`), &want); err != nil {
			t.Fatal(err)
		}
		r, n, ok := Unescape([]byte(esc + "rest"))
		if !ok || n != len(esc) || string(r) != want {
			t.Errorf("Unescape(%s): got %q, %d, %v; want %q, %d", esc, r, n, ok, want, len(esc))
		}
	}
	if r, n, ok := Unescape([]byte(`\ud83d\ude00`)); !ok || n != 6 || r != 0xd83d {
		t.Errorf(`a surrogate half: got %x, %d, %v; want the code unit d83d as it is`, r, n, ok)
	}
	for _, bad := range []string{`\`, `\x`, `\u12`, `\u12g4`, `x`, `\'`} {
		if _, _, ok := Unescape([]byte(bad)); ok {
			t.Errorf("Unescape(%s): got ok, want refused", bad)
		}
	}
}

func TestDeeper(t *testing.T) {
	for _, tc := range []struct {
		in    string
		limit int
		want  bool
	}{
		{`{"a":[1,{"b":[]}]}`, 4, false},
		{`{"a":[1,{"b":[]}]}`, 3, true},
		{`["[[[[", "{{{{"]`, 1, false},
		{`"\"[[["`, 0, false},
		{`[[]][[]]`, 2, false},
		{`[[[`, 2, true},
		{`["unterminated [[[`, 1, false},
		{``, 0, false},
	} {
		if got := Deeper([]byte(tc.in), tc.limit); got != tc.want {
			t.Errorf("Deeper(%q, %d) = %v, want %v", tc.in, tc.limit, got, tc.want)
		}
	}
}

func TestSpaced(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{`{"a":1,"b":[true,null]}`, false},
		{`{"a b":"c\td\"  e\\"}`, false},
		{`{"a": 1}`, true},
		{"{\"a\":1}\n", true},
		{`{"a":"\\" , "b":2}`, true},
		{`{"a":"\\\" x"}`, false},
		{`{"a":"no end`, true},
		{``, false},
	} {
		if got := Spaced([]byte(tc.in)); got != tc.want {
			t.Errorf("Spaced(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// FuzzSpaced: where Spaced says a JSON text has no white space outside its
// strings, compacting it changes nothing.
func FuzzSpaced(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a": "b c"}`, `["x\"",1 ]`, `{"k":"\\"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var buf bytes.Buffer
		if json.Compact(&buf, data) != nil {
			return
		}
		if !Spaced(data) && !bytes.Equal(buf.Bytes(), data) {
			t.Errorf("Spaced(%q) = false, but compacting gives %q", data, buf.Bytes())
		}
	})
}
