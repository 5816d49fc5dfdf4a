package parsers

import "bytes"

// MaxLineLength is the longest line the line-oriented parsers accept; a
// longer line is hostile or garbage input.
const MaxLineLength = 64 << 10

// A Line is one line of an input: where it is and its text, without the
// line end.
type Line struct {
	Pos  Pos
	Text string
}

// Lines splits data, read from the file called name, into lines: a leading
// UTF-8 byte order mark and "\r" line ends are dropped, line numbers start
// at 1. A line longer than max bytes is an error naming it.
func Lines(name string, data []byte, max int) ([]Line, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	out := make([]Line, 0, bytes.Count(data, []byte("\n"))+1)
	n := 0
	for len(data) > 0 {
		n++
		var l []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			l, data = data, nil
		}
		if len(l) > max {
			return nil, Errorf(Pos{File: name, Line: n}, "line too long (%d bytes, limit %d)", len(l), max)
		}
		out = append(out, Line{Pos: Pos{File: name, Line: n}, Text: string(bytes.TrimSuffix(l, []byte("\r")))})
	}
	return out, nil
}
