package kpversion

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/proxyscan/proxyscan/parsers"
)

// Version is a Kubernetes release version.
type Version struct {
	Major int
	Minor int
	Patch int
	// Pre is whatever follows major.minor.patch, with its leading '-' or '+'
	// ("-rc.1", "-eks-abc", "+k3s1"); empty for a plain release.
	Pre string
}

// Oldest and Newest bound the kube-proxy minors proxyscan models.
var (
	Oldest = Version{Major: 1, Minor: 20}
	Newest = Version{Major: 1, Minor: 37}
)

// The supported minors as numbers, for tables indexed by minor.
const (
	OldestMinor = 20
	NewestMinor = 37
)

// maxLen bounds the text a version may have; anything longer is not a version.
const maxLen = 256

// V returns version 1.minor.0.
func V(minor int) Version { return Version{Major: 1, Minor: minor} }

// Parse reads a version file: the output of `kube-proxy --version` or a bare
// version string, on the first non-blank line. Anything after that line must
// be blank. Errors are *parsers.Error values naming name and the line.
func Parse(name string, data []byte) (*Version, error) {
	lines := bytes.Split(data, []byte("\n"))
	var v *Version
	for i, raw := range lines {
		line := strings.TrimSpace(string(raw))
		if line == "" {
			continue
		}
		pos := parsers.Pos{File: name, Line: i + 1}
		if v != nil {
			return nil, parsers.Errorf(pos, "unexpected text after the version: %q", clip(line))
		}
		got, err := ParseString(line)
		if err != nil {
			return nil, parsers.Errorf(pos, "%v", err)
		}
		v = &got
	}
	if v == nil {
		return nil, parsers.Errorf(parsers.Pos{File: name}, "no version found")
	}
	return v, nil
}

// ParseString parses one version string: "Kubernetes v1.37.2", "v1.28.0",
// "1.30" (patch 0), "v1.29.3-eks-abc" or "v1.31.0+k3s1".
func ParseString(s string) (Version, error) {
	s = strings.TrimSpace(s)
	if len(s) > maxLen {
		return Version{}, fmt.Errorf("version text too long (%d bytes)", len(s))
	}
	if rest, ok := strings.CutPrefix(s, "Kubernetes "); ok {
		s = strings.TrimSpace(rest)
	}
	body := strings.TrimPrefix(s, "v")
	if body == "" {
		return Version{}, fmt.Errorf("empty version")
	}
	if body[0] < '0' || body[0] > '9' {
		return Version{}, fmt.Errorf("not a version: %q", clip(s))
	}
	cut := strings.IndexAny(body, "-+")
	pre := ""
	if cut >= 0 {
		body, pre = body[:cut], body[cut:]
		if len(pre) == 1 || strings.ContainsAny(pre, " \t") {
			return Version{}, fmt.Errorf("malformed version suffix in %q", clip(s))
		}
	}
	parts := strings.Split(body, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, fmt.Errorf("malformed version %q: want MAJOR.MINOR[.PATCH]", clip(s))
	}
	nums := make([]int, 3)
	for i, p := range parts {
		n, err := number(p)
		if err != nil {
			return Version{}, fmt.Errorf("malformed version %q: %w", clip(s), err)
		}
		nums[i] = n
	}
	if len(parts) == 2 && pre != "" {
		return Version{}, fmt.Errorf("malformed version %q: a suffix needs MAJOR.MINOR.PATCH", clip(s))
	}
	return Version{Major: nums[0], Minor: nums[1], Patch: nums[2], Pre: pre}, nil
}

func number(p string) (int, error) {
	if p == "" {
		return 0, fmt.Errorf("empty number")
	}
	if len(p) > 6 {
		return 0, fmt.Errorf("number %q too large", p)
	}
	for _, c := range p {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is not a number", p)
		}
	}
	if len(p) > 1 && p[0] == '0' {
		return 0, fmt.Errorf("number %q has a leading zero", p)
	}
	return strconv.Atoi(p)
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// Format returns v as `kube-proxy --version` prints it ("Kubernetes v1.37.2"
// and a newline); [Parse] reads it back to v.
func Format(v Version) []byte { return []byte("Kubernetes " + v.String() + "\n") }

// String returns v as "v1.37.2" (with its suffix, if any).
func (v Version) String() string {
	return fmt.Sprintf("v%d.%d.%d%s", v.Major, v.Minor, v.Patch, v.Pre)
}

// MinorString returns the release line of v, "1.37". (A method named Minor
// would clash with the field.)
func (v Version) MinorString() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// AtLeast reports whether v is release major.minor or later.
func (v Version) AtLeast(major, minor int) bool {
	if v.Major != major {
		return v.Major > major
	}
	return v.Minor >= minor
}

// Before reports whether v is older than release major.minor.
func (v Version) Before(major, minor int) bool { return !v.AtLeast(major, minor) }

// IsPreRelease reports whether v is an alpha, beta or rc build.
func (v Version) IsPreRelease() bool {
	for _, p := range []string{"-alpha", "-beta", "-rc"} {
		if strings.HasPrefix(v.Pre, p) {
			return true
		}
	}
	return false
}

// Compare orders versions by major, minor and patch; a pre-release
// (alpha, beta, rc) sorts before the release it precedes. Vendor and build
// suffixes ("-eks-abc", "+k3s1") do not take part: such versions compare as
// the release they are built from. It returns -1, 0 or +1.
func (v Version) Compare(o Version) int {
	for _, d := range [][2]int{{v.Major, o.Major}, {v.Minor, o.Minor}, {v.Patch, o.Patch}} {
		if d[0] != d[1] {
			if d[0] < d[1] {
				return -1
			}
			return 1
		}
	}
	vp, op := v.IsPreRelease(), o.IsPreRelease()
	switch {
	case vp && !op:
		return -1
	case !vp && op:
		return 1
	case vp && op:
		return strings.Compare(v.Pre, o.Pre)
	}
	return 0
}

// Supported reports whether v's minor lies in [Oldest, Newest].
func (v Version) Supported() bool {
	return v.Major == 1 && v.Minor >= OldestMinor && v.Minor <= NewestMinor
}

// FromImage returns the release an image's tag names
// (registry.k8s.io/kube-proxy:v1.32.4, with or without a digest after
// it), and whether the tag is a release of Kubernetes 1.x.
func FromImage(image string) (Version, bool) {
	image, _, _ = strings.Cut(image, "@")
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return Version{}, false
	}
	v, err := ParseString(image[i+1:])
	return v, err == nil && v.Major == 1
}
