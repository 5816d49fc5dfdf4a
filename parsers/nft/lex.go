package nft

import "fmt"

// token kinds
const (
	tWord    = 'w' // a run of non-blank, non-punctuation characters
	tString  = 's' // a quoted string; text includes the quotes
	tPunct   = 'p' // one of { } , ; ( )
	tComment = '#' // a comment to the end of the line; text excludes '#'
)

// token is a lexical token of a line of nft text.
// Its fields are ordered and sized so that it takes 32 bytes: the tokens
// of a large set's elements are held together while they are read.
type token struct {
	kind byte
	sp   bool  // preceded by blank space (or at the start of the line)
	off  int32 // byte offsets of the token in its line (lines are at most maxLineLen bytes)
	text string
	end  int32
	line int32 // 1-based line number
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' }

// blanks holds the bytes isBlank accepts.
const blanks = " \t\r\v\f"

func isPunct(c byte) bool {
	switch c {
	case '{', '}', ',', ';', '(', ')':
		return true
	}
	return false
}

// lexLine splits one line into tokens, appending them to toks.
func lexLine(toks []token, s string, line int) ([]token, error) {
	i := 0
	sp := true
	for i < len(s) {
		c := s[i]
		switch {
		case isBlank(c):
			i++
			sp = true
			continue
		case c == '#':
			toks = append(toks, token{kind: tComment, sp: sp, text: s[i+1:], off: int32(i), end: int32(len(s)), line: int32(line)})
			return toks, nil
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				j++
			}
			if j >= len(s) {
				return toks, fmt.Errorf("unterminated string")
			}
			toks = append(toks, token{kind: tString, sp: sp, text: s[i : j+1], off: int32(i), end: int32(j + 1), line: int32(line)})
			i = j + 1
		case isPunct(c):
			toks = append(toks, token{kind: tPunct, sp: sp, text: s[i : i+1], off: int32(i), end: int32(i + 1), line: int32(line)})
			i++
		default:
			j := i
			for j < len(s) && !isBlank(s[j]) && !isPunct(s[j]) && s[j] != '"' && s[j] != '#' {
				j++
			}
			toks = append(toks, token{kind: tWord, sp: sp, text: s[i:j], off: int32(i), end: int32(j), line: int32(line)})
			i = j
		}
		sp = false
	}
	return toks, nil
}

// unquote strips the quotes of a string token's text.
func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}
