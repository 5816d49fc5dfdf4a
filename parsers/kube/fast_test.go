package kube

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	discoveryv1beta1 "k8s.io/api/discovery/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// exportInputs returns every Kubernetes export of the repository's
// testdata: files detected as exports and the inputs of the kube goldens.
func exportInputs(t *testing.T) map[string][]byte {
	t.Helper()
	root := filepath.Join(parsetest.Root(t), "testdata")
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if strings.HasSuffix(p, ".txtar") {
			for _, f := range txtar.Parse(data).Files {
				if strings.HasPrefix(f.Name, "input") && parsers.Detect(f.Data) == parsers.KindKube {
					out[rel+"#"+f.Name] = f.Data
				}
			}
			return nil
		}
		if parsers.Detect(data) == parsers.KindKube {
			out[rel] = data
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 20 {
		t.Fatalf("only %d exports found under %s", len(out), root)
	}
	return out
}

// TestFastPathMatchesReference checks that the fast path (YAML converted
// to JSON, the direct decoder and go-json) reads every export of the testdata into the same
// objects, or the same errors, as the reference decoders.
func TestFastPathMatchesReference(t *testing.T) {
	for name, data := range exportInputs(t) {
		fast, ferr := ParseWith(name, data, Options{})
		ref, rerr := ParseWith(name, data, Options{Reference: true})
		if (ferr == nil) != (rerr == nil) || ferr != nil && ferr.Error() != rerr.Error() {
			t.Errorf("%s: fast path error %v, reference error %v", name, ferr, rerr)
			continue
		}
		if !reflect.DeepEqual(fast, ref) {
			t.Errorf("%s: fast path and reference decoders read different objects", name)
		}
	}
}

// TestLeanFastPathMatchesReference checks that the fast path reads every
// export of the testdata lean into the same objects, or the same errors,
// as the reference decoders, although the direct decoder keeps nothing of
// what Lean leaves out; and that it refuses, as they do, a value of the
// wrong type among what it leaves out.
func TestLeanFastPathMatchesReference(t *testing.T) {
	inputs := exportInputs(t)
	const slice = `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"s","namespace":"n",%s"labels":{"kubernetes.io/service-name":"a"}},"addressType":"IPv4","ports":[{"name":"","port":80,"protocol":"TCP"}],"endpoints":[{"addresses":["10.0.0.1"],%s"conditions":{"ready":true}}]}`
	const svc = `{"apiVersion":"v1","kind":"Service","metadata":{"name":"a","namespace":"n",%s"labels":{"x":"y"}},"spec":{%s"clusterIP":"10.96.0.1","ports":[{"port":80}]}}`
	for i, in := range []string{
		fmt.Sprintf(slice, `"uid":"u","annotations":{"a":"b"},"ownerReferences":[{"apiVersion":"v1","kind":"Service","name":"a","uid":"u","controller":true,"blockOwnerDeletion":true}],`, `"hostname":"h","targetRef":{"kind":"Pod","namespace":"n","name":"p","uid":"u","apiVersion":"v1","resourceVersion":"1","fieldPath":"f"},`),
		fmt.Sprintf(slice, `"uid":5,`, ``),
		fmt.Sprintf(slice, `"annotations":{"a":5},`, ``),
		fmt.Sprintf(slice, `"annotations":null,"ownerReferences":null,`, `"hostname":null,"targetRef":null,`),
		fmt.Sprintf(slice, `"ownerReferences":[{"controller":"yes"}],`, ``),
		fmt.Sprintf(slice, `"ownerReferences":[{"name":5}],`, ``),
		fmt.Sprintf(slice, `"ownerReferences":[{"Name":"a"}],`, ``),
		fmt.Sprintf(slice, ``, `"hostname":5,`),
		fmt.Sprintf(slice, ``, `"targetRef":{"name":5},`),
		fmt.Sprintf(slice, ``, `"targetRef":{"name":"a","name":"b"},`),
		fmt.Sprintf(slice, ``, `"targetRef":{"Name":"a"},`),
		fmt.Sprintf(slice, ``, `"targetRef":[],`),
		fmt.Sprintf(svc, `"uid":"u","annotations":{"a":"b"},`, `"selector":{"app":"a"},`),
		fmt.Sprintf(svc, `"uid":[],`, ``),
		fmt.Sprintf(svc, ``, `"selector":{"app":5},`),
		fmt.Sprintf(svc, ``, `"selector":"app",`),
	} {
		inputs[fmt.Sprintf("lean-%d.json", i)] = []byte(in)
	}
	for name, data := range inputs {
		fast, ferr := ParseWith(name, data, Options{Lean: true})
		ref, rerr := ParseWith(name, data, Options{Lean: true, Reference: true})
		if (ferr == nil) != (rerr == nil) || ferr != nil && ferr.Error() != rerr.Error() {
			t.Errorf("%s: lean fast path error %v, reference error %v", name, ferr, rerr)
			continue
		}
		if !reflect.DeepEqual(fast, ref) {
			t.Errorf("%s: lean fast path and reference decoders read different objects", name)
		}
	}
}

// TestLeanDirectTaken checks that the direct decoder reads lean the
// Services and EndpointSlices of a kubectl export with every field that
// Lean leaves out, rather than leave them to the other decoders.
func TestLeanDirectTaken(t *testing.T) {
	const slice = `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"s","namespace":"n","uid":"u","annotations":{"a":"b"},"ownerReferences":[{"apiVersion":"v1","kind":"Service","name":"a","uid":"u","controller":true,"blockOwnerDeletion":true}],"labels":{"kubernetes.io/service-name":"a"}},"addressType":"IPv4","ports":[{"name":"","port":80,"protocol":"TCP"}],"endpoints":[{"addresses":["10.0.0.1"],"hostname":"h","targetRef":{"kind":"Pod","namespace":"n","name":"p","uid":"u"},"conditions":{"ready":true}}]}`
	const svc = `{"apiVersion":"v1","kind":"Service","metadata":{"name":"a","namespace":"n","uid":"u"},"spec":{"selector":{"app":"a"},"clusterIP":"10.96.0.1","ports":[{"port":80}]}}`
	x := &direct{lean: true, intern: map[string]string{}}
	if !x.endpointSlice([]byte(slice), &discoveryv1.EndpointSlice{}) {
		t.Error("the direct decoder refused the lean EndpointSlice")
	}
	if !x.service([]byte(svc), &corev1.Service{}) {
		t.Error("the direct decoder refused the lean Service")
	}
}

// TestFastPathTaken checks that the converter accepts the documents of the
// kubectl-shaped YAML exports of the testdata, so that the fast path is the
// one used on them.
func TestFastPathTaken(t *testing.T) {
	accepted, total := 0, 0
	for name, data := range exportInputs(t) {
		if IsJSON(data) {
			continue
		}
		err := splitYAML(name, data, func(c chunk) {
			if c.materialize(name, nil) != nil {
				return
			}
			total++
			if _, ok := yamlToJSON(nil, c.data); ok {
				accepted++
			} else if (c.kind == "Service" || c.kind == "EndpointSlice") && !strings.Contains(name, "/err-") {
				if !bytes.Contains(c.data, []byte("\t")) && isASCII(c.data) && !bytes.ContainsAny(c.data, "|>&*!{[") {
					t.Errorf("%s:%d: %s refused by the YAML converter", name, c.line, c.kind)
				}
			}
		})
		if err != nil && !strings.Contains(name, "err-") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if accepted*10 < total*8 {
		t.Errorf("converter accepted %d of %d YAML documents, want at least 80%%", accepted, total)
	}
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

func TestYAMLToJSON(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want "" means refused
	}{
		{"a: 1\nb: x\n", `{"a":1,"b":"x"}`},
		{"a:\n  b: true\n  c: null\n  d:\n", `{"a":{"b":true,"c":null,"d":null}}`},
		{"l:\n- 1\n- two\n-   three # c\n", `{"l":[1,"two","three"]}`},
		{"l:\n  - a: 1\n    b: 2\n  - c: 3\n", `{"l":[{"a":1,"b":2},{"c":3}]}`},
		{"l:\n- - a\n  - b\n", `{"l":[["a","b"]]}`},
		{"ip: 10.96.0.1\ncidr: 10.0.0.0/8\nv6: fd00::1\nuid: 0a1b2c3d-0000\n", `{"ip":"10.96.0.1","cidr":"10.0.0.0/8","v6":"fd00::1","uid":"0a1b2c3d-0000"}`},
		{`s: "a \"q\" \\ b"` + "\n" + `t: 'it''s'` + "\n", `{"s":"a \"q\" \\ b","t":"it's"}`},
		{"e: {}\nf: []\n# comment\n\ng: ~\n", `{"e":{},"f":[],"g":null}`},
		{"app.kubernetes.io/name: x\n\"quoted key\": z\n", `{"app.kubernetes.io/name":"x","quoted key":"z"}`},
		{"uid: 0bc25cc4-b5a6\nb: 0b12\n", `{"uid":"0bc25cc4-b5a6","b":"0b12"}`},
		{"a: 0b101\n", ""},
		{"uid: 8c1e4a5b-1234\nb: 12ab\nc: 3-4\nd: +7x\ne: 1e5x\n", `{"uid":"8c1e4a5b-1234","b":"12ab","c":"3-4","d":"+7x","e":"1e5x"}`},
		{"a: 1_000\n", ""},
		{"uid: 00000000-0000-4000-8000-000000000000\nb: 0e5x\nc: 0_7-1\n", `{"uid":"00000000-0000-4000-8000-000000000000","b":"0e5x","c":"0_7-1"}`},
		{"a: 0_x1f\n", ""},
		{"a: -0_B1\n", ""},
		{"a: 0.5e-3\n", ""},
		{"--- :\n", ""},
		{"... : x\n", ""},
		{"a: ---\n", `{"a":"---"}`},
		{strings.Repeat("k", 1030) + ": v\n", ""},
		{"'" + strings.Repeat("k", 1030) + "': v\n", ""},
		{strings.Repeat("k", 990) + ": v\n", `{"` + strings.Repeat("k", 990) + `":"v"}`},
		{"a: 1e_-5\n", ""},
		{"a: +1E+5\n", ""},
		{"a: y\n", ""},
		{"a: -5\nb: 0\nc: --v=2\nd: a#b\n", `{"a":-5,"b":0,"c":"--v=2","d":"a#b"}`},
		// Refused: YAML 1.1 types, other syntax, duplicates.
		{"a: yes\n", ""},
		{"a: 0777\n", ""},
		{"a: 1.5\n", ""},
		{"a: 1e3\n", ""},
		{"a: -0\n", ""},
		{"a: 0x1f\n", ""},
		{"a: .inf\n", ""},
		{"a: 2026-01-02\n", ""},
		{"a: |\n  text\n", ""},
		{"a: &x 1\nb: *x\n", ""},
		{"a: !!str 1\n", ""},
		{"a: [1, 2]\n", ""},
		{"a: {b: 1}\n", ""},
		{"a: 1\na: 2\n", ""},
		{"a: 1\nA: 2\n", ""},
		{"a: multi\n  line\n", ""},
		{"a:\n  plain scalar\n", ""},
		{"a: \"\\u00e9\"\n", ""},
		{"a: 'open\n", ""},
		{"a:\tb\n", ""},
		{"a: b: c\n", ""},
		{"<<: x\n", ""},
		{"1: x\n", ""},
		{"a: caf\xc3\xa9\n", ""},
		{" a: 1\n", ""},
		{"- a\n- b\n", `["a","b"]`},
	} {
		got, ok := yamlToJSON(nil, []byte(tc.in))
		switch {
		case tc.want == "" && ok:
			t.Errorf("%q: converted to %s, want it refused", tc.in, got)
		case tc.want != "" && !ok:
			t.Errorf("%q: refused, want %s", tc.in, tc.want)
		case ok && string(got) != tc.want:
			t.Errorf("%q: got %s, want %s", tc.in, got, tc.want)
		}
		if ok {
			requireSameAsReference(t, []byte(tc.in), got)
		}
	}
}

// requireSameAsReference fails unless js, the converter's output for doc,
// holds the values sigs.k8s.io/yaml reads from doc.
func requireSameAsReference(t *testing.T, doc, js []byte) {
	t.Helper()
	ref, err := yaml.YAMLToJSON(doc)
	if err != nil {
		t.Fatalf("%q: converted to %s, but sigs.k8s.io/yaml fails: %v", doc, js, err)
	}
	if !reflect.DeepEqual(genericJSON(t, js), genericJSON(t, ref)) {
		t.Fatalf("%q: converted to %s, sigs.k8s.io/yaml gives %s", doc, js, ref)
	}
}

func genericJSON(t *testing.T, js []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(js))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("invalid JSON %s: %v", js, err)
	}
	return v
}

// FuzzYAMLToJSON checks that whatever the converter accepts, it converts
// to the values sigs.k8s.io/yaml reads, and that decoding into a Service
// through the fast path gives the reference result.
func FuzzYAMLToJSON(f *testing.F) {
	parsetest.Seeds(f, "parsers/kube/*.txtar")
	f.Add([]byte("a: 1\nb:\n- x\n- 'y'\nc:\n  d: \"e\"\n"))
	f.Add([]byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: a\nspec:\n  clusterIP: 10.0.0.1\n  ports:\n  - port: 80\n    targetPort: 8080\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		js, ok := yamlToJSON(nil, doc)
		if !ok {
			return
		}
		requireSameAsReference(t, doc, js)
		c := &chunk{data: doc}
		fast, ref := &corev1.Service{}, &corev1.Service{}
		d := &decoder{fast: true}
		ferr := d.unmarshal(c, fast)
		rerr := referenceUnmarshal(c, ref)
		if (ferr == nil) != (rerr == nil) || ferr == nil && !reflect.DeepEqual(fast, ref) {
			t.Fatalf("%q: fast path (%v) and reference (%v) differ", doc, ferr, rerr)
		}
	})
}

// decodedTypes returns a new value of every type exports are decoded
// into.
func decodedTypes() []any {
	return []any{
		//lint:ignore SA1019 Endpoints are decoded too (exports of older clusters)
		&corev1.Service{}, &discoveryv1.EndpointSlice{}, &discoveryv1beta1.EndpointSlice{}, &corev1.Endpoints{},
		&corev1.ConfigMap{}, &corev1.Node{}, &corev1.Pod{}, &appsv1.DaemonSet{}, &metav1.PartialObjectMetadata{},
	}
}

// FuzzFastJSON checks that the fast path (the direct decoder, go-json)
// decodes every type as encoding/json does.
func FuzzFastJSON(f *testing.F) {
	f.Add([]byte(`{"kind":"Service","metadata":{"name":"a","labels":{"x":"y"}},"spec":{"ports":[{"port":80,"targetPort":"http"}],"clusterIP":"10.0.0.1"}}`))
	f.Add([]byte(`{"kind":"Service","spec":{"ports":[{"port":08}]}}`))
	f.Add([]byte(`{"metadata":{"name":"\u00e9\ud800"},"spec":{"type":"NodePort","ports":null}}`))
	f.Add([]byte(`{"\u212aind":"Service","Å¿pec":{"clusterIP":"10.0.0.1"},"Metadata":{"NAME":"a"}}`))
	f.Add([]byte(`{"kind":"EndpointSlice","addressType":"IPv4","endpoints":[{"addresses":["10.0.0.1"],"conditions":{"ready":true},"topology":{"kubernetes.io/hostname":"n"},"nodeName":"n"}],"ports":[{"port":80}]}`))
	f.Add([]byte(`{"kind":"Pod","spec":{"nodeName":"n","hostNetwork":true,"containers":[{"name":"c","resources":{"limits":{"cpu":"100m"}},"ports":[{"containerPort":80}]}]},"status":{"podIP":"10.0.0.1"}}`))
	f.Add([]byte(`{"kind":"Node","status":{"addresses":[{"type":"InternalIP","address":"10.0.0.1"}],"capacity":{"cpu":"4"}}}`))
	f.Add([]byte(`{"kind":"ConfigMap","data":{"config.conf":"mode: ipvs\n"},"binaryData":{"b":"eHl6"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &chunk{data: data, json: true}
		d := &decoder{fast: true}
		for _, fast := range decodedTypes() {
			ref := reflect.New(reflect.TypeOf(fast).Elem()).Interface()
			ferr := d.unmarshal(c, fast)
			rerr := json.Unmarshal(data, ref)
			if (ferr == nil) != (rerr == nil) || ferr == nil && !reflect.DeepEqual(fast, ref) {
				t.Fatalf("%q: fast path (%v) and encoding/json (%v) differ for a %T", data, ferr, rerr, fast)
			}
			if !fastJSONSafe(data) {
				continue
			}
			// Where go-json alone succeeds, encoding/json must agree.
			alone := reflect.New(reflect.TypeOf(fast).Elem()).Interface()
			if err := fastUnmarshal(data, alone); err == nil && (rerr != nil || !reflect.DeepEqual(alone, ref)) {
				t.Fatalf("%q: go-json reads a %T that encoding/json reads differently (%v)", data, alone, rerr)
			}
		}
	})
}

// TestPrintable8 checks the eight-byte test of the converter against a
// byte loop: every byte value at every position, and mixed words.
func TestPrintable8(t *testing.T) {
	check := func(b []byte) {
		want := true
		for _, c := range b {
			if c < 0x20 || c > 0x7e {
				want = false
			}
		}
		if got := printable8(binary.LittleEndian.Uint64(b)); got != want {
			t.Fatalf("printable8(%q) = %v, want %v", b, got, want)
		}
	}
	for pos := 0; pos < 8; pos++ {
		for v := 0; v < 256; v++ {
			b := []byte("a~ 0Z}!a")
			b[pos] = byte(v)
			check(b)
			b = []byte{0xff, 0x7f, 0x1f, 0x20, 0x7e, 0x00, 0x80, 0x41}
			b[pos] = byte(v)
			check(b)
		}
	}
	x := uint64(88172645463325252)
	for i := 0; i < 1<<20; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], x&0x7f7f7f7f7f7f7f7f|0x2020202020202020&(x>>1))
		check(b[:])
	}
}

// TestResolvePlainAllocs checks that scalars strconv reads no number from,
// for a reason seen without parsing, are typed without allocating (each
// failed parse allocates its error): uids, including those starting with
// 0, and addresses.
func TestResolvePlainAllocs(t *testing.T) {
	for _, s := range []string{"00000000-0000-4000-8000-000000000000", "8c1e4a5b-1234-4000-8000-000000000000", "0a1b2c3d-0000", "10.96.0.1", "-0abc", "0_1x"} {
		b := []byte(s)
		if n := testing.AllocsPerRun(10, func() { resolvePlain(b) }); n != 0 {
			t.Errorf("resolvePlain(%q): %v allocations, want 0", s, n)
		}
	}
}

// FuzzDecimalLike checks that a scalar decimalLike rules out is read as a
// number by none of the parses resolvePlain would make.
func FuzzDecimalLike(f *testing.F) {
	for _, s := range []string{"00000000-0000-4000-8000-000000000000", "0_x1f", "0x1F", "0X1p-2", "0b101", "-0b1", "-0_B1", "0o17", "0O17", "0777", "0.5e-3", "0e5", "0e+5", "0_1", "0-1", "012ab", "1e5x", "8c1e4a5b-1234", "+0", "-0", "0", "0_", "1_000", "0inf", "0nan", "+1E+5", "1e_-5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" || !(s[0] == '+' || s[0] == '-' || s[0] >= '0' && s[0] <= '9') || decimalLike([]byte(s)) {
			return
		}
		plain := strings.ReplaceAll(s, "_", "")
		if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
			t.Fatalf("%q: ruled out, but ParseInt reads %q", s, plain)
		}
		if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
			t.Fatalf("%q: ruled out, but ParseUint reads %q", s, plain)
		}
		if _, err := strconv.ParseFloat(plain, 64); err == nil {
			t.Fatalf("%q: ruled out, but ParseFloat reads %q", s, plain)
		}
		for _, p := range []string{"0b", "-0b"} {
			if bin, ok := strings.CutPrefix(plain, p); ok && isBinary(bin) {
				t.Fatalf("%q: ruled out, but it is a binary integer", s)
			}
		}
	})
}
