// Package redact replaces the IP addresses and the Kubernetes names
// (nodes, namespaces, Services, pods) of a bundle by consistent
// pseudonyms, keeping everything the analysis relies on:
//
//   - Addresses are mapped by a keyed prefix-preserving permutation (the
//     Crypto-PAn construction with AES, for IPv4 and IPv6): two addresses
//     share a prefix of n bits exactly when their images do, so a CIDR
//     maps onto a CIDR of the same length and membership is kept.
//     Loopback, unspecified, link-local, multicast and reserved ranges are
//     left as they are (they identify nobody and carry meaning), and no
//     other address is mapped into them.
//   - Names are mapped to pseudonyms derived from the key ("ns-…",
//     "svc-…", "node-…", "pod-…"), the same in every file, including the
//     comments kube-proxy writes into its rules and the nft chain names
//     that embed namespace/name/protocol/port.
//   - The hashes in kube-proxy's chain names are recomputed from the
//     redacted names and addresses, the way kube-proxy computes them
//     (KUBE-SVC-/KUBE-SEP- sha256 hashes, nft "<hash8>-ns/name/proto/port"),
//     so that the analyzer attributes the redacted chains to the redacted
//     Services exactly as it attributes the originals. Chains whose
//     origin cannot be determined get a keyed pseudonym hash.
//
// Rewriting keeps every file's line structure, so findings on a redacted
// bundle point at the same lines as on the original. The mapping (and the
// key) is returned as a [Map] for the user to keep: it is never written
// into the bundle.
//
// Names that are also keywords of the formats (nat, tcp, iptables,
// primary, ...) are replaced where they are names (Kubernetes object
// fields, rule comments, chain names) but not in free text, where they
// cannot be told apart from the keyword; well-known system names
// (default, kube-system, kubernetes, kube-proxy, ...) are kept.
package redact
