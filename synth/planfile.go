package synth

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
)

// A block plan is a function of the constraint system alone, and finding it costs
// more than reading the system (porep-k24 on 2 cores: 4.3 s against 1.9 s), on every
// start of a worker and every load of an evicted circuit. It is kept in a file beside
// the system's cache file (planFile), tied to that file by the checksum in its trailer
// and checked whole before it is used; any mismatch or damage and the plan is found
// again and the file rewritten.
//
// Layout, little-endian: planMagic, the R1CS file's checksum, the instruction count,
// a byte saying whether the plan is used (a system without a useful split keeps
// gnark's solver, and the file says so), then for a used plan prefix, suffix, blocks
// and largest, the task count, each task's range count and ranges (int32 start and
// end), and one unknown byte per instruction; last, the SHA-256 of all that.
//
// planMagic names the layout and the planner: change it with any change to planBlocks
// or r1cUnknowns that alters a plan (TestBlockPlanDigest fails when one does).
const planMagic = "cuzk-blockplan-1"

// planFile is where the plan of the R1CS cache file at r1csPath is kept.
func planFile(r1csPath string) string { return r1csPath + ".plan" }

// encodePlan is p's file for a system of n instructions whose R1CS file has checksum
// sum; p nil records that the system has no useful plan.
func encodePlan(sum []byte, n int, p *blockPlan) []byte {
	le := binary.LittleEndian
	b := append([]byte(planMagic), sum...)
	b = le.AppendUint64(b, uint64(n))
	if p == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		for _, v := range []int{p.prefix, p.suffix, p.blocks, p.largest} {
			b = le.AppendUint64(b, uint64(v))
		}
		b = le.AppendUint64(b, uint64(len(p.tasks)))
		for _, t := range p.tasks {
			b = le.AppendUint32(b, uint32(len(t)))
			for _, r := range t {
				b = le.AppendUint32(b, uint32(r.start))
				b = le.AppendUint32(b, uint32(r.end))
			}
		}
		b = slices.Grow(b, len(p.unknown)+sha256.Size)
		for _, u := range p.unknown {
			b = append(b, byte(u))
		}
	}
	h := sha256.Sum256(b)
	return append(b, h[:]...)
}

// writePlanFile writes p's file to path atomically (writeFileAtomic).
func writePlanFile(path string, sum []byte, n int, p *blockPlan) error {
	return writeFileAtomic(path, func(f *os.File) error {
		_, err := f.Write(encodePlan(sum, n, p))
		return err
	})
}

// readPlanFile reads the plan at path for a system of n instructions whose R1CS file
// has checksum sum. used is false for a system recorded as having no useful plan. Any
// file that is not a whole, consistent plan of that system gives an error.
func readPlanFile(path string, sum []byte, n int) (p *blockPlan, used bool, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, err
	}
	bad := func(format string, args ...any) (*blockPlan, bool, error) {
		return nil, false, fmt.Errorf("%s: %w: "+format, append([]any{path, errCorrupt}, args...)...)
	}
	if len(data) < sha256.Size {
		return bad("%d bytes", len(data))
	}
	body := data[:len(data)-sha256.Size]
	if h := sha256.Sum256(body); !bytes.Equal(h[:], data[len(body):]) {
		return bad("checksum mismatch")
	}
	r := bytes.NewReader(body)
	head := make([]byte, len(planMagic)+sha256.Size)
	if _, err := io.ReadFull(r, head); err != nil || string(head[:len(planMagic)]) != planMagic {
		return bad("not a plan of this version")
	}
	if !bytes.Equal(head[len(planMagic):], sum) {
		return bad("the plan of another constraint system")
	}
	le := binary.LittleEndian
	var count uint64
	var flag byte
	if binary.Read(r, le, &count) != nil || count != uint64(n) {
		return bad("a plan of %d instructions, the system has %d", count, n)
	}
	if flag, err = r.ReadByte(); err != nil || flag > 1 {
		return bad("no plan flag")
	}
	if flag == 0 {
		if r.Len() != 0 {
			return bad("%d bytes after an unused plan", r.Len())
		}
		return nil, false, nil
	}
	var hdr [5]uint64 // prefix, suffix, blocks, largest, tasks
	if binary.Read(r, le, &hdr) != nil {
		return bad("short header")
	}
	prefix, suffix, blocks, largest, nTasks := hdr[0], hdr[1], hdr[2], hdr[3], hdr[4]
	if prefix > suffix || suffix > count || blocks > count || largest > count || nTasks > count {
		return bad("prefix %d, suffix %d, %d blocks, largest %d, %d tasks of %d instructions", prefix, suffix, blocks, largest, nTasks, count)
	}
	p = &blockPlan{prefix: int(prefix), suffix: int(suffix), blocks: int(blocks), largest: int(largest),
		tasks: make([][]instrRange, nTasks)}
	var all []instrRange
	for i := range p.tasks {
		var k uint32
		if binary.Read(r, le, &k) != nil || uint64(k) > count || int(k)*8 > r.Len() {
			return bad("task %d", i)
		}
		t := make([]instrRange, k)
		for j := range t {
			var se [2]uint32
			if binary.Read(r, le, &se) != nil {
				return bad("task %d range %d", i, j)
			}
			t[j] = instrRange{start: int32(se[0]), end: int32(se[1])}
		}
		p.tasks[i] = t
		all = append(all, t...)
	}
	// The ranges tile [prefix, suffix): every instruction in exactly one task.
	slices.SortFunc(all, func(a, b instrRange) int { return int(a.start) - int(b.start) })
	at := int32(prefix)
	for _, x := range all {
		if x.start != at || x.end <= x.start {
			return bad("ranges do not tile [%d, %d) at %d", prefix, suffix, at)
		}
		at = x.end
	}
	if at != int32(suffix) || uint64(int32(suffix)) != suffix {
		return bad("ranges end at %d, not %d", at, suffix)
	}
	if uint64(r.Len()) != count {
		return bad("%d unknown bytes for %d instructions", r.Len(), count)
	}
	p.unknown = make([]r1cUnknown, count)
	for i, b := range body[len(body)-r.Len():] {
		u := r1cUnknown(b)
		if u != unknownNone && u != unknownAny && (u>>6 == 0 || int(u&63) > unknownMaxIndex) {
			return bad("instruction %d: unknown %#x", i, b)
		}
		p.unknown[i] = u
	}
	return p, true, nil
}
