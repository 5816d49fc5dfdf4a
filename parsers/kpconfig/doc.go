// Package kpconfig reads kube-proxy's configuration the way kube-proxy
// 1.20–1.37 does, from its three sources:
//
//   - a KubeProxyConfiguration file (kubeproxy.config.k8s.io/v1alpha1, the
//     only version any release reads), YAML or JSON ([Parse], [ParseLenient]);
//   - the config.conf key of the kube-system/kube-proxy ConfigMap, with
//     positions that are real lines of the ConfigMap file ([ParseConfigMap],
//     or [Decode] with [Options.Line] for text already extracted);
//   - kube-proxy's command-line flags ([ParseFlags]), merged with the file
//     the way kube-proxy merges them ([Effective]).
//
// The decoded value is the external type of k8s.io/kube-proxy/config/v1alpha1
// (v0.37.2, a superset of every older release's fields). Every field the
// input set is recorded with its position in [Config.Fields], keyed by its
// YAML path ("ipvs.scheduler", "nodePortAddresses[1]"); [Defaults] fills in
// what kube-proxy would default for a given version and records that too,
// so "mode defaulted to iptables" can be told apart from "mode: iptables".
//
// [Validate] mirrors pkg/proxy/apis/config/validation/validation.go of each
// release 1.20–1.37, plus the few checks kube-proxy only makes at start-up
// (unknown detect-local-mode before 1.28, feature gates), reporting each
// problem with kube-proxy's own field path and message and the position of
// the offending line.
//
// # Decoding like kube-proxy
//
// kube-proxy (cmd/kube-proxy/app, loadConfig, every release 1.20–1.37)
// first decodes strictly; when that fails only because of unknown or
// duplicate fields it decodes again leniently, ignores those fields, and
// goes on after a log line ("using lenient decoding as strict decoding
// failed", a warning in 1.20–1.22 and an info message from 1.23). Keys are
// matched case-sensitively (the apimachinery JSON serializer), and YAML is
// read as YAML 1.1 (sigs.k8s.io/yaml over goyaml.v2: "yes" is true, "y" as a
// key is true). [Parse] reports unknown and duplicate fields as errors with
// their lines; [ParseLenient] decodes as kube-proxy finally does and keeps
// them as [Config.Warnings]. A wrong apiVersion or kind, malformed YAML or a
// value of the wrong type is an error in both, as it is for kube-proxy.
package kpconfig
