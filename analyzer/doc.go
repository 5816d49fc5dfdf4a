// Package analyzer is the semantic side of proxyscan: a bundle (or loose
// files) is loaded into one model ([model.Snapshot]) by package load, the
// data plane of each mode is reduced to a mode-neutral view of what it
// programs for each service port (package view), checks compare that view
// with what kube-proxy would program (package checks), and package report
// turns findings into the stable report value that renderers print.
//
// Principles: analysis is offline and deterministic (no network, no
// exec); a missing input degrades to a skipped check, never to a silent
// pass; every finding carries evidence that points at a file and line.
package analyzer
