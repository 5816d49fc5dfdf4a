package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/proxyscan/proxyscan/analyzer/checks"
	"github.com/proxyscan/proxyscan/analyzer/model"
)

// TestTableObjects: the table lists the objects of a finding that one
// cause explains for several after its message, one a line, the first
// maxObjects and how many more, within the width; a finding with one
// object or none lists none.
func TestTableObjects(t *testing.T) {
	for _, tc := range []struct {
		objects, lines int
		more           string
	}{
		{0, 0, ""},
		{1, 0, ""},
		{2, 2, ""},
		{maxObjects, maxObjects, ""},
		{maxObjects + 5, maxObjects + 1, "· and 5 more (-o json lists every one)"},
	} {
		t.Run(fmt.Sprint(tc.objects), func(t *testing.T) {
			f := checks.Finding{Check: "endpoint-stale", Severity: checks.Error, Service: "kube-system/dns",
				Message:  "the rules of kube-system/dns lag its EndpointSlices",
				Evidence: []model.Evidence{{File: "node/iptables-save.txt", Line: 7, Text: ":KUBE-SVC-2KKYJRIGYGQNRODB - [0:0]"}}}
			for i := range tc.objects {
				f.Objects = append(f.Objects, fmt.Sprintf("10.244.3.%d:53 of port dns-tcp (ready, on node node-c) not programmed in KUBE-SVC-3RVWGMRXZPMMAFG6", i))
			}
			r := &Report{Findings: []checks.Finding{f}, Summary: Summary{Error: 1}}
			var buf bytes.Buffer
			if err := RenderTable(&buf, r, Options{Width: 80}); err != nil {
				t.Fatal(err)
			}
			bullets, more := 0, ""
			for _, line := range strings.Split(buf.String(), "\n") {
				if n := utf8.RuneCountInString(line); n > 80 {
					t.Errorf("line %d wide: %s", n, line)
				}
				if l := strings.TrimSpace(line); strings.HasPrefix(l, "· ") {
					bullets++
					if strings.HasPrefix(l, "· and ") {
						more = l
					}
				}
			}
			if bullets != tc.lines || more != tc.more {
				t.Errorf("%d object lines (last %q), want %d (%q):\n%s", bullets, more, tc.lines, tc.more, buf.String())
			}
			if i, j := strings.Index(buf.String(), "· "), strings.Index(buf.String(), "node/iptables-save.txt:7"); tc.lines > 0 && (i < 0 || i > j) {
				t.Errorf("objects after the evidence:\n%s", buf.String())
			}
		})
	}
}
