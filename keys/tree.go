package keys

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
)

// The dump's tree digest, which lets a load hash the dump on every core: SHA-256 over
//
//	treeTag || uint64be(chunk) || uint64be(file length) || SHA-256(chunk 0) || SHA-256(chunk 1) || …
//
// where chunk k is the file's bytes [k·chunk, min((k+1)·chunk, length)). The tag keeps
// the root from being read as the SHA-256 of any other input cuzk hashes; the length
// and the chunk hashes in order make a truncated, extended or reordered dump hash to
// another root. A key written as the dump alone has this root as its pk_digest.
const (
	treeTag = "cuzk-dump-tree-v1"
	// treeChunk is the chunk size dumps are written with: small enough that a load
	// keeps every core busy to the end (a 2^22 key has about 40 chunks, a 2^26 key
	// about 580) and that the writer's chunk buffers stay a small part of a setup's
	// memory, large enough that the root hashes a negligible list.
	treeChunk = 64 << 20
	// treeMaxChunks bounds the chunk hashes a load keeps, whatever a damaged sidecar
	// says its chunk size is.
	treeMaxChunks = 1 << 20
	// treePiece is what one positional read of a load brings in.
	treePiece = 4 << 20
)

// treeRoot is the tree digest (hex) of a file of size bytes in chunks of chunk bytes
// whose SHA-256 sums are sums, in order.
func treeRoot(chunk, size int64, sums [][sha256.Size]byte) string {
	h := sha256.New()
	h.Write([]byte(treeTag))
	h.Write(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(chunk)), uint64(size)))
	for i := range sums {
		h.Write(sums[i][:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// treeChunks is how many chunks of chunk (> 0) bytes a file of size bytes has.
func treeChunks(chunk, size int64) int64 {
	n := size / chunk
	if size%chunk != 0 {
		n++
	}
	return n
}

// treeWriter writes to w and hashes each completed chunk of what passed through it in
// a goroutine of its own, at most cap(free) at a time (each holds a copy of its chunk),
// so hashing keeps up with a writer that is faster than one core's SHA-256. A buffer
// grows to the chunk size as it fills, so a small key does not allocate whole chunks.
type treeWriter struct {
	w     io.Writer
	chunk int
	n     int64
	buf   []byte // the chunk being filled
	sums  []*[sha256.Size]byte
	free  chan []byte // chunk buffers not being hashed
	made  int         // chunk buffers allocated, at most cap(free)
	wg    sync.WaitGroup
}

func newTreeWriter(w io.Writer, chunk int) *treeWriter {
	return &treeWriter{w: w, chunk: chunk, free: make(chan []byte, max(2, min(runtime.GOMAXPROCS(0), 4)))}
}

// Write copies a large p into chunk buffers while w writes it (a failed write fails
// the dump, so what was copied beyond what w took does not matter).
func (t *treeWriter) Write(p []byte) (int, error) {
	if len(p) < 1<<20 {
		n, err := t.w.Write(p)
		t.n += int64(n)
		t.add(p[:n])
		return n, err
	}
	done := make(chan struct{})
	go func() {
		t.add(p)
		close(done)
	}()
	n, err := t.w.Write(p)
	<-done
	t.n += int64(n)
	return n, err
}

// add copies p into chunk buffers, handing each full one to a hashing goroutine.
func (t *treeWriter) add(p []byte) {
	for q := p; len(q) > 0; {
		if t.buf == nil {
			t.buf = t.buffer()
		}
		c := min(t.chunk-len(t.buf), len(q))
		if len(t.buf)+c > cap(t.buf) {
			t.buf = append(make([]byte, 0, min(t.chunk, max(2*cap(t.buf), len(t.buf)+c))), t.buf...)
		}
		t.buf, q = append(t.buf, q[:c]...), q[c:]
		if len(t.buf) == t.chunk {
			t.hash()
		}
	}
}

// buffer is an empty chunk buffer: a new one while fewer than cap(free) exist, else
// the next one a hashing goroutine is done with.
func (t *treeWriter) buffer() []byte {
	select {
	case b := <-t.free:
		return b[:0]
	default:
	}
	if t.made < cap(t.free) {
		t.made++
		return make([]byte, 0, min(t.chunk, 1<<20))
	}
	return (<-t.free)[:0]
}

// hash hands the filled chunk to a goroutine.
func (t *treeWriter) hash() {
	sum, b := new([sha256.Size]byte), t.buf
	t.sums, t.buf = append(t.sums, sum), nil
	t.wg.Go(func() {
		*sum = sha256.Sum256(b)
		t.free <- b
	})
}

// finish hashes the last, partial chunk and returns the root and each chunk's SHA-256.
func (t *treeWriter) finish() (root string, chunks []string) {
	if len(t.buf) > 0 {
		t.hash()
	}
	t.wg.Wait()
	sums := make([][sha256.Size]byte, len(t.sums))
	chunks = make([]string, len(t.sums))
	for i, s := range t.sums {
		sums[i], chunks[i] = *s, hex.EncodeToString(s[:])
	}
	return treeRoot(int64(t.chunk), t.n, sums), chunks
}

// hashTree returns the SHA-256 of each chunk of the size bytes of f, read with
// positional reads on every core (onEveryCore), each chunk in pieces of treePiece
// bytes. read is told, on the calling goroutine, each piece's bytes as they are read.
func hashTree(f *os.File, chunk, size int64, read func(n int64)) ([][sha256.Size]byte, error) {
	if chunk <= 0 || size < 0 || treeChunks(chunk, size) > treeMaxChunks {
		return nil, fmt.Errorf("tree digest chunk size %d for %d bytes is out of range", chunk, size)
	}
	n := treeChunks(chunk, size)
	sums := make([][sha256.Size]byte, n)
	err := onEveryCore(n, func(k int64, buf []byte, report func(int64)) (err error) {
		sums[k], err = hashChunk(f, k, chunk, size, buf, report)
		return err
	}, min(treePiece, chunk), read)
	if err != nil {
		return nil, err
	}
	return sums, nil
}

// hashChunk is the SHA-256 of chunk k of the size bytes of f, read in pieces of
// len(buf) bytes, each piece's bytes told to report.
func hashChunk(f *os.File, k, chunk, size int64, buf []byte, report func(int64)) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	h := sha256.New()
	for off, end := k*chunk, min((k+1)*chunk, size); off < end; {
		m, err := f.ReadAt(buf[:min(int64(len(buf)), end-off)], off)
		if err != nil {
			return sum, fmt.Errorf("read %s at %d: %w", f.Name(), off, err)
		}
		h.Write(buf[:m])
		off += int64(m)
		report(int64(m))
	}
	h.Sum(sum[:0])
	return sum, nil
}

// onEveryCore runs work for k = 0 … n-1 on up to GOMAXPROCS goroutines, each taking
// the next k and keeping a buffer of bufBytes (0: none) for its calls, until every k is
// done or one call fails, whose error it returns. What work reports goes to progress
// (nil: nowhere) on the calling goroutine.
func onEveryCore(n int64, work func(k int64, buf []byte, report func(int64)) error, bufBytes int64, progress func(int64)) error {
	var next atomic.Int64
	var failed atomic.Bool
	var errOnce sync.Once
	var firstErr error
	reports := make(chan int64, 64)
	report := func(m int64) { reports <- m }
	var wg sync.WaitGroup
	for range min(int64(runtime.GOMAXPROCS(0)), n) {
		wg.Go(func() {
			buf := make([]byte, bufBytes)
			for k := next.Add(1) - 1; k < n && !failed.Load(); k = next.Add(1) - 1 {
				if err := work(k, buf, report); err != nil {
					errOnce.Do(func() { firstErr = err })
					failed.Store(true)
					return
				}
			}
		})
	}
	go func() {
		wg.Wait()
		close(reports)
	}()
	for m := range reports {
		if progress != nil {
			progress(m)
		}
	}
	return firstErr
}

// treeMismatch says how the chunks of a dump whose root is not the sidecar's differ
// from the chunk hashes the sidecar lists (want; nil when it lists none).
func treeMismatch(chunk, size int64, sums [][sha256.Size]byte, want []string) string {
	if len(want) != len(sums) {
		return fmt.Sprintf("%d chunks of %d bytes, its sidecar lists %d", len(sums), chunk, len(want))
	}
	var bad []int64
	for k := range sums {
		if hex.EncodeToString(sums[k][:]) != want[k] {
			bad = append(bad, int64(k))
		}
	}
	if len(bad) == 0 {
		return "every chunk matches its sidecar's list, the root does not: the sidecar is inconsistent"
	}
	msg := fmt.Sprintf("%d of %d chunks differ from its sidecar's:", len(bad), len(sums))
	for i, k := range bad {
		if i == 4 {
			msg += fmt.Sprintf(" and %d more", len(bad)-i)
			break
		}
		msg += fmt.Sprintf(" chunk %d (bytes %d-%d)", k, k*chunk, min((k+1)*chunk, size)-1)
	}
	return msg
}

// DumpDigest is the tree digest of the file at path in the chunks keys are written
// with: the pk digest of a pk.dump that cuzk setup wrote as the key.
func DumpDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	sums, err := hashTree(f, treeChunk, st.Size(), nil)
	if err != nil {
		return "", err
	}
	return treeRoot(treeChunk, st.Size(), sums), nil
}
