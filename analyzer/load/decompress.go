package load

import (
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// compressedFormat reports whether format is a compression proxyscan
// reads: of a bundle archive (.tgz, .tar.xz, .tar.bz2, .tar.zst), or of
// a file compressed alone.
func compressedFormat(format string) bool {
	switch format {
	case formatGzip, formatXZ, formatBzip2, formatZstd:
		return true
	}
	return false
}

// maxZstdWindow is the largest zstd window of a frame that is read: the
// decoder keeps that much of the text, whatever the archive's size. It is
// the most that zstd itself decodes without --memory (zstd -19 uses
// 8 MiB, --ultra -22 and --long 128 MiB).
const maxZstdWindow = 128 << 20

// openStream returns a reader of the text the compressed stream r holds,
// in format (gzip, xz, bzip2 or zstd), whose first bytes are head: of its
// first stream only for gzip and xz (what follows is a tar archive's
// concern, or multiStream's for a file compressed alone), of every stream
// for bzip2 and every frame for zstd, one after the other, as bzcat and
// zstdcat read them (data after the last that is not one is an error
// when it is reached). The error, before anything is allocated for the
// stream, says why it is not read: its header is not one of the format,
// or decoding it takes more memory than is allowed (an xz dictionary over
// maxXZDict, a zstd window over maxZstdWindow; later zstd frames are held
// to the same limit as they are reached).
func openStream(format string, head []byte, r io.Reader) (io.Reader, error) {
	switch format {
	case formatGzip:
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("not a valid gzip archive: %v", err)
		}
		zr.Multistream(false)
		return zr, nil
	case formatXZ:
		if dict, ok := xzDictSize(head); !ok || dict > maxXZDict {
			return nil, fmt.Errorf("an xz archive whose first block is not LZMA2 with a dictionary of at most %d MiB (xz -9 uses 64): recompress it with xz -6 or gzip", maxXZDict>>20)
		}
		xr, err := xz.ReaderConfig{SingleStream: true}.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("not a valid xz archive: %v", err)
		}
		return xr, nil
	case formatBzip2:
		if err := bzip2Header(head); err != nil {
			return nil, fmt.Errorf("not a valid bzip2 archive: %v", err)
		}
		// The decoder holds one block (900 kB at most) and its tables,
		// whatever the stream says.
		return &streamsEnd{r: bzip2.NewReader(r), format: format}, nil
	case formatZstd:
		var h zstd.Header
		if err := h.Decode(head); err != nil {
			return nil, fmt.Errorf("not a valid zstd archive: %v", err)
		}
		if h.DictionaryID != 0 {
			return nil, fmt.Errorf("not a valid zstd archive: its first frame needs dictionary %d, which proxyscan does not have (zstd -D): recompress it without one", h.DictionaryID)
		}
		window := h.WindowSize
		if h.SingleSegment {
			window = h.FrameContentSize
		}
		if window > maxZstdWindow {
			return nil, fmt.Errorf("a zstd archive whose window is %d MiB, over the %d MiB that proxyscan (and zstd without --memory) decodes: recompress it with zstd -19 or less, or gzip", window>>20, maxZstdWindow>>20)
		}
		zr, err := zstd.NewReader(r,
			// Decoded on the caller's goroutine, as it reads: no
			// goroutine or buffer of blocks ahead of it to release.
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(maxZstdWindow),
			zstd.WithDecoderMaxMemory(maxZstdWindow))
		if err != nil {
			return nil, fmt.Errorf("not a valid zstd archive: %v", err)
		}
		return &streamsEnd{r: zr, format: format}, nil
	}
	return nil, fmt.Errorf("a %s-compressed archive, which proxyscan does not read", format)
}

// bzip2Header returns what is wrong with the header of a bzip2 stream
// whose first bytes are head: "BZh", the block size (1 to 9), then the
// magic number of a block or of the stream's end.
func bzip2Header(head []byte) error {
	if len(head) < 10 {
		return io.ErrUnexpectedEOF
	}
	if archiveFormat(head) != formatBzip2 {
		return errors.New("bad magic value")
	}
	switch string(head[4:10]) {
	case "\x31\x41\x59\x26\x53\x59", "\x17\x72\x45\x38\x50\x90":
		return nil
	}
	return errors.New("bad magic value of its first block")
}

// streamsEnd reads the text of a bzip2 or zstd reader, saying of data
// after the last stream or frame that is not one that it is trailing
// garbage (both decoders read on at the end of each). Its first error is
// kept: read again, the bzip2 decoder would go on past it and fail
// otherwise.
type streamsEnd struct {
	r      io.Reader
	format string
	// n is the bytes of text read.
	n int64
	// err is the first error other than io.EOF.
	err error
}

func (s *streamsEnd) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.r.Read(p)
	s.n += int64(n)
	if err != nil && err != io.EOF {
		switch {
		case s.n > 0 && trailingGarbage(s.format, err):
			err = fmt.Errorf("data after the last %s stream is not a %s stream (trailing garbage: %v)", s.format, s.format, err)
		case errors.Is(err, zstd.ErrWindowSizeExceeded) || errors.Is(err, zstd.ErrDecoderSizeExceeded):
			err = fmt.Errorf("a zstd frame whose window is over the %d MiB that proxyscan decodes (%v)", maxZstdWindow>>20, err)
		}
		s.err = err
	}
	return n, err
}

// trailingGarbage reports whether err, of a bzip2 or zstd decoder, is
// that of data where the next stream or frame should start.
func trailingGarbage(format string, err error) bool {
	switch format {
	case formatBzip2:
		var se bzip2.StructuralError
		return errors.As(err, &se) && strings.Contains(string(se), "continuation file")
	case formatZstd:
		return errors.Is(err, zstd.ErrMagicMismatch)
	}
	return false
}
