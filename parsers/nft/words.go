package nft

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Words splits a line of nft's text into words as nft separates them: at
// blanks, a quoted string being one word, and so an anonymous set with its
// braces ("{ 80, 443 }"); punctuation not preceded by a blank stays in its
// word ("fin,syn,rst,ack"); a comment ("# xt_nfacct") gives "#" and its
// words. An unterminated string is an error.
func Words(s string) ([]string, error) {
	toks, err := lexLine(nil, s, 0)
	if err != nil {
		return nil, err
	}
	var out []string
	depth := 0
	for _, t := range toks {
		if t.kind == tComment {
			rest, err := Words(t.text)
			if err != nil {
				return nil, err
			}
			out = append(out, "#")
			out = append(out, rest...)
			continue
		}
		switch {
		case depth > 0 && t.sp:
			out[len(out)-1] += " " + t.text
		case depth > 0 || !t.sp && len(out) > 0:
			out[len(out)-1] += t.text
		default:
			out = append(out, t.text)
		}
		switch t.text {
		case "{":
			depth++
		case "}":
			depth = max(depth-1, 0)
		}
	}
	return out, nil
}

// RuleWords returns the words of r as nft lists it (see [Words]): of its
// line for text input; for JSON input, of the rendering of its
// statements, where a statement kept as JSON gives the words nft's text
// prints for an xt match or target it does not translate ("xt", "match",
// "recent") when it is one, else "unsupported-json" and the JSON.
func RuleWords(r *Rule) ([]string, error) {
	if r.Where == nil || r.Where.Path == "" {
		return Words(r.Raw)
	}
	var out []string
	for _, s := range r.Stmts {
		if u, ok := s.(*Unsupported); ok && u.Text == "" {
			out = append(out, xtWords(u.JSON)...)
			continue
		}
		w, err := Words(string(s.appendStmt(nil)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.Pos(), err)
		}
		out = append(out, w...)
	}
	if r.Comment != "" {
		out = append(out, "comment", `"`+r.Comment+`"`)
	}
	return out, nil
}

// xtWords returns the words of a statement kept as JSON: "xt match NAME"
// or "xt target NAME" for nft's {"xt": {"type": ..., "name": ...}}, else
// "unsupported-json" and the JSON.
func xtWords(js string) []string {
	var x struct {
		XT *struct{ Type, Name string } `json:"xt"`
	}
	if json.Unmarshal([]byte(js), &x) == nil && x.XT != nil && x.XT.Name != "" &&
		(x.XT.Type == "match" || x.XT.Type == "target") && !strings.ContainsAny(x.XT.Name, " \t\"{}") {
		return []string{"xt", x.XT.Type, x.XT.Name}
	}
	return []string{"unsupported-json", js}
}
