package iptables_test

import (
	"strings"
	"testing"

	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// BenchmarkParse parses a generated 10,000-Service dump
// (benchgen.Default), every rule's options checked as iptables-restore
// checks them. Its tables' chains are indexed by name as they are made
// (Table.Chain), with no map of them while the dump is parsed:
// 30.7 to 27.2 MB and 879 to 615 allocations a parse.
func BenchmarkParse(b *testing.B) {
	data := benchDump(b)
	for b.Loop() {
		if _, err := iptables.Parse("iptables-save.txt", data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseLenient is BenchmarkParse read leniently, as analyze
// and trace read a dump given as a file.
func BenchmarkParseLenient(b *testing.B) {
	data := benchDump(b)
	for b.Loop() {
		if _, _, err := iptables.ParseLenient("iptables-save.txt", data); err != nil {
			b.Fatal(err)
		}
	}
}

// benchDump returns the generated 10,000-Service dump, and has b report
// the bytes parsed and the allocations.
func benchDump(b *testing.B) []byte {
	d, err := benchgen.Default.IPTablesDump()
	if err != nil {
		b.Fatal(err)
	}
	data := iptables.Format(d)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	// The CPU time of a parse, which a shared machine's load moves less
	// than the wall time.
	cpu := benchgen.CPUTime()
	b.Cleanup(func() {
		if b.N > 0 {
			b.ReportMetric((benchgen.CPUTime()-cpu).Seconds()/float64(b.N), "cpu-s/op")
		}
	})
	b.ResetTimer()
	return data
}

// BenchmarkParseLenientLazy is BenchmarkParseLenient with kube-proxy's
// per-Service and per-endpoint chains read lazily, as trace reads a dump:
// their rules are scanned, not parsed.
func BenchmarkParseLenientLazy(b *testing.B) {
	data := benchDump(b)
	for b.Loop() {
		d, _, err := iptables.ParseLenientLazy("iptables-save.txt", data, perService)
		if err != nil {
			b.Fatal(err)
		}
		if n, _ := d.LazyChains(); n == 0 {
			b.Fatal("no chain read lazily")
		}
	}
}

// perService reports whether name is one of kube-proxy's per-Service or
// per-endpoint chains.
func perService(name string) bool {
	for _, p := range []string{"KUBE-SVC-", "KUBE-SEP-", "KUBE-SVL-", "KUBE-EXT-", "KUBE-FW-", "KUBE-XLB-"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
