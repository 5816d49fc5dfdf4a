// Package manifest is the schema of a bundle's manifest.json: what
// `proxyscan collect` read on a node, and for every source how it was read
// (a command, a file, netlink, HTTP or the Kubernetes API), what happened
// (exit status, HTTP status, error, duration) and what it wrote (the bundle
// file, its size and SHA-256).
//
// Collect writes it with [Format]; the analyzer reads it with [Parse],
// which validates every field and reports problems as *parsers.Error
// values naming the file, the line and the JSON path.
//
// The JSON field names are those of the contract's bundle layout (schema
// 1): schema, tool, host, node_ips, collected_at, and per source name,
// command or path, file, exit_status, error, duration_ms, bytes, sha256.
// Fields are only ever added within a schema version; a manifest of a newer
// schema is refused rather than half understood.
package manifest
