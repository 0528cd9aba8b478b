package gpu

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// TestMontChainGenerated checks the library's default Montgomery product, the carry
// chains of gpu/cuda/ff/mont_chain.cuh: the committed file is what its
// generator writes, and its PTX, interpreted on integers, computes a·b·R⁻¹ mod p below
// 2p for Fp and Fr on edge and random operands. It runs without a GPU.
func TestMontChainGenerated(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed: the generator and its checker are Python")
	}
	gen := exec.Command(py, "mont_chain.py")
	gen.Dir = "cuda/gen"
	want, err := gen.Output()
	if err != nil {
		t.Fatalf("run the generator: %v", err)
	}
	got, err := os.ReadFile("cuda/ff/mont_chain.cuh")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("gpu/cuda/ff/mont_chain.cuh differs from what gen/mont_chain.py writes: regenerate it")
	}
	chk := exec.Command(py, "check_mont_chain.py", "../ff/mont_chain.cuh")
	chk.Dir = "cuda/gen"
	out, err := chk.CombinedOutput()
	if err != nil {
		t.Fatalf("the generated product is wrong: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
