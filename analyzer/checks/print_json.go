package checks

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/proxyscan/proxyscan/analyzer/model"
	"github.com/proxyscan/proxyscan/analyzer/view"
	"github.com/proxyscan/proxyscan/parsers"
)

// The JSON form of a node's print, the "print" object of a node report
// (see docs/contract.md): the node's settings first, then the
// fingerprints of its service ports and of the lines of their evidence,
// the lines, and the service ports last. A reader that already holds
// service ports of the same fingerprint stops before them, so that the
// reports of nodes that program their Services alike are merged without
// reading their prints again.

// printHead is the part of a print that is not per service port.
type printHead struct {
	Mode         string                 `json:"mode,omitempty"`
	ModeSource   string                 `json:"modeSource,omitempty"`
	Views        []viewJSON             `json:"views,omitempty"`
	Cluster      string                 `json:"cluster,omitempty"`
	ClusterEv    *model.Evidence        `json:"clusterEvidence,omitempty"`
	Version      string                 `json:"version,omitempty"`
	VersionEv    model.Evidence         `json:"versionEvidence"`
	ModeValue    string                 `json:"modeValue,omitempty"`
	ModeEv       []model.Evidence       `json:"modeEvidence,omitempty"`
	Config       bool                   `json:"config,omitempty"`
	ConfigValues map[string]string      `json:"configValues,omitempty"`
	ConfigPos    map[string]parsers.Pos `json:"configPositions,omitempty"`
	ConfigAt     parsers.Pos            `json:"configAt"`
	// Partial holds, by family, why the node's data plane of that family
	// may not be whole (see nodePrint.partial); a print without it is
	// of whole data planes.
	Partial map[model.Family]string `json:"partial,omitempty"`
}

type viewJSON struct {
	Family  model.Family                 `json:"family"`
	Source  string                       `json:"source"`
	Anchors map[view.Kind]model.Evidence `json:"anchors,omitempty"`
}

type portJSON struct {
	Service    string           `json:"service"`
	Programmed bool             `json:"programmed,omitempty"`
	Protocol   string           `json:"protocol,omitempty"`
	Topology   bool             `json:"topology,omitempty"`
	Elems      []elemJSON       `json:"elems,omitempty"`
	Dispatch   []model.Evidence `json:"dispatch,omitempty"`
	Known      bool             `json:"known,omitempty"`
	ServiceEv  *model.Evidence  `json:"serviceEvidence,omitempty"`
	Endpoints  []labelJSON      `json:"endpoints,omitempty"`
	Expected   []famJSON        `json:"expected,omitempty"`
	Unexpected []famJSON        `json:"unexpected,omitempty"`
}

type elemJSON struct {
	Key      string           `json:"key"`
	Label    string           `json:"label"`
	Backend  bool             `json:"backend,omitempty"`
	Family   model.Family     `json:"family,omitempty"`
	Kind     view.Kind        `json:"kind,omitempty"`
	Evidence []model.Evidence `json:"evidence,omitempty"`
}

type labelJSON struct {
	Label    string         `json:"label"`
	Evidence model.Evidence `json:"evidence"`
}

type famJSON struct {
	Family model.Family `json:"family"`
	Label  string       `json:"label"`
}

// A Print is the print of one node read from its node report, ready for
// [RestoreNode].
type Print struct {
	np *nodePrint
}

// PrintFingerprints returns the fingerprints of the node's service ports
// and of the lines of their evidence (see [FleetNode.WritePrint]).
func (n *FleetNode) PrintFingerprints() (ports, lines string) {
	n.print.ensureLines()
	return portsFingerprint(n.print.ports), linesFingerprint(encodeLines(n.print.lines))
}

// WritePrint writes the node's print as the JSON object of a node report.
// The node must have been analysed with prints.
func (n *FleetNode) WritePrint(w io.Writer) error {
	np := n.print
	if np == nil {
		return errors.New("the node was analysed without its print")
	}
	np.ensureLines()
	head := printHead{Mode: np.mode, ModeSource: np.modeSource, Version: np.version, VersionEv: np.versionEv,
		ModeValue: np.modeValue, ModeEv: np.modeEv, Config: np.config, ConfigValues: np.configMap(), ConfigPos: np.configPos, ConfigAt: np.configAt,
		Partial: np.partial}
	if np.cluster != "" {
		head.Cluster, head.ClusterEv = np.cluster, &np.clusterEv
	}
	for _, v := range np.views {
		head.Views = append(head.Views, viewJSON{Family: v.family, Source: v.source, Anchors: v.anchors})
	}
	lines := encodeLines(np.lines)
	ports, err := encodePorts(np.ports)
	if err != nil {
		return err
	}
	parts := []struct {
		key   string
		value any
	}{
		{"node", head},
		{"portsFingerprint", portsFingerprint(np.ports)},
		{"linesFingerprint", linesFingerprint(lines)},
		{"linesGzip", gzipBase64(lines)},
		{"portsGzip", ports},
	}
	if _, err := io.WriteString(w, "{"); err != nil {
		return err
	}
	for i, p := range parts {
		data, err := json.Marshal(p.value)
		if err != nil {
			return fmt.Errorf("encoding the print's %s: %w", p.key, err)
		}
		sep := ","
		if i == 0 {
			sep = ""
		}
		if _, err := fmt.Fprintf(w, "%s%q:%s", sep, p.key, data); err != nil {
			return err
		}
	}
	_, err = io.WriteString(w, "}")
	return err
}

// linesFrom returns the reader of a print's lines from its report, which
// reopen reads again: their fingerprint must still be fp.
func linesFrom(reopen func() (*json.Decoder, io.Closer, error), fp string) func(ports int) ([][]int32, error) {
	return func(ports int) ([][]int32, error) {
		dec, c, err := reopen()
		if err != nil {
			return nil, err
		}
		defer c.Close()
		if err := expectDelim(dec, '{'); err != nil {
			return nil, err
		}
		for dec.More() {
			key, err := objectKey(dec)
			if err != nil {
				return nil, err
			}
			if key != "linesGzip" {
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					return nil, err
				}
				continue
			}
			var s string
			if err := dec.Decode(&s); err != nil {
				return nil, err
			}
			raw, err := gunzipBase64(s)
			if err != nil {
				return nil, err
			}
			if linesFingerprint(raw) != fp {
				return nil, errors.New("the report changed since it was read")
			}
			return decodeLines(raw, ports)
		}
		return nil, errors.New("no lines in the report")
	}
}

// gunzipBase64 reads what gzipBase64 wrote.
func gunzipBase64(s string) ([]byte, error) {
	zr, err := gzip.NewReader(base64.NewDecoder(base64.StdEncoding, strings.NewReader(s)))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// slotCount is the number of lines [portPrint.lineSlots] returns.
func (pp *portPrint) slotCount() int {
	n := len(pp.dispatch) + 1 + len(pp.endpoints)
	for i := range pp.elems {
		n += len(pp.elems[i].evidence)
	}
	return n
}

// gzipBase64 compresses data with gzip and encodes it in base64.
func gzipBase64(data []byte) string {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(data)
	zw.Close()
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// encodePorts writes the service ports of a print as a JSON array,
// compressed with gzip and encoded in base64: the evidence of ten thousand
// Services takes tens of megabytes, and a few once compressed.
func encodePorts(ports []*portPrint) (string, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	bw := bufio.NewWriterSize(zw, 64<<10)
	bw.WriteByte('[')
	for i, pp := range ports {
		if i > 0 {
			bw.WriteByte(',')
		}
		data, err := json.Marshal(pp.json())
		if err != nil {
			return "", fmt.Errorf("encoding the print of %s: %w", pp.service, err)
		}
		bw.Write(data)
	}
	bw.WriteByte(']')
	if err := bw.Flush(); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// decodePorts reads what encodePorts wrote.
func decodePorts(s string) ([]*portPrint, error) {
	zr, err := gzip.NewReader(base64.NewDecoder(base64.StdEncoding, strings.NewReader(s)))
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bufio.NewReaderSize(zr, 64<<10))
	dec.DisallowUnknownFields()
	// One service port at a time: the array is never held whole.
	if err := expectDelim(dec, '['); err != nil {
		return nil, err
	}
	ports := []*portPrint{}
	for dec.More() {
		var pj portJSON
		if err := dec.Decode(&pj); err != nil {
			return nil, err
		}
		pp := pj.print()
		if n := len(ports); n > 0 && pp.service <= ports[n-1].service {
			return nil, fmt.Errorf("%s is not after %s", pp.service, ports[n-1].service)
		}
		ports = append(ports, pp)
	}
	if err := expectDelim(dec, ']'); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the service ports")
	}
	return ports, nil
}

func (pp *portPrint) json() portJSON {
	out := portJSON{Service: pp.service, Programmed: pp.programmed, Protocol: pp.protocol, Topology: pp.topology,
		Dispatch: pp.dispatch, Known: pp.known}
	for _, e := range pp.elems {
		out.Elems = append(out.Elems, elemJSON{Key: e.key, Label: e.label, Backend: e.backend, Family: e.family, Kind: e.kind, Evidence: e.evidence})
	}
	if pp.known {
		ev := pp.serviceEv
		out.ServiceEv = &ev
	}
	for _, x := range pp.endpoints {
		out.Endpoints = append(out.Endpoints, labelJSON{x.label, x.ev})
	}
	for _, x := range pp.expected {
		out.Expected = append(out.Expected, famJSON{x.family, x.label})
	}
	for _, x := range pp.unexpected {
		out.Unexpected = append(out.Unexpected, famJSON{x.family, x.label})
	}
	return out
}

func (pj *portJSON) print() *portPrint {
	pp := &portPrint{service: pj.Service, programmed: pj.Programmed, protocol: pj.Protocol, topology: pj.Topology,
		dispatch: pj.Dispatch, known: pj.Known}
	for _, e := range pj.Elems {
		pp.elems = append(pp.elems, printElem{key: e.Key, label: e.Label, backend: e.Backend, family: e.Family, kind: e.Kind, evidence: e.Evidence})
	}
	if pj.ServiceEv != nil {
		pp.serviceEv = *pj.ServiceEv
	}
	for _, x := range pj.Endpoints {
		pp.endpoints = append(pp.endpoints, labelled{x.Label, x.Evidence})
	}
	for _, x := range pj.Expected {
		pp.expected = append(pp.expected, famLabel{x.Family, x.Label})
	}
	for _, x := range pj.Unexpected {
		pp.unexpected = append(pp.unexpected, famLabel{x.Family, x.Label})
	}
	return pp
}

// portsFingerprint is the SHA-256 of what makes the service ports of a
// print equal (their encoding for [Prints], lines left out), in order.
func portsFingerprint(ports []*portPrint) string {
	h := sha256.New()
	var buf []byte
	ps := &Prints{}
	buf = binary.AppendUvarint(buf, uint64(len(ports)))
	for _, pp := range ports {
		buf = ps.encode(buf, pp)
		if len(buf) > 64<<10 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Write(buf)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// linesFingerprint is the SHA-256 of the encoded lines of a print.
func linesFingerprint(lines []byte) string {
	sum := sha256.Sum256(lines)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// encodeLines writes the lines of a print's evidence: per service port,
// their count, then each as the difference from the one before (zigzag
// varints), so that a node of ten thousand Services takes a few hundred
// kilobytes.
func encodeLines(lines [][]int32) []byte {
	var b []byte
	b = binary.AppendUvarint(b, uint64(len(lines)))
	for _, l := range lines {
		b = binary.AppendUvarint(b, uint64(len(l)))
		prev := int64(0)
		for _, x := range l {
			b = binary.AppendVarint(b, int64(x)-prev)
			prev = int64(x)
		}
	}
	return b
}

// decodeLines reads what encodeLines wrote, for ports service ports.
func decodeLines(b []byte, ports int) ([][]int32, error) {
	bad := errors.New("lines: not a valid encoding")
	n, k := binary.Uvarint(b)
	if k <= 0 || n != uint64(ports) {
		return nil, fmt.Errorf("lines: %d lists for %d service ports", n, ports)
	}
	b = b[k:]
	out := make([][]int32, ports)
	for i := range out {
		c, k := binary.Uvarint(b)
		if k <= 0 || c > uint64(len(b)) {
			return nil, bad
		}
		b = b[k:]
		l := make([]int32, c)
		prev := int64(0)
		for j := range l {
			d, k := binary.Varint(b)
			if k <= 0 {
				return nil, bad
			}
			b = b[k:]
			prev += d
			if prev < 0 || prev > 1<<31-1 {
				return nil, fmt.Errorf("lines: line %d out of range", prev)
			}
			l[j] = int32(prev)
		}
		out[i] = l
	}
	if len(b) != 0 {
		return nil, errors.New("lines: bytes after the last list")
	}
	return out, nil
}

// ReadPrint reads the JSON object [FleetNode.WritePrint] wrote from dec,
// whose next token starts it. Service ports and lines whose fingerprints
// the store holds already (from an earlier node) are not read: the node
// shares them, and reading stops before the service ports, which end the
// object; done then reports that the rest of the object was not read.
// With reopen, which reads the report again up to the print's object, the
// lines are not read either: they are read from it when a cross-node
// check reports the node. Fingerprints of parts that are read are
// checked.
func (ps *Prints) ReadPrint(dec *json.Decoder, reopen func() (*json.Decoder, io.Closer, error)) (p *Print, done bool, err error) {
	if err := expectDelim(dec, '{'); err != nil {
		return nil, false, err
	}
	np := &nodePrint{}
	var portsFP, linesFP string
	var rawLines []byte
	haveLines := false
	for dec.More() {
		key, err := objectKey(dec)
		if err != nil {
			return nil, false, err
		}
		switch key {
		case "node":
			var h printHead
			if err := dec.Decode(&h); err != nil {
				return nil, false, fmt.Errorf("print: node: %w", err)
			}
			ps.restoreHead(np, &h)
		case "portsFingerprint":
			if err := dec.Decode(&portsFP); err != nil {
				return nil, false, fmt.Errorf("print: portsFingerprint: %w", err)
			}
		case "linesFingerprint":
			if err := dec.Decode(&linesFP); err != nil {
				return nil, false, fmt.Errorf("print: linesFingerprint: %w", err)
			}
		case "linesGzip":
			lines, linesOK := ps.knownLines(linesFP)
			lazy := reopen != nil && !linesOK && linesFP != ""
			if ports, ok := ps.knownPorts(portsFP); ok && (linesOK || lazy) {
				// Shared with an earlier node, or read when needed: the
				// rest is not read.
				np.ports = ports
				if lazy {
					np.linesFrom = linesFrom(reopen, linesFP)
					return &Print{np}, true, nil
				}
				np.lines = lines
				if len(np.lines) != len(np.ports) {
					return nil, false, fmt.Errorf("print: %d lists of lines for %d service ports", len(np.lines), len(np.ports))
				}
				return &Print{np}, true, nil
			}
			var s string
			if err := dec.Decode(&s); err != nil {
				return nil, false, fmt.Errorf("print: linesGzip: %w", err)
			}
			switch {
			case linesOK:
				np.lines, haveLines = lines, true
			case lazy:
				np.linesFrom, haveLines = linesFrom(reopen, linesFP), true
			default:
				if rawLines, err = gunzipBase64(s); err != nil {
					return nil, false, fmt.Errorf("print: linesGzip: %w", err)
				}
			}
			if haveLines {
				break
			}
			if got := linesFingerprint(rawLines); got != linesFP {
				return nil, false, fmt.Errorf("print: the lines' fingerprint is %s, not %s as written", got, linesFP)
			}
		case "portsGzip":
			if ports, ok := ps.knownPorts(portsFP); ok {
				np.ports = ports
				if err := ps.finishLines(np, rawLines, haveLines, linesFP); err != nil {
					return nil, false, err
				}
				return &Print{np}, true, nil
			}
			var s string
			if err := dec.Decode(&s); err != nil {
				return nil, false, fmt.Errorf("print: portsGzip: %w", err)
			}
			ports, err := decodePorts(s)
			if err != nil {
				return nil, false, fmt.Errorf("print: portsGzip: %w", err)
			}
			if got := portsFingerprint(ports); got != portsFP {
				return nil, false, fmt.Errorf("print: the service ports' fingerprint is %s, not %s as written", got, portsFP)
			}
			np.ports = ps.addPorts(portsFP, ports)
		default:
			return nil, false, fmt.Errorf("print: unknown field %q", key)
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, false, err
	}
	if np.ports == nil {
		return nil, false, errors.New("print: no service ports (portsGzip)")
	}
	if err := ps.finishLines(np, rawLines, haveLines, linesFP); err != nil {
		return nil, false, err
	}
	return &Print{np}, false, nil
}

// finishLines sets the lines of a print read, once its ports are known.
func (ps *Prints) finishLines(np *nodePrint, raw []byte, have bool, fp string) error {
	if have && np.linesFrom != nil {
		return nil
	}
	if have {
		if len(np.lines) != len(np.ports) {
			return fmt.Errorf("print: %d lists of lines for %d service ports", len(np.lines), len(np.ports))
		}
		return nil
	}
	if raw == nil {
		return errors.New("print: no lines")
	}
	lines, err := decodeLines(raw, len(np.ports))
	if err != nil {
		return fmt.Errorf("print: %w", err)
	}
	for i, l := range lines {
		if n := np.ports[i].slotCount(); len(l) != n {
			return fmt.Errorf("print: %d lines for the %d pieces of evidence of %s", len(l), n, np.ports[i].service)
		}
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if x, ok := ps.byLines[fp]; ok {
		np.lines = x
		return nil
	}
	ps.byLines[fp] = lines
	np.lines = lines
	return nil
}

func (ps *Prints) knownLines(fp string) ([][]int32, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	l, ok := ps.byLines[fp]
	return l, ok && fp != ""
}

func (ps *Prints) knownPorts(fp string) ([]*portPrint, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.byPorts[fp]
	return p, ok && fp != ""
}

// addPorts interns the service ports of a print read, and keeps them
// under their fingerprint.
func (ps *Prints) addPorts(fp string, ports []*portPrint) []*portPrint {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if x, ok := ps.byPorts[fp]; ok {
		return x
	}
	for i, pp := range ports {
		ports[i] = ps.port(pp)
	}
	ps.byPorts[fp] = ports
	return ports
}

func (ps *Prints) restoreHead(np *nodePrint, h *printHead) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	np.mode, np.modeSource, np.modeValue, np.version = ps.str(h.Mode), ps.str(h.ModeSource), ps.str(h.ModeValue), ps.str(h.Version)
	np.versionEv = h.VersionEv
	ps.ev(&np.versionEv)
	if np.cluster = ps.str(h.Cluster); h.ClusterEv != nil {
		np.clusterEv = *h.ClusterEv
		ps.ev(&np.clusterEv)
	}
	np.modeEv = ps.evs(h.ModeEv)
	np.partial = ps.partial(h.Partial)
	np.config, np.configAt = h.Config, ps.pos(h.ConfigAt)
	if h.ConfigValues != nil || h.Config {
		np.configValues = make(map[string]string, len(h.ConfigValues))
		for k, v := range h.ConfigValues {
			np.configValues[ps.str(k)] = ps.str(v)
		}
		np.configPos = make(map[string]parsers.Pos, len(h.ConfigPos))
		for k, v := range h.ConfigPos {
			np.configPos[ps.str(k)] = ps.pos(v)
		}
	}
	for _, v := range h.Views {
		anchors := make(map[view.Kind]model.Evidence, len(v.Anchors))
		for k, e := range v.Anchors {
			ps.ev(&e)
			anchors[k] = e
		}
		np.views = append(np.views, viewPrint{family: v.Family, source: ps.str(v.Source), anchors: anchors})
	}
}

// RestoreNode returns the node of a fleet that a node report describes:
// base names it (see [BaseName]), res is the result of its checks (as
// [AnalyzeNode] returned it, before [CompareFleet]) and p its print.
func RestoreNode(base string, res *Result, p *Print) *FleetNode {
	return &FleetNode{base: base, res: res, print: p.np}
}

// BaseName is what names a node of a fleet before names are made unique:
// its name, else the base name of the bundle of its first input that has
// one.
func BaseName(name string, inputs []model.Input) string {
	if name != "" {
		return name
	}
	// The loose files read with a bundle (an export given beside it) may
	// come first.
	for _, in := range inputs {
		if in.Bundle != "" {
			return baseOfPath(in.Bundle)
		}
	}
	return name
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return fmt.Errorf("print: %w", err)
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("print: %v where %q belongs", t, string(want))
	}
	return nil
}

func objectKey(dec *json.Decoder) (string, error) {
	t, err := dec.Token()
	if err != nil {
		return "", fmt.Errorf("print: %w", err)
	}
	k, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("print: %v where a field name belongs", t)
	}
	return k, nil
}
