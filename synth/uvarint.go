package synth

import (
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"sync"
)

// errCallData marks a call-data section that does not hold the varints it announces.
var errCallData = errors.New("invalid call data")

// uvarints32 decodes count unsigned varints, each below 2^32, from buf, as gnark
// writes a constraint system's call data (binary.AppendUvarint of each uint32), on up
// to tasks goroutines. A varint ends at its first byte below 0x80, so a byte after
// such a byte starts a varint wherever it sits: each goroutine's share of buf begins
// after one, counts the varints ending in it, and the shares' counts place their
// values. buf must hold exactly count varints.
func uvarints32(buf []byte, count uint64, tasks int) ([]uint32, error) {
	if count > uint64(len(buf)) { // every varint takes a byte at least
		return nil, errCallData
	}
	if len(buf) > 0 && buf[len(buf)-1] >= 0x80 {
		return nil, errCallData // the last varint runs past the end
	}
	tasks = max(1, min(tasks, len(buf)/(1<<16)))
	// Share i is buf[cut[i]:cut[i+1]], each cut just after a varint's last byte.
	cut := make([]int, tasks+1)
	cut[tasks] = len(buf)
	for i := 1; i < tasks; i++ {
		c := max(len(buf)*i/tasks, cut[i-1])
		for c < len(buf) && buf[c-1] >= 0x80 {
			c++
		}
		cut[i] = c
	}
	ends := make([]uint64, tasks) // varints ending in each share
	var wg sync.WaitGroup
	for i := range tasks {
		wg.Go(func() {
			var n uint64
			for _, b := range buf[cut[i]:cut[i+1]] {
				if b < 0x80 {
					n++
				}
			}
			ends[i] = n
		})
	}
	wg.Wait()
	var total uint64
	at := make([]uint64, tasks)
	for i, n := range ends {
		at[i] = total
		total += n
	}
	if total != count {
		return nil, errCallData
	}
	out := make([]uint32, count)
	bad := make([]bool, tasks)
	for i := range tasks {
		wg.Go(func() { bad[i] = !decodeUvarints32(out[at[i]:at[i]+ends[i]], buf[cut[i]:cut[i+1]]) })
	}
	wg.Wait()
	for _, b := range bad {
		if b {
			return nil, errCallData
		}
	}
	return out, nil
}

// decodeUvarints32 fills out from buf, which holds exactly len(out) varints; false
// when one is longer than 5 bytes or at least 2^32. Written out: binary.Uvarint in its
// place made BenchmarkReadR1CSFile slower.
func decodeUvarints32(out []uint32, buf []byte) bool {
	p := 0
	for i := range out {
		var v uint64
		for s := uint(0); ; s += 7 {
			if s > 28 {
				return false
			}
			b := buf[p]
			p++
			v |= uint64(b&0x7f) << s
			if b < 0x80 {
				break
			}
		}
		if v > math.MaxUint32 {
			return false
		}
		out[i] = uint32(v)
	}
	return true
}

// putUvarints32 encodes vals as unsigned varints, one after another, exactly as
// binary.AppendUvarint of each would, on up to tasks goroutines: each share's encoded
// length is counted first, so each goroutine writes its share in place.
func putUvarints32(vals []uint32, tasks int) []byte {
	tasks = max(1, min(tasks, len(vals)/(1<<16)))
	share := func(i int) []uint32 { return vals[len(vals)*i/tasks : len(vals)*(i+1)/tasks] }
	at := make([]int, tasks+1)
	var wg sync.WaitGroup
	for i := range tasks {
		wg.Go(func() {
			n := 0
			for _, v := range share(i) {
				n += uvarintLen32(v)
			}
			at[i+1] = n
		})
	}
	wg.Wait()
	for i := range tasks {
		at[i+1] += at[i]
	}
	out := make([]byte, at[tasks])
	for i := range tasks {
		wg.Go(func() {
			b := out[at[i]:at[i+1]]
			for _, v := range share(i) {
				b = b[binary.PutUvarint(b, uint64(v)):]
			}
		})
	}
	wg.Wait()
	return out
}

// uvarintLen32 is the length of v's unsigned varint: 7 bits a byte.
func uvarintLen32(v uint32) int {
	return 1 + (bits.Len32(v|1)-1)/7
}
