//go:build unix

package offheap

import "syscall"

// mmap maps n bytes of anonymous private memory, read and write: no file
// backs it, so it cannot fault when a file is truncated under it.
func mmap(n int) ([]byte, error) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err == nil {
		adviseHuge(b)
	}
	return b, err
}

// munmap unmaps a buffer from mmap.
func munmap(b []byte) error { return syscall.Munmap(b) }
