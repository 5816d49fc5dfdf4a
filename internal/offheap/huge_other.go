//go:build unix && !linux

package offheap

// adviseHuge does nothing where transparent huge pages are not asked for
// with madvise.
func adviseHuge([]byte) {}
