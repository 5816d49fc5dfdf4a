package collect

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/proxyscan/proxyscan/parsers/parsetest"
)

// deployObjects decodes every manifest of docs/deploy strictly (no unknown
// or repeated field) into its k8s.io/api type, and returns the objects by
// kind and name.
func deployObjects(t *testing.T) map[string]any {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(parsetest.Root(t), "docs", "deploy", "*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("manifests %v: %v", files, err)
	}
	types := map[string]func() any{
		"v1/Namespace":                                    func() any { return &corev1.Namespace{} },
		"v1/ServiceAccount":                               func() any { return &corev1.ServiceAccount{} },
		"v1/PersistentVolumeClaim":                        func() any { return &corev1.PersistentVolumeClaim{} },
		"rbac.authorization.k8s.io/v1/ClusterRole":        func() any { return &rbacv1.ClusterRole{} },
		"rbac.authorization.k8s.io/v1/ClusterRoleBinding": func() any { return &rbacv1.ClusterRoleBinding{} },
		"apps/v1/DaemonSet":                               func() any { return &appsv1.DaemonSet{} },
		"batch/v1/Job":                                    func() any { return &batchv1.Job{} },
	}
	out := map[string]any{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Fatalf("%s, document %d: %v", f, i+1, err)
			}
			newObj := types[tm.APIVersion+"/"+tm.Kind]
			if newObj == nil {
				t.Fatalf("%s, document %d: %s %s is not a kind this test decodes", f, i+1, tm.APIVersion, tm.Kind)
			}
			obj := newObj()
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Errorf("%s, document %d (%s): %v", f, i+1, tm.Kind, err)
				continue
			}
			name := obj.(metav1.Object).GetName()
			if name == "" {
				t.Errorf("%s, document %d (%s): no name", f, i+1, tm.Kind)
			}
			out[tm.Kind+"/"+name] = obj
		}
	}
	return out
}

func stripComments(doc string) string {
	var b bytes.Buffer
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// TestDeployManifests: the manifests of docs/deploy decode strictly into
// the Kubernetes API types, the DaemonSet runs collect --analyze into a
// directory per node on the node and copies the report where the merge
// reads it, the Job merges the reports of the claim the DaemonSet's
// header names, and every volume mounted is declared.
func TestDeployManifests(t *testing.T) {
	objs := deployObjects(t)
	ds, ok := objs["DaemonSet/proxyscan-collect"].(*appsv1.DaemonSet)
	if !ok {
		t.Fatalf("no DaemonSet proxyscan-collect in %v", keys(objs))
	}
	job, ok := objs["Job/proxyscan-merge"].(*batchv1.Job)
	if !ok {
		t.Fatalf("no Job proxyscan-merge in %v", keys(objs))
	}
	if _, ok := objs["PersistentVolumeClaim/proxyscan-reports"]; !ok {
		t.Errorf("no PersistentVolumeClaim proxyscan-reports")
	}
	script := strings.Join(ds.Spec.Template.Spec.Containers[0].Args, " ")
	for _, want := range []string{`proxyscan collect --analyze --dir "$b.new"`, `b="/bundles/${NODE_NAME}"`, `"$r/node-report.json"`} {
		if !strings.Contains(script, want) {
			t.Errorf("the DaemonSet's command lacks %s:\n%s", want, script)
		}
	}
	if NodeReportFile != "node-report.json" {
		t.Errorf("the DaemonSet copies node-report.json, collect writes %s", NodeReportFile)
	}
	hostPaths := map[string]string{}
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	if hostPaths["bundles"] != "/var/lib/proxyscan/bundles" || hostPaths["reports"] != "/var/lib/proxyscan/reports" {
		t.Errorf("host paths %v", hostPaths)
	}
	merge := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")
	if !strings.Contains(merge, "proxyscan analyze /data/reports -o json") {
		t.Errorf("the Job does not merge /data/reports:\n%s", merge)
	}
	if v := job.Spec.Template.Spec.Volumes; len(v) != 1 || v[0].PersistentVolumeClaim == nil || v[0].PersistentVolumeClaim.ClaimName != "proxyscan-reports" {
		t.Errorf("the Job's volumes %+v", v)
	}
	for _, sh := range []string{script, merge} {
		if out, err := exec.Command("sh", "-n", "-c", sh).CombinedOutput(); err != nil {
			t.Errorf("sh -n: %v: %s\n%s", err, out, sh)
		}
	}
	for _, spec := range []corev1.PodSpec{ds.Spec.Template.Spec, job.Spec.Template.Spec} {
		declared := map[string]bool{}
		for _, v := range spec.Volumes {
			declared[v.Name] = true
		}
		for _, c := range spec.Containers {
			for _, m := range c.VolumeMounts {
				if !declared[m.Name] {
					t.Errorf("container %s mounts %s, which is not declared", c.Name, m.Name)
				}
			}
		}
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestStrictDecoding: the decoding of the manifests refuses a field the API
// type lacks and a field written twice.
func TestStrictDecoding(t *testing.T) {
	for _, doc := range []string{
		"apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: x\nspec:\n  backoffLimits: 0\n",
		"apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: x\n  name: y\n",
	} {
		if err := yaml.UnmarshalStrict([]byte(doc), &batchv1.Job{}); err == nil {
			t.Errorf("decoded:\n%s", doc)
		}
	}
}
