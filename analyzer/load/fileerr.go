package load

import (
	"errors"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
)

// positioned returns the errors of reading the file name as positioned
// errors, whose files a caller renames in place (a bundle's name put
// before its member's, see the command's naming of its inputs): err
// itself when it is a positioned error or a list of them; a positioned
// error wrapped with context (fmt.Errorf("decoding ...: %w", pe)) with
// the context moved into the message of each one it wraps
// ("name:3: decoding ...: what"), since a wrapper keeps the text it was
// made with; any other error as an error of the whole file ("name: ...").
// The positions of the errors are left as they are: those of another
// file (a ConfigMap's configuration read from the ConfigMap) stay its.
func positioned(name string, err error) parsers.ErrorList {
	switch e := err.(type) {
	case parsers.ErrorList:
		return e
	case *parsers.Error:
		return parsers.ErrorList{e}
	}
	text := err.Error()
	var list parsers.ErrorList
	var one *parsers.Error
	var inner string
	switch {
	case errors.As(err, &list) && len(list) > 0:
		inner = list.Error()
	case errors.As(err, &one):
		list, inner = parsers.ErrorList{one}, one.Error()
	}
	if i := strings.Index(text, inner); inner != "" && i >= 0 {
		prefix, suffix := text[:i], text[i+len(inner):]
		out := make(parsers.ErrorList, len(list))
		for j, pe := range list {
			out[j] = &parsers.Error{Pos: pe.Pos, Msg: prefix + pe.Msg + suffix}
		}
		return out
	}
	return parsers.ErrorList{{Pos: parsers.Pos{File: name}, Msg: text}}
}

// fileErrors are the errors of files that are not positioned in them:
// each names its file, which a caller may rename in place, and they print
// one after another ("a: ...; b: ...").
type fileErrors parsers.ErrorList

func (l fileErrors) Error() string {
	texts := make([]string, len(l))
	for i, e := range l {
		texts[i] = e.Error()
	}
	return strings.Join(texts, "; ")
}

// Unwrap returns the errors, so that errors.As and a caller renaming
// their files see each.
func (l fileErrors) Unwrap() []error { return parsers.ErrorList(l).Unwrap() }
