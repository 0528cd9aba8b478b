package gpu

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/keys"
	"github.com/cuzk/cuzk/prover"
)

// TestKeyTierTimes times a proving key's tier moves on the device: file to pinned (the
// worker's read: sidecar checks, the digest of pk.dump with its decode, NewProvingKey), read
// once from wherever the file is (cold when the caller dropped the page cache) and once
// more from the page cache, pinned to device (the CUDA backend's LoadKey from the host
// copy), both together, and the device copy's Close. The key is
// CUZK_KEYTIER_DIR/CUZK_KEYTIER_CIRCUIT/pk.dump when both are set, else a dense synthetic
// key of 2^CUZK_KEYTIER_LOG (default 24) constraints and wires written to a temporary
// directory as cuzk setup writes keys (pk.dump alone). Pinned to device runs
// CUZK_KEYTIER_RUNS times (default 3); the median is printed. One KEYTIER line per key.
func TestKeyTierTimes(t *testing.T) {
	skipWithoutDevice(t)
	if os.Getenv("CUZK_KEYTIER") != "1" {
		t.Skip("set CUZK_KEYTIER=1 to time key tier moves")
	}
	ctx := context.Background()
	dir, name, digest := keys.Dir(os.Getenv("CUZK_KEYTIER_DIR")), os.Getenv("CUZK_KEYTIER_CIRCUIT"), ""
	if dir == "" || name == "" {
		logN := envInt("CUZK_KEYTIER_LOG", 24)
		rng := rand.New(rand.NewPCG(31, 32))
		gpk, nbPublic := timingGnarkKey(logN, distinctG1(rng, 1<<16), distinctG2(rng, 1<<16))
		vk := new(groth16bls.VerifyingKey)
		vk.G1.Alpha, vk.G1.Beta, vk.G1.Delta = gpk.G1.A[0], gpk.G1.B[0], gpk.G1.Z[0]
		vk.G2.Beta, vk.G2.Delta, vk.G2.Gamma = gpk.G2.B[0], gpk.G2.B[1], gpk.G2.B[1]
		vk.G1.K = gpk.G1.A[:nbPublic]
		dir, name = keys.Dir(t.TempDir()), fmt.Sprintf("timing-k%d", logN)
		var err error
		if digest, err = dir.WriteDumpOnly(name, gpk, vk); err != nil {
			t.Fatal(err)
		}
	}

	// The first read is from wherever the file is (a cold cache when the caller dropped
	// it), the second from the page cache the first filled: the file tier's two cases.
	cold := readKeyTimed(t, dir, name, digest)
	cold.pk = nil
	runtime.GC()
	warm := readKeyTimed(t, dir, name, digest)
	pk, st, toPinned := warm.pk, warm.st, warm.total

	b := testBackend(t)
	var up []time.Duration
	var closeTime time.Duration
	var devBytes, streamed int64
	for range max(1, envInt("CUZK_KEYTIER_RUNS", 3)) {
		t0 := time.Now()
		k, err := b.LoadKey(ctx, pk)
		if err != nil {
			t.Fatalf("pinned to device, %s: %v", name, err)
		}
		up = append(up, time.Since(t0))
		devBytes = k.Bytes()
		if s, ok := k.(prover.StreamedKey); ok {
			streamed = s.StreamedBytes()
		}
		t0 = time.Now()
		if err := k.Close(); err != nil {
			t.Fatal(err)
		}
		closeTime = time.Since(t0)
	}
	slices.Sort(up)
	med := up[len(up)/2]
	host := pk.HostBytes()
	fmt.Printf("KEYTIER %s source=%s dump_bytes=%d host_bytes=%d device_bytes=%d streamed_bytes=%d "+
		"file_to_pinned_ms=%.0f (read %.0f prover key %.0f) cold_file_to_pinned_ms=%.0f (read %.0f prover key %.0f) "+
		"pinned_to_device_ms=%.0f (min %.0f max %.0f, %d runs) file_to_device_ms=%.0f "+
		"cold_file_to_device_ms=%.0f pinned_to_device_GBps=%.1f device_close_ms=%.0f device=%s\n",
		name, st.Source, fileBytes(dir.Path(name, keys.DumpFile)), host, devBytes, streamed,
		ms(toPinned), ms(warm.read), ms(warm.prover), ms(cold.total), ms(cold.read), ms(cold.prover),
		ms(med), ms(up[0]), ms(up[len(up)-1]), len(up), ms(toPinned+med), ms(cold.total+med),
		float64(host)/med.Seconds()/1e9, ms(closeTime), b.Device().Name)
}

// timedKeyRead is one read of a key from its file to the prover's host copy: the read
// of pk.dump (its digest and its decode, which follows the digest chunk by chunk, with
// the sidecar checks) and NewProvingKey.
type timedKeyRead struct {
	pk                  *prover.ProvingKey
	st                  keys.LoadStats
	read, prover, total time.Duration
}

// readKeyTimed reads name's key from dir as the worker does.
func readKeyTimed(t *testing.T, dir keys.Dir, name, digest string) timedKeyRead {
	t.Helper()
	var r timedKeyRead
	t0 := time.Now()
	gpk, _, st, err := dir.LoadWith(name, digest, keys.LoadOptions{})
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	loaded := time.Now()
	pk, err := prover.NewProvingKey(name, gpk, int(gpk.Domain.Cardinality))
	if err != nil {
		t.Fatal(err)
	}
	r.pk, r.st = pk, st
	r.read, r.prover, r.total = loaded.Sub(t0), time.Since(loaded), time.Since(t0)
	return r
}
