package report

import (
	"bytes"
	"strings"
	"testing"
)

func TestWrapWords(t *testing.T) {
	for _, tc := range []struct {
		in    string
		width int
		want  []string
	}{
		{"short", 10, []string{"short"}},
		{"KUBE-SVC-67NZLRHBNDSAWJRO forwards to 10.244.3.4:8080", 30, []string{"KUBE-SVC-67NZLRHBNDSAWJRO", "forwards to 10.244.3.4:8080"}},
		// Names stay whole, even where the line would have room for part.
		{"to shop/web:http now", 13, []string{"to", "shop/web:http", "now"}},
		// Spacing inside a line is kept; spaces where a line breaks go.
		{"--nfacct-name  localhost_nps -j X", 20, []string{"--nfacct-name", "localhost_nps -j X"}},
		{"a  b", 10, []string{"a  b"}},
		// Only a word wider than the line is cut.
		{"x 0123456789abcdef y", 8, []string{"x", "01234567", "89abcdef", "y"}},
		{"one\ntwo three", 5, []string{"one", "two", "three"}},
	} {
		got := wrapWords(tc.in, tc.width)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("wrapWords(%q, %d) = %q, want %q", tc.in, tc.width, got, tc.want)
		}
	}
	if got := wrapHanging("aaa bbb ccc", 7, 3); strings.Join(got, "|") != "aaa bbb|ccc" {
		t.Errorf("wrapHanging: %q", got)
	}
}

// TestFitTable: a table as wide as its content; the flexible column wraps,
// then is dropped; then columns wrap at spaces; then rows become records.
func TestFitTable(t *testing.T) {
	th := newTheme(&bytes.Buffer{}, false)
	cols := func() []column {
		return []column{
			{header: "#", cells: []string{"1", "2"}, key: true},
			{header: "SERVICE", cells: []string{"shop/web:http (TCP)", "kube-system/kube-dns:dns-tcp (TCP)"}, key: true},
			{header: "CHECK", cells: []string{"endpoint-stale", "service-missing"}},
			{header: "FINDING", cells: []string{"KUBE-SVC-67NZLRHBNDSAWJRO forwards to 10.244.3.4:8080, which no EndpointSlice lists", "no entry"}, flex: true, minFlex: 20, drop: 1},
		}
	}
	for _, tc := range []struct {
		width int
		want  string
	}{
		{140, "" +
			"#  SERVICE                             CHECK            FINDING\n" +
			"1  shop/web:http (TCP)                 endpoint-stale   KUBE-SVC-67NZLRHBNDSAWJRO forwards to 10.244.3.4:8080, which no EndpointSlice lists\n" +
			"2  kube-system/kube-dns:dns-tcp (TCP)  service-missing  no entry\n"},
		{90, "" +
			"#  SERVICE                             CHECK            FINDING\n" +
			"1  shop/web:http (TCP)                 endpoint-stale   KUBE-SVC-67NZLRHBNDSAWJRO forwards\n" +
			"                                                        to 10.244.3.4:8080, which no\n" +
			"                                                        EndpointSlice lists\n" +
			"2  kube-system/kube-dns:dns-tcp (TCP)  service-missing  no entry\n"},
		{60, "" +
			"#  SERVICE                             CHECK\n" +
			"1  shop/web:http (TCP)                 endpoint-stale\n" +
			"2  kube-system/kube-dns:dns-tcp (TCP)  service-missing\n"},
		{50, "" +
			"#  SERVICE                       CHECK\n" +
			"1  shop/web:http (TCP)           endpoint-stale\n" +
			"2  kube-system/kube-dns:dns-tcp  service-missing\n" +
			"   (TCP)\n"},
		{40, "" +
			"1  shop/web:http (TCP)\n" +
			"  check  endpoint-stale\n" +
			"2  kube-system/kube-dns:dns-tcp (TCP)\n" +
			"  check  service-missing\n"},
	} {
		if got := fitTable(th, cols(), tc.width); got != tc.want {
			t.Errorf("width %d:\n%s\nwant:\n%s", tc.width, got, tc.want)
		}
	}
}
