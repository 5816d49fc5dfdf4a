package jsonstr

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestUnescape(t *testing.T) {
	for _, tc := range []struct {
		in   string // the text after the opening quote
		want string
		end  int // offset after the closing quote, or of the problem
		p    Problem
	}{
		{`abc"`, "abc", 4, OK},
		{`a\"\\\/\b\f\n\r\t"x`, "a\"\\/\b\f\n\r\t", 18, OK},
		{`\u00e9\u20AC"`, "é€", 13, OK},
		{`\ud83d\ude00"`, "😀", 13, OK},             // a surrogate pair
		{`\ud83d"`, "\ufffd", 7, OK},               // a lone high surrogate
		{`\ude00x"`, "\ufffdx", 8, OK},             // a lone low surrogate
		{`\ud83d\u0041"`, "\ufffdA", 13, OK},       // a high surrogate, then no low one
		{`\ud83d\ud83d\ude00"`, "\ufffd😀", 19, OK}, // two highs, then a low
		{`a` + "\x01" + `"`, "", 1, Control},
		{`a\x"`, "", 3, BadEscape},
		{`\u12g4"`, "", 2, BadUnicode},
		{`\u12"`, "", 2, BadUnicode},
		{`abc`, "", 3, Unterminated},
		{`abc\`, "", 4, Unterminated},
	} {
		got, end, p := Unescape(nil, tc.in, 0)
		if string(got) != tc.want || end != tc.end || p != tc.p {
			t.Errorf("Unescape(%q) = %q, %d, %v; want %q, %d, %v", tc.in, got, end, p, tc.want, tc.end, tc.p)
		}
		gotBytes, endBytes, pBytes := Unescape([]byte("x"), []byte(tc.in), 0)
		if pBytes != tc.p || endBytes != tc.end || p == OK && string(gotBytes) != "x"+tc.want {
			t.Errorf("Unescape([]byte(%q)) = %q, %d, %v; want the string's result after x", tc.in, gotBytes, endBytes, pBytes)
		}
	}
}

// FuzzUnescape checks Unescape against encoding/json: the same value for a
// string it reads, an error for one it refuses.
func FuzzUnescape(f *testing.F) {
	for _, s := range []string{`abc"`, `\ud83d\ude00"`, `\ud83d\u0041"`, `a\x"`, `\u12"`, `abc`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // encoding/json replaces invalid UTF-8; Unescape leaves it to its caller
		}
		data := `"` + s
		got, end, p := Unescape(nil, data, 1)
		var want string
		if p != OK {
			if err := json.Unmarshal([]byte(data), &want); err == nil {
				t.Fatalf("Unescape(%q): %v at %d, encoding/json reads %q", s, p, end, want)
			}
			return
		}
		if err := json.Unmarshal([]byte(data[:end]), &want); err != nil {
			t.Fatalf("Unescape(%q) = %q, encoding/json: %v", s, got, err)
		}
		if string(got) != want {
			t.Fatalf("Unescape(%q) = %q, encoding/json reads %q", s, got, want)
		}
	})
}
