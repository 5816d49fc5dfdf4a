package checks

import (
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/analyzer/model"
)

// TestLegacyBlind checks when a legacy Endpoints object cannot prove a
// programmed endpoint it does not list stale: when it lists no usable
// endpoint (kube-proxy then uses the terminating ones it omits) and when
// it is truncated; EndpointSlices always can.
func TestLegacyBlind(t *testing.T) {
	ready := []*model.Endpoint{{Ready: true, Serving: true}}
	for _, tc := range []struct {
		name      string
		source    string
		truncated bool
		want      []*model.Endpoint
		blind     string // in the reason; "" when it can judge
	}{
		{"slices without usable endpoints", model.EndpointSourceSlices, false, nil, ""},
		{"legacy with ready endpoints", model.EndpointSourceLegacy, false, ready, ""},
		{"legacy without ready endpoints", model.EndpointSourceLegacy, false, nil, "serving terminating endpoints"},
		{"legacy truncated", model.EndpointSourceLegacy, true, ready, "cut at 1,000 addresses"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := &model.ServicePort{EndpointSource: tc.source, EndpointsTruncated: tc.truncated}
			got := legacyBlind(sp, tc.want)
			if tc.blind == "" && got != "" || tc.blind != "" && !strings.Contains(got, tc.blind) {
				t.Errorf("legacyBlind = %q, want %q", got, tc.blind)
			}
		})
	}
}
