package collect

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/proxyscan/proxyscan/collect/redact"
	"github.com/proxyscan/proxyscan/parsers/manifest"
)

// redact rewrites every staged file (held in memory: see env.memory) and the manifest with r: names met in
// the cluster's objects and in the rules, the host name and kube-proxy's
// node name become pseudonyms, addresses are mapped.
func (e *env) redact(r *redact.Redactor, m *manifest.Manifest) error {
	for _, n := range e.names {
		r.AddName(n.kind, n.name)
	}
	r.AddName("node", m.Host)
	r.AddName("node", e.nodeName)
	if e.kp != nil {
		r.AddName("node", e.kp.hostnameOverride())
	}
	type staged struct {
		i    int
		path string
		data []byte
	}
	var files []staged
	for i, s := range m.Sources {
		if s.File == "" {
			continue
		}
		p := filepath.Join(e.staging, filepath.FromSlash(s.File))
		data, err := e.stagedData(s.File)
		if err != nil {
			return err
		}
		r.Learn(s.File, data)
		files = append(files, staged{i, p, data})
	}
	r.Resolve()
	for _, f := range files {
		s := &m.Sources[f.i]
		out := r.Rewrite(s.File, f.data)
		// Only the redacted form reaches the disk.
		if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(f.path, out, 0o600); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err // the staging directory's path says nothing
			}
			return fmt.Errorf("writing %s: %w", s.File, err)
		}
		sum := sha256.Sum256(out)
		s.Bytes, s.SHA256 = int64(len(out)), hex.EncodeToString(sum[:])
	}
	for i := range m.Sources {
		s := &m.Sources[i]
		s.Path, s.Error = r.Text(s.Path), r.Text(s.Error)
		for j := range s.Command {
			s.Command[j] = r.Text(s.Command[j])
		}
		for j := range s.Notes {
			s.Notes[j] = r.Text(s.Notes[j])
		}
	}
	m.Host = r.Name(m.Host)
	ips := make([]netip.Addr, len(m.NodeIPs))
	for i, a := range m.NodeIPs {
		ips[i] = r.Addr(a)
	}
	m.NodeIPs = ips
	m.Redacted = true
	return nil
}
