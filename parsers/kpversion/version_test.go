package kpversion

import (
	"testing"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/proxyscan/proxyscan/parsers"
	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

func TestParseString(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Version
		err  bool
	}{
		{in: "Kubernetes v1.37.2", want: Version{1, 37, 2, ""}},
		{in: "v1.28.0", want: Version{1, 28, 0, ""}},
		{in: "1.30", want: Version{1, 30, 0, ""}},
		{in: "v1.29.3-eks-abc", want: Version{1, 29, 3, "-eks-abc"}},
		{in: "v1.31.0+k3s1", want: Version{1, 31, 0, "+k3s1"}},
		{in: "v1.32.0-rc.1", want: Version{1, 32, 0, "-rc.1"}},
		{in: "  Kubernetes v1.20.15  ", want: Version{1, 20, 15, ""}},
		{in: "", err: true},
		{in: "v1", err: true},
		{in: "v1.2.3.4", err: true},
		{in: "v1.x.0", err: true},
		{in: "v1.30-", err: true},
		{in: "v1.30+k3s1", err: true},
		{in: "v01.30.0", err: true},
		{in: "v1.9999999.0", err: true},
		{in: "Kubernetes", err: true},
	} {
		got, err := ParseString(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("ParseString(%q) error = %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if !tc.err && got != tc.want {
			t.Errorf("ParseString(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"v1.28.0", "v1.28.0", 0},
		{"v1.28.0", "v1.29.0", -1},
		{"v1.30.1", "v1.30.0", 1},
		{"v1.30.0-rc.1", "v1.30.0", -1},
		{"v1.29.3-eks-abc", "v1.29.3", 0},
		{"v1.31.0+k3s1", "v1.31.0", 0},
		{"v2.0.0", "v1.99.0", 1},
	} {
		a, _ := ParseString(tc.a)
		b, _ := ParseString(tc.b)
		if got := a.Compare(b); got != tc.want {
			t.Errorf("%s.Compare(%s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := b.Compare(a); got != -tc.want {
			t.Errorf("%s.Compare(%s) = %d, want %d", tc.b, tc.a, got, -tc.want)
		}
	}
}

func TestAtLeastAndRange(t *testing.T) {
	v := Version{Major: 1, Minor: 29, Patch: 3}
	if !v.AtLeast(1, 29) || !v.AtLeast(1, 20) || v.AtLeast(1, 30) || v.AtLeast(2, 0) || !v.Before(1, 30) {
		t.Errorf("AtLeast/Before wrong for %s", v)
	}
	if v.MinorString() != "1.29" || v.String() != "v1.29.3" {
		t.Errorf("MinorString/String = %q/%q", v.MinorString(), v.String())
	}
	if !Oldest.Supported() || !Newest.Supported() || V(19).Supported() || V(38).Supported() {
		t.Error("Supported range wrong")
	}
	if Oldest.Minor != OldestMinor || Newest.Minor != NewestMinor {
		t.Error("constants disagree")
	}
}

func TestGolden(t *testing.T) {
	parsetest.Golden(t, "parsers/kpversion/*.txtar", func(t *testing.T, name string, a *txtar.Archive) map[string][]byte {
		v, err := Parse("version.txt", parsetest.Section(a, "input"))
		if err != nil {
			return map[string][]byte{"want-error.txt": []byte(err.Error() + "\n")}
		}
		back, err := Parse("formatted", Format(*v))
		if err != nil || *back != *v {
			t.Errorf("Parse(Format(x)) = %v, %v; want %v", back, err, v)
		}
		return map[string][]byte{"want.json": parsetest.JSON(t, v)}
	})
}

func FuzzParse(f *testing.F) {
	parsetest.Seeds(f, "parsers/kpversion/*.txtar")
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse("fuzz", data)
		if err != nil {
			if !parsers.IsInputError(err) {
				t.Fatalf("not an input error: %v", err)
			}
			return
		}
		back, err := Parse("formatted", Format(*v))
		if err != nil || *back != *v {
			t.Fatalf("Parse(Format(%v)) = %v, %v", v, back, err)
		}
	})
}

func TestFromImage(t *testing.T) {
	for _, tc := range []struct {
		image string
		want  string
		ok    bool
	}{
		{"registry.k8s.io/kube-apiserver:v1.32.4", "v1.32.4", true},
		{"registry.k8s.io/kube-proxy:v1.29.0@sha256:0123abcd", "v1.29.0", true},
		{"localhost:5000/kube-proxy:v1.30.2", "v1.30.2", true},
		{"localhost:5000/kube-proxy", "", false},
		{"registry.k8s.io/kube-proxy:latest", "", false},
		{"registry.k8s.io/kube-proxy:v0.0.0-master", "", false},
	} {
		v, ok := FromImage(tc.image)
		if ok != tc.ok || ok && v.String() != tc.want {
			t.Errorf("FromImage(%q) = %v, %v; want %s, %v", tc.image, v, ok, tc.want, tc.ok)
		}
	}
}
