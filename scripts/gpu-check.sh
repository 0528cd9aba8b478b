#!/usr/bin/env bash
# gpu-check.sh: build the CUDA library, run the GPU correctness tests and the GPU
# benchmarks, all in ONE call on the GPU machine. Logs go to $OUT (or a temp dir).
#
# Prepare on the development machine (Go is not needed on the GPU machine):
#   CGO_ENABLED=1 go test -c -o .devbuild/gpu.test ./gpu
# then run this script there with .devbuild carried along.
#
# Environment:
#   CUZK_PREBUILT_LIB=path  use this library instead of building (the build still runs
#                           in the background and is then checked with the short tests)
#   CUZK_GPU_BENCH_LOGS     benchmark sizes (default 20,22,24); CUZK_SKIP_BENCH=1 skips
#   NVCC_ARCH               passed to make (default: sm_90a machine code + compute_80 PTX)
set -u -o pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
fail=0
note() { echo "$*" | tee -a "$SUMMARY"; }

{ nvidia-smi; nvcc --version; nproc; } >"$OUT/machine.txt" 2>&1
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"

build() {
	local t0=$SECONDS
	if make -C gpu/cuda -j8 ${NVCC_ARCH:+NVCC_ARCH="$NVCC_ARCH"} >"$OUT/build.log" 2>&1; then
		echo "build: ok in $((SECONDS - t0)) s" >>"$OUT/build.log"
		cp gpu/cuda/build/libcuzkgpu.so "$OUT/" 2>/dev/null
		return 0
	fi
	echo "build: FAILED after $((SECONDS - t0)) s" >>"$OUT/build.log"
	return 1
}

if [ -n "${CUZK_PREBUILT_LIB:-}" ]; then
	LIB=$(realpath "$CUZK_PREBUILT_LIB")
	build &
	BUILD_PID=$!
else
	if ! build; then
		note "FAIL build (see build.log)"
		tail -30 "$OUT/build.log"
		exit 1
	fi
	LIB=$ROOT/gpu/cuda/build/libcuzkgpu.so
	BUILD_PID=
fi
note "$(tail -1 "$OUT/build.log" 2>/dev/null || echo 'build: running in background')"
export CUZK_GPU_LIB=$LIB
BIN=$ROOT/.devbuild/gpu.test
[ -x "$BIN" ] || { note "FAIL missing $BIN (build it with go test -c)"; exit 1; }

# Correctness: every test in ./gpu (MSM G1/G2, NTT, compute_h, proofs, NVML).
(cd gpu && "$BIN" -test.v -test.timeout 15m) >"$OUT/test.log" 2>&1
rc=$?
grep -E "^(--- |ok|FAIL|PASS)" "$OUT/test.log" | grep -v "^--- PASS" >>"$SUMMARY"
note "tests: $(grep -c '^--- PASS' "$OUT/test.log") passed, $(grep -c '^--- FAIL' "$OUT/test.log") failed, $(grep -c '^--- SKIP' "$OUT/test.log") skipped (rc=$rc)"
[ $rc -eq 0 ] || fail=1

# With a prebuilt library, the build ran beside the tests; wait for it before timing.
if [ -n "${BUILD_PID:-}" ]; then
	if wait "$BUILD_PID"; then
		note "$(tail -1 "$OUT/build.log")"
		(cd gpu && CUZK_GPU_LIB=$ROOT/gpu/cuda/build/libcuzkgpu.so "$BIN" -test.short -test.v) >"$OUT/test-devbuild.log" 2>&1
		r=$?
		note "short tests with the library built here: rc=$r, $(grep -c '^--- PASS' "$OUT/test-devbuild.log") passed, $(grep -c '^--- FAIL' "$OUT/test-devbuild.log") failed"
		[ $r -eq 0 ] || fail=1
		export CUZK_GPU_LIB=$ROOT/gpu/cuda/build/libcuzkgpu.so # benchmarks use the library built here
	else
		note "FAIL build (see build.log)"
		fail=1
	fi
fi

if [ "${CUZK_SKIP_BENCH:-0}" != 1 ]; then
	(cd gpu && CUZK_GPU_BENCH=1 "$BIN" -test.v -test.run 'TestGPUBench' -test.timeout 15m) >"$OUT/bench.log" 2>&1
	brc=$?
	[ $brc -eq 0 ] || { note "FAIL bench rc=$brc"; fail=1; }
fi

echo
echo "== summary =="
cat "$SUMMARY"
grep -h '^BENCH' "$OUT/bench.log" 2>/dev/null | tee -a "$SUMMARY"
if [ $fail -ne 0 ]; then
	echo "GPU CHECK FAILED"
	exit 1
fi
echo "GPU CHECK OK"
