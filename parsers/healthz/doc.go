// Package healthz parses the body kube-proxy's health server (port 10256)
// returns on /healthz and /livez, in both of its historic shapes:
//
//   - up to Kubernetes 1.32 a hand-written object whose times are Go
//     time.Time.String() values, with the monotonic clock reading:
//     {"lastUpdated": "2020-06-03 23:59:53.688063083 +0000 UTC m=+202.631797660","currentTime": "..."}
//     (1.28 added "nodeEligible" on /healthz);
//   - from 1.33 the json.Marshal of kube-proxy's ProxyHealth type, with
//     RFC 3339 times, an overall "healthy" and a per-IP-family "status":
//     {"lastUpdated":"...","currentTime":"...","nodeEligible":true,"healthy":true,"status":{"IPv4":{"lastUpdated":"...","healthy":true}}}
//
// A saved `curl -i` response is accepted too: an HTTP status line and
// headers before the body give the status code (200 healthy, 503 not).
package healthz
