#!/usr/bin/env bash
# bench-compare.sh PROXYSCAN
#
# Times `proxyscan analyze` of a generated 10,000-Service / 55,000-endpoint
# iptables-save dump plus its cluster export, spelt three ways: compact
# JSON (as `kubectl get --raw` or an API client returns it), indented JSON
# (as `kubectl get -o json` prints it, about twice the bytes) and YAML,
# against the real `iptables-restore --test` reading the same dump in a
# scratch network namespace, and prints both, their ratio and proxyscan's
# peak RSS against the input size; then `proxyscan trace` of one packet to
# a cluster IP and `proxyscan expect` of the same node, read as a bundle
# (node/iptables-save.txt, cluster/cluster.json, kube-proxy/config.yaml).
# Each command runs RUNS times (default 5)
# and the median is reported, in wall-clock seconds and in CPU seconds
# (user + system: steadier than wall time on a shared machine). Needs root
# (network namespace) and GNU time.
set -euo pipefail

bin=${1:?usage: bench-compare.sh PROXYSCAN}
runs=${RUNS:-5}
[ "$(id -u)" = 0 ] || { echo "bench-compare: needs root (it creates a network namespace)" >&2; exit 2; }
command -v iptables-restore >/dev/null || { echo "bench-compare: iptables-restore not found (apt-get install iptables)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench-compare: GNU time not found (apt-get install time)" >&2; exit 2; }

dir=$(mktemp -d)
ns=proxyscan-bench-$$
cleanup() { ip netns del "$ns" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
echo "generating inputs in $dir ..."
go run ./internal/benchgen/cmd/benchgen -out "$dir"
ip netns add "$ns"
dump=$dir/node/iptables-save.txt

# measure CMD...: prints "seconds max-rss-kb cpu-seconds": the median of
# each over the runs.
measure() {
	local out=() i
	for ((i = 0; i < runs; i++)); do
		out+=("$(/usr/bin/time -f '%e %M %U %S' "$@" 2>&1 >/dev/null | tail -n 1)")
	done
	local mid=$(((runs + 1) / 2))
	printf '%s %s %s\n' \
		"$(printf '%s\n' "${out[@]}" | awk '{print $1}' | sort -n | sed -n "${mid}p")" \
		"$(printf '%s\n' "${out[@]}" | awk '{print $2}' | sort -n | sed -n "${mid}p")" \
		"$(printf '%s\n' "${out[@]}" | awk '{print $3 + $4}' | sort -n | sed -n "${mid}p")"
}

restore=$(measure sh -c "ip netns exec $ns iptables-restore --test < $dump")
compact=$(measure "$bin" analyze "$dump" "$dir/cluster/cluster-compact.json" "$dir/kube-proxy/config.yaml" -o json)
json=$(measure "$bin" analyze "$dump" "$dir/cluster/cluster.json" "$dir/kube-proxy/config.yaml" -o json)
yaml=$(measure "$bin" analyze "$dump" "$dir/cluster/cluster.yaml" "$dir/kube-proxy/config.yaml" -o json)

# The node as a bundle, and a cluster IP and port of a Service of it
# (the middle one of nat KUBE-SERVICES).
bundle=$dir/bundle
mkdir -p "$bundle/node" "$bundle/cluster" "$bundle/kube-proxy"
ln "$dump" "$bundle/node/iptables-save.txt"
ln "$dir/cluster/cluster.json" "$bundle/cluster/cluster.json"
ln "$dir/kube-proxy/config.yaml" "$bundle/kube-proxy/config.yaml"
dst=$(grep -E '^-A KUBE-SERVICES -d [0-9.]+/32 -p tcp .*--dport [0-9]+ ' "$dump" |
	awk '{ a[NR] = $0 } END { $0 = a[int((NR + 1) / 2)]; for (i = 1; i < NF; i++) { if ($i == "-d") ip = $(i + 1); if ($i == "--dport") port = $(i + 1) }; sub("/32", "", ip); print ip ":" port }')
tracem=$(measure "$bin" trace "$bundle" --dst "$dst" -o json)
expectm=$(measure "$bin" expect "$bundle")
load=$(cut -d' ' -f1-3 /proc/loadavg)

size() { stat -c %s "$1"; }
dump_b=$(size "$dump")
compact_b=$(size "$dir/cluster/cluster-compact.json")
json_b=$(size "$dir/cluster/cluster.json")
yaml_b=$(size "$dir/cluster/cluster.yaml")
lines=$(wc -l <"$dump")

awk -v r="$restore" -v c="$compact" -v j="$json" -v y="$yaml" -v db="$dump_b" -v cb="$compact_b" -v jb="$json_b" -v yb="$yaml_b" -v lines="$lines" -v runs="$runs" \
	-v t="$tracem" -v e="$expectm" -v dst="$dst" -v load="$load" '
function mb(b) { return b / 1048576 }
BEGIN {
	split(r, R, " "); split(c, C, " "); split(j, J, " "); split(y, Y, " ")
	printf "dump: %d lines, %.1f MB; export: compact JSON %.1f MB, indented JSON %.1f MB, YAML %.1f MB; median of %d runs\n\n", lines, mb(db), mb(cb), mb(jb), mb(yb), runs
	printf "%-52s %8s %8s %10s %12s\n", "command", "seconds", "CPU s", "peak RSS", "RSS / input"
	printf "%-52s %8.2f %8.2f %8.0f MB %12s\n", "iptables-restore --test (dump)", R[1], R[3], R[2] / 1024, "-"
	printf "%-52s %8.2f %8.2f %8.0f MB %11.2fx\n", "proxyscan analyze (dump + compact JSON export)", C[1], C[3], C[2] / 1024, C[2] * 1024 / (db + cb)
	printf "%-52s %8.2f %8.2f %8.0f MB %11.2fx\n", "proxyscan analyze (dump + indented JSON export)", J[1], J[3], J[2] / 1024, J[2] * 1024 / (db + jb)
	printf "%-52s %8.2f %8.2f %8.0f MB %11.2fx\n", "proxyscan analyze (dump + YAML export)", Y[1], Y[3], Y[2] / 1024, Y[2] * 1024 / (db + yb)
	printf "\nspeed-up over iptables-restore --test: compact JSON %.2fx, indented JSON %.2fx, YAML %.2fx (target >= 3 for each)\n", R[1] / C[1], R[1] / J[1], R[1] / Y[1]
	printf "in CPU time:                            compact JSON %.2fx, indented JSON %.2fx, YAML %.2fx\n", R[3] / C[3], R[3] / J[3], R[3] / Y[3]
	printf "peak RSS / input (target < 3):          compact JSON %.2fx, indented JSON %.2fx, YAML %.2fx\n", C[2] * 1024 / (db + cb), J[2] * 1024 / (db + jb), Y[2] * 1024 / (db + yb)
	split(t, T, " "); split(e, E, " ")
	printf "\n%-52s %8s %8s %10s %12s\n", "command (bundle: dump + indented JSON export)", "seconds", "CPU s", "peak RSS", "RSS / input"
	printf "%-52s %8.2f %8.2f %8.0f MB %11.2fx\n", "proxyscan trace --dst " dst, T[1], T[3], T[2] / 1024, T[2] * 1024 / (db + jb)
	printf "%-52s %8.2f %8.2f %8.0f MB %11.2fx\n", "proxyscan expect", E[1], E[3], E[2] / 1024, E[2] * 1024 / (db + jb)
	printf "\ntargets: trace < 0.3 s, expect < 1 s; load average while measuring: %s\n", load
}'
