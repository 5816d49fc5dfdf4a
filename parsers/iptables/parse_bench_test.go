package iptables_test

import (
	"testing"

	"github.com/proxyscan/proxyscan/internal/benchgen"
	"github.com/proxyscan/proxyscan/parsers/iptables"
)

// BenchmarkParse parses a generated 10,000-Service dump
// (benchgen.Default), every rule's options checked as iptables-restore
// checks them.
func BenchmarkParse(b *testing.B) {
	d, err := benchgen.Default.IPTablesDump()
	if err != nil {
		b.Fatal(err)
	}
	data := iptables.Format(d)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := iptables.Parse("iptables-save.txt", data); err != nil {
			b.Fatal(err)
		}
	}
}
