#!/usr/bin/env bash
# regen.sh: writes testdata/diff/after, the "after" side of the diff fixture:
# the node of ../bundles/iptables-healthy after its kube-proxy was switched to
# nftables mode and Service shop/cart was deleted. The rules come from the
# real kube-proxy v1.37.2 nftables proxier (../upstream/capture.sh) run on the
# cluster of ../upstream/inputs/shapes without shop/cart's Service and
# EndpointSlice; the bundle carries that cluster's exports. The "before" side
# is ../bundles/iptables-healthy itself.
#
# Needs root (capture.sh uses a scratch network namespace). Deterministic.
set -euo pipefail
cd "$(dirname "$0")"
here=$(pwd)
up=$here/../upstream
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$up" && go build -o "$tmp/kpgen" ./cmd/kpgen)

in=$tmp/in
cp -r "$up/inputs/shapes" "$in"
# Drop the List items of shop/cart: its Service and its EndpointSlice.
awk '
	function flush() {
		if (item != "" && !(item ~ /\n    namespace: shop\n/ && (item ~ /\n    name: cart\n/ || item ~ /\n      kubernetes.io\/service-name: cart\n/)))
			printf "%s", item
		item = ""
	}
	/^- / || /^kind: List/ { flush() }
	/^- / { item = $0 "\n"; next }
	item != "" { item = item $0 "\n"; next }
	{ print }
	END { flush() }
' "$up/inputs/shapes/cluster/cluster.yaml" >"$in/cluster/cluster.yaml"
KPGEN=$tmp/kpgen "$up/capture.sh" nftables "$in" "$here/after"
