package keys

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// A dump whose sidecar lists each chunk's SHA-256 (and whose list hashes to the
// sidecar's tree digest) is hashed and decoded at once: the hash runs over the file on
// every core, each chunk compared with its listed SHA-256 as it completes, and the
// decoder reads only bytes of chunks that matched (verifiedPrefix). A length the
// decoder allocates by has so been verified, as when the whole file was hashed first,
// and a cold load costs about one read of the disk instead of a read followed by a
// decode.

// errChunkDiffers is a chunk whose SHA-256 is not the one its sidecar lists.
var errChunkDiffers = errors.New("chunk differs from its sidecar's list")

// verifiedPrefix is how much of the dump, from its start, has matched the sidecar's
// chunk list; readers wait on it.
type verifiedPrefix struct {
	chunk, size int64
	want        [][sha256.Size]byte

	mu   sync.Mutex
	cond sync.Cond
	done []bool
	upTo int64 // bytes [0, upTo) matched
	err  error // the hash failed: no more bytes will match
}

// newVerifiedPrefix is the tracker for s's dump, or nil when s lists no chunk hashes
// consistent with its tree digest (a sidecar without the list, or a damaged one): such
// a dump is hashed whole before it is decoded.
func newVerifiedPrefix(s *dumpSum) *verifiedPrefix {
	if s.DumpTree == "" || s.DumpChunk <= 0 || s.DumpBytes < 0 {
		return nil
	}
	n := treeChunks(s.DumpChunk, s.DumpBytes)
	if n > treeMaxChunks || int64(len(s.DumpChunks)) != n {
		return nil
	}
	want := make([][sha256.Size]byte, n)
	for k, h := range s.DumpChunks {
		b, err := hex.DecodeString(h)
		if err != nil || len(b) != sha256.Size {
			return nil
		}
		copy(want[k][:], b)
	}
	if treeRoot(s.DumpChunk, s.DumpBytes, want) != s.DumpTree {
		return nil
	}
	v := &verifiedPrefix{chunk: s.DumpChunk, size: s.DumpBytes, want: want, done: make([]bool, n)}
	v.cond.L = &v.mu
	return v
}

// hash reads f on every core, marking each chunk that matches its listed SHA-256;
// the first that does not, or a read error, ends it and every wait.
func (v *verifiedPrefix) hash(f *os.File, read func(int64)) error {
	err := onEveryCore(int64(len(v.want)), func(k int64, buf []byte, report func(int64)) error {
		sum, err := hashChunk(f, k, v.chunk, v.size, buf, report)
		if err != nil {
			return err
		}
		if sum != v.want[k] {
			return fmt.Errorf("%w: chunk %d", errChunkDiffers, k)
		}
		v.matched(k)
		return nil
	}, min(treePiece, v.chunk), read)
	if err != nil {
		v.mu.Lock()
		v.err = err
		v.cond.Broadcast()
		v.mu.Unlock()
	}
	return err
}

// matched records that chunk k matched, waking readers when the verified prefix grows.
func (v *verifiedPrefix) matched(k int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.done[k] = true
	i := v.upTo / v.chunk
	for i < int64(len(v.done)) && v.done[i] {
		i++
	}
	if up := min(i*v.chunk, v.size); up > v.upTo {
		v.upTo = up
		v.cond.Broadcast()
	}
}

// wait returns once the bytes [0, end) (end capped at the dump's size) have matched,
// with how many bytes from the start have; or with the hash's error.
func (v *verifiedPrefix) wait(end int64) (int64, error) {
	end = min(end, v.size)
	v.mu.Lock()
	defer v.mu.Unlock()
	for v.upTo < end && v.err == nil {
		v.cond.Wait()
	}
	if v.upTo < end {
		return v.upTo, fmt.Errorf("not verified: %w", v.err)
	}
	return v.upTo, nil
}

// gatedFile reads f from off on, each read only as far as v has verified (all of f
// when v is nil).
type gatedFile struct {
	f   *os.File
	v   *verifiedPrefix
	off int64
}

func (g *gatedFile) Read(p []byte) (int, error) {
	if g.v != nil && len(p) > 0 {
		if g.off >= g.v.size {
			return 0, io.EOF
		}
		upTo, err := g.v.wait(g.off + 1)
		if err != nil {
			return 0, err
		}
		p = p[:min(int64(len(p)), upTo-g.off)]
	}
	n, err := g.f.ReadAt(p, g.off)
	g.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}
