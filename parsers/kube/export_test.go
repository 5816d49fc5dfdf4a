package kube

// CheckDirect splits the export in data and decodes its Services and
// EndpointSlices with the direct decoder and with encoding/json. It
// returns how many of them the direct decoder read, how many there are,
// and an error when it read one differently.
func CheckDirect(name string, data []byte) (read, total int, err error) {
	split := splitYAML
	if isJSON(data) {
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
