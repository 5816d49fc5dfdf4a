package kube

import (
	"bytes"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/proxyscan/proxyscan/parsers"
)

// `kubectl describe configmap` prints a ConfigMap as
//
//	Name:         kube-proxy
//	Namespace:    kube-system
//	Labels:       app=kube-proxy
//	Annotations:  <none>
//
//	Data
//	====
//	config.conf:
//	----
//	apiVersion: kubeproxy.config.k8s.io/v1alpha1
//	...
//
//	kubeconfig.conf:
//	----
//	...
//
//	BinaryData
//	====
//
//	Events:  <none>
//
// each data key followed by a line of four dashes and its value as it is,
// the keys sorted. Support tickets often carry it rather than an export.
var reDescribeKey = regexp.MustCompile(`^[-._A-Za-z0-9]+:$`)

// maxDescribe bounds the `kubectl describe` output read: ConfigMaps hold at
// most 1 MiB of data.
const maxDescribe = 4 << 20

// IsDescribe reports whether head, the start of a file, is the output of
// `kubectl describe configmap`: a Name and Namespace header and a Data
// section.
func IsDescribe(head []byte) bool {
	return bytes.HasPrefix(bytes.TrimLeft(head, " \t\r\n\ufeff"), []byte("Name:")) &&
		parsers.KubectlDescribed(head) && parsers.DescribedData(head)
}

// mayBeDescribe reports whether t, the start of a file after white space,
// may be the start of `kubectl describe` output: "Name:" or the first
// bytes of it.
func mayBeDescribe(t []byte) bool {
	if len(t) < len("Name:") {
		return bytes.HasPrefix([]byte("Name:"), t)
	}
	return bytes.HasPrefix(t, []byte("Name:"))
}

// parseDescribe reads the ConfigMaps `kubectl describe configmap` printed
// (one or several, as `kubectl describe configmap -A` prints them, each
// starting at its Name line). Each data key's value is the lines between
// its dashes and the next key, or the BinaryData or Events section,
// without the blank line kubectl prints after it; DataLines gives the line
// of its first line, so that positions in it are lines of the file.
func parseDescribe(name string, data []byte) (*Objects, error) {
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	objs := &Objects{}
	var cm *ConfigMap
	inData := false
	key, start := "", 0
	var value []string
	flush := func() {
		if cm != nil && key != "" {
			for len(value) > 0 && strings.TrimSpace(value[len(value)-1]) == "" {
				value = value[:len(value)-1]
			}
			v := strings.Join(value, "\n")
			if len(value) > 0 {
				v += "\n"
			}
			cm.Data[key] = v
			cm.DataLines[key] = start
		}
		key, value = "", nil
	}
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], " \t")
		next := ""
		if i+1 < len(lines) {
			next = strings.TrimRight(lines[i+1], " \t")
		}
		switch {
		case strings.HasPrefix(l, "Name:") && strings.HasPrefix(next, "Namespace:"):
			flush()
			cm = &ConfigMap{
				ConfigMap: &corev1.ConfigMap{
					TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
					ObjectMeta: metav1.ObjectMeta{Name: strings.TrimSpace(strings.TrimPrefix(l, "Name:")), Namespace: strings.TrimSpace(strings.TrimPrefix(next, "Namespace:"))},
					Data:       map[string]string{},
				},
				Pos:       parsers.Pos{File: name, Line: i + 1},
				DataLines: map[string]int{},
				Described: true,
			}
			objs.ConfigMaps = append(objs.ConfigMaps, cm)
			inData = false
			i++
		case cm == nil:
			// Lines before the first ConfigMap (a prompt left blank).
		case (l == "Data" || l == "BinaryData") && next == "====":
			flush()
			inData = l == "Data"
			i++
		case strings.HasPrefix(l, "Events:"):
			flush()
			inData = false
		case inData && reDescribeKey.MatchString(l) && next == "----":
			flush()
			key, start = strings.TrimSuffix(l, ":"), i+3
			i++
		case inData && key != "":
			value = append(value, lines[i])
		}
	}
	flush()
	if len(objs.ConfigMaps) == 0 {
		return nil, parsers.Errorf(parsers.Pos{File: name, Line: 1}, "kubectl describe output without a ConfigMap")
	}
	return objs, nil
}
