package kube

import "bytes"

// CheckDirect splits the export in data and decodes its Services and
// EndpointSlices with the direct decoder and with encoding/json. It
// returns how many of them the direct decoder read, how many there are,
// and an error when it read one differently.
func CheckDirect(name string, data []byte) (read, total int, err error) {
	split := splitYAML
	if IsJSON(data) {
		split = splitJSON
	}
	if err := split(name, data, func(c chunk) {
		if c.materialize(name, nil) != nil {
			return
		}
		if c.kind != "Service" && c.kind != "EndpointSlice" {
			return
		}
		total++
		js := directJSON(&c)
		if js == nil {
			return
		}
		taken, cerr := compareDirect(js)
		if taken {
			read++
		}
		if cerr != nil && err == nil {
			err = cerr
		}
	}); err != nil {
		return 0, 0, err
	}
	return read, total, err
}

// SplitJSON splits the JSON export in data into objects without decoding
// them, returning how many there are: from memory, or, with streamed,
// reading it from a reader as ParseReader does (each object lets go of
// its text at once, as a decoder keeping up would).
func SplitJSON(data []byte, streamed bool) (int, error) {
	n := 0
	emit := func(c chunk) {
		n++
		c.blk.release()
	}
	if !streamed {
		return n, splitJSON("export.json", data, emit)
	}
	head, rest, err := readHead(bytes.NewReader(data))
	if err != nil {
		return 0, err
	}
	return n, splitJSONFrom("export.json", head, rest, emit)
}
