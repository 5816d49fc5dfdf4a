#!/usr/bin/env bash
# regen.sh [inputs|goldens|bundles|all]
#
# Regenerates what testdata/upstream produces, in this order:
#   inputs   inputs/shapes and scenarios/* (cmd/mkinputs), and
#            scenarios/large-cluster (cmd/bigcluster, just over 1000
#            endpoints, so the proxiers run in large-cluster mode)
#   goldens  golden/<mode>/<scenario>/ for every scenario and mode: what the
#            kube-proxy v1.37.2 proxier programs (kpgen -sort)
#   bundles  ../bundles/<mode>-healthy/ from inputs/shapes (capture.sh)
# Default: all. Everything is deterministic: rerunning on an unchanged tree
# leaves git diff empty. kpgen needs root for the nftables proxier's start-up
# check of the nft binary; capture.sh needs root for its network namespace.
set -euo pipefail

what=${1:-all}
case $what in inputs | goldens | bundles | all) ;; *)
	echo "usage: $0 [inputs|goldens|bundles|all]" >&2
	exit 2
	;;
esac
cd "$(dirname "$0")"
modes=(iptables nftables ipvs)

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/" ./cmd/kpgen ./cmd/mkinputs ./cmd/bigcluster

if [[ $what == inputs || $what == all ]]; then
	"$bin/mkinputs" -root .
	rm -rf scenarios/large-cluster
	"$bin/bigcluster" -services 46 -endpoints-per 20 -out scenarios/large-cluster
fi

if [[ $what == goldens || $what == all ]]; then
	rm -rf golden
	for dir in scenarios/*/; do
		name=$(basename "$dir")
		for mode in "${modes[@]}"; do
			"$bin/kpgen" -mode "$mode" -in "$dir" -out "golden/$mode/$name" -sort
		done
	done
fi

if [[ $what == bundles || $what == all ]]; then
	for mode in "${modes[@]}"; do
		KPGEN=$bin/kpgen ./capture.sh "$mode" inputs/shapes "../bundles/$mode-healthy"
	done
fi
