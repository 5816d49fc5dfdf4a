package kube_test

import (
	"os"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/proxyscan/proxyscan/parsers/kube"
)

func TestZZHeap(t *testing.T) {
	data, err := os.ReadFile("/tmp/perfb/cluster/cluster.yaml")
	if err != nil {
		t.Skip()
	}
	o, err := kube.Parse("x", data)
	if err != nil {
		t.Fatal(err)
	}
	data = nil
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("live %d MB", ms.HeapAlloc>>20)
	w, _ := os.Create("/tmp/perfb/kheap.prof")
	pprof.WriteHeapProfile(w)
	w.Close()
	runtime.KeepAlive(o)
}
