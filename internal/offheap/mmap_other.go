//go:build !unix

package offheap

import "errors"

// mmap is not available here: buffers are made on the heap.
func mmap(int) ([]byte, error) { return nil, errors.New("no anonymous mappings") }

// munmap is never called here.
func munmap([]byte) error { return nil }
