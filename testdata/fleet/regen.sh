#!/usr/bin/env bash
# regen.sh: writes the three node bundles of testdata/fleet/nodes (node-a, node-b,
# node-c) from the inputs of the mini cluster (../upstream/inputs/mini) with
# the real kube-proxy v1.37.2 iptables proxier (../upstream/capture.sh).
#
# node-a and node-b are healthy: their rules are what kube-proxy programs for
# the current Services and EndpointSlices on each node. node-c is stale: its
# rules are what kube-proxy programmed for an older state of the cluster, in
# which Service shop/sessions did not exist yet and pod web-3 of shop/web still had
# the address 10.244.3.4 (it is 10.244.3.5 now); its bundle carries the
# current exports, like the others, as a collection would.
#
# Needs root (capture.sh uses a scratch network namespace). Deterministic.
set -euo pipefail
cd "$(dirname "$0")"
here=$(pwd)
up=$here/../upstream
mini=$up/inputs/mini
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$up" && go build -o "$tmp/kpgen" ./cmd/kpgen)

# node NAME LAST-OCTET POD-SUBNET ZONE: the Node object of a worker, made
# from node-a's (node-a's own is kept as it is).
node() {
	if [[ $1 == node-a ]]; then
		cat "$mini/cluster/node.yaml"
		return
	fi
	sed -e "s/node-a/$1/g" -e "s/192\.168\.10\.11/192.168.10.$2/" \
		-e "s#10\.244\.1\.0/24#10.244.$3.0/24#g" -e "s/zone-a/$4/" \
		-e "s/7e3c9a1b-2d4f-4e8a-9b6c-1f5d8e2a7c3b/7e3c9a1b-2d4f-4e8a-9b6c-1f5d8e2a7c$2/" \
		"$mini/cluster/node.yaml"
}

# stale: the cluster as it was before shop/sessions was created and pod web-3
# was rescheduled (drops the List items of shop/sessions, moves web-3 back).
stale() {
	awk '
		function flush() {
			if (item != "" && !(item ~ /\n    namespace: shop\n/ && (item ~ /\n    name: sessions\n/ || item ~ /\n      kubernetes.io\/service-name: sessions\n/)))
				printf "%s", item
			item = ""
		}
		/^- / || /^kind: List/ { flush() }
		/^- / { item = $0 "\n"; next }
		item != "" { item = item $0 "\n"; next }
		{ print }
		END { flush() }
	' "$mini/cluster/cluster.yaml" | sed 's/^    - 10\.244\.3\.5$/    - 10.244.3.4/'
}

for spec in "node-a 11 1 zone-a" "node-b 12 2 zone-b" "node-c 13 3 zone-c"; do
	set -- $spec
	in=$tmp/$1
	mkdir -p "$in/cluster" "$in/kube-proxy"
	cp "$mini/kube-proxy/config.yaml" "$in/kube-proxy/"
	cp "$mini/cluster/kube-proxy-configmap.yaml" "$in/cluster/"
	node "$@" >"$in/cluster/node.yaml"
	if [[ $1 == node-c ]]; then
		stale >"$in/cluster/cluster.yaml"
	else
		cp "$mini/cluster/cluster.yaml" "$in/cluster/"
	fi
	KPGEN=$tmp/kpgen "$up/capture.sh" iptables "$in" "$here/nodes/$1"
	# The exports are taken at collection time: the current cluster.
	cp "$mini/cluster/cluster.yaml" "$here/nodes/$1/cluster/cluster.yaml"
done
