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
#                           in the background and is then checked with the short tests,
#                           unless CUZK_NO_BUILD=1)
#   CUZK_GPU_BENCH_LOGS     benchmark sizes (default 20,22,24); CUZK_SKIP_BENCH=1 skips
#   CUZK_GPU_TEST_RUN       -test.run pattern for the correctness tests (default: all)
#   CUZK_GPU_VARIANTS       A/B: "name:EXTRA;name2:EXTRA2" also builds these variants of
#                           the library (make EXTRA=..., e.g. -DCUZK_MUL_CIOS) beside the
#                           main build, runs the MSM/NTT tests (to CUZK_GPU_VARIANT_TEST_MAXLOG,
#                           default 16) with each, and times each with the MSM/NTT
#                           benchmark at CUZK_GPU_VARIANT_LOGS (default 24), no CPU
#                           reference (operations CUZK_GPU_VARIANT_OPS, see
#                           CUZK_GPU_BENCH_OPS in gpu/bench_test.go), after the main
#                           tests (bench-<name>.log);
#                           CUZK_GPU_VARIANT_LIBS="name=path;..." does the same with
#                           prebuilt libraries
#   NVCC_ARCH               passed to make (default: sm_90a machine code + compute_80 PTX)
#   CUZK_FIELDBENCH         "name:FLAGS;..." builds gpu/cuda/bench/fieldbench.cu once per
#                           Montgomery product (e.g. "cios:;mul64:-DCUZK_MUL64") beside the
#                           library build and runs each after the tests (FIELDBENCH lines;
#                           equal checksums across products are required)
#   CUZK_GPU_C_SWEEP        "16,18,20": times the MSM with the window size forced to each
#                           (CUZK_MSM_C) at CUZK_GPU_C_SWEEP_LOGS (default 24), operations
#                           CUZK_GPU_C_SWEEP_OPS (default g1), no CPU reference; with
#                           CUZK_GPU_C_SWEEP_PROFILE=1 each MSM prints its stage times
#   CUZK_NCU_KERNEL         a kernel name regex: Nsight Compute reads the counters of its
#                           first launch (CUZK_NCU_COUNT launches) in the benchmark operation
#                           CUZK_NCU_OPS (default g1) at 2^CUZK_NCU_LOG (default 22)
#                           (ncu.log; summary lines in the summary); CUZK_NCU_SECTIONS adds
#                           sections, e.g. "--section InstructionStats"
#   CUZK_BENCH_FIRST=1      run the main benchmarks before the variants
#   CUZK_SANITIZE_RUN       a -test.run pattern run under compute-sanitizer (memcheck) with
#                           each variant library named in CUZK_SANITIZE_VARIANTS ("main" =
#                           the main build) (sanitize-<name>.log)
# The tests' own variables pass through (CUZK_GPU_TEST_MAXLOG, CUZK_GPU_BENCH_CPU,
# CUZK_GPU_BENCH_OPS, CUZK_GPU_BENCH_PROVE_CPU, CUZK_GPU_BENCH_GNARK_LOGS and _RUNS:
# see gpu/cuda_test.go and gpu/bench_test.go).
set -u -o pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
# At most a few files come back from the GPU machine: the logs are packed into
# logs.tgz on exit; summary.txt and the built libraries stay beside it.
LOG=$OUT/logs
mkdir -p "$LOG"
pack() { tar czf "$OUT/logs.tgz" -C "$OUT" logs; }
trap 'pack && rm -rf "$LOG"' EXIT
SUMMARY=$OUT/summary.txt
: >"$SUMMARY"
fail=0
note() { echo "$*" | tee -a "$SUMMARY"; }

{ nvidia-smi; nvcc --version; nproc; } >"$LOG/machine.txt" 2>&1
note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"

build() {
	local t0=$SECONDS
	if make -C gpu/cuda -j8 ${NVCC_ARCH:+NVCC_ARCH="$NVCC_ARCH"} >"$LOG/build.log" 2>&1; then
		echo "build: ok in $((SECONDS - t0)) s" >>"$LOG/build.log"
		cp gpu/cuda/build/libcuzkgpu.so "$OUT/" 2>/dev/null
		return 0
	fi
	echo "build: FAILED after $((SECONDS - t0)) s" >>"$LOG/build.log"
	return 1
}

# Field microbenchmarks build in the background (small, about a minute each).
declare -A FBPID
IFS=';' read -r -a FIELDBENCH <<<"${CUZK_FIELDBENCH:-}"
for v in "${FIELDBENCH[@]}"; do
	[ -n "$v" ] || continue
	name=${v%%:*} extra=${v#*:}
	mkdir -p gpu/cuda/build/fieldbench
	(
		t0=$SECONDS
		nvcc -O3 -std=c++17 --expt-relaxed-constexpr -arch=sm_90a $extra -Xptxas -v -I gpu/cuda \
			gpu/cuda/bench/fieldbench.cu -o "gpu/cuda/build/fieldbench/fb-$name" >"$LOG/fieldbench-build-$name.log" 2>&1
		r=$?
		echo "fieldbench $name ($extra): rc=$r in $((SECONDS - t0)) s" >>"$LOG/fieldbench-build-$name.log"
		exit $r
	) &
	FBPID[$name]=$!
done

# Variants build in the background, in parallel with the main build.
declare -A VPID
IFS=';' read -r -a VARIANTS <<<"${CUZK_GPU_VARIANTS:-}"
for v in "${VARIANTS[@]}"; do
	[ -n "$v" ] || continue
	name=${v%%:*} extra=${v#*:}
	(
		t0=$SECONDS
		timeout "${CUZK_VARIANT_BUILD_TIMEOUT:-420}" make -C gpu/cuda -j4 BUILD="build/$name" EXTRA="$extra" ${NVCC_ARCH:+NVCC_ARCH="$NVCC_ARCH"} >"$LOG/build-$name.log" 2>&1
		r=$?
		echo "build $name ($extra): rc=$r in $((SECONDS - t0)) s" >>"$LOG/build-$name.log"
		exit $r
	) &
	VPID[$name]=$!
done

if [ "${CUZK_NO_BUILD:-0}" = 1 ] && [ -n "${CUZK_PREBUILT_LIB:-}" ]; then
	LIB=$(realpath "$CUZK_PREBUILT_LIB")
	BUILD_PID=
	echo "build: skipped, using $CUZK_PREBUILT_LIB" >"$LOG/build.log"
elif [ -n "${CUZK_PREBUILT_LIB:-}" ]; then
	LIB=$(realpath "$CUZK_PREBUILT_LIB")
	build &
	BUILD_PID=$!
else
	if ! build; then
		note "FAIL build (see build.log)"
		tail -30 "$LOG/build.log"
		exit 1
	fi
	LIB=$ROOT/gpu/cuda/build/libcuzkgpu.so
	BUILD_PID=
fi
note "$(tail -1 "$LOG/build.log" 2>/dev/null || echo 'build: running in background')"
export CUZK_GPU_LIB=$LIB
BIN=$ROOT/.devbuild/gpu.test
[ -x "$BIN" ] || { note "FAIL missing $BIN (build it with go test -c)"; exit 1; }

# Correctness: every test in ./gpu (MSM G1/G2, NTT, compute_h, proofs, NVML).
(cd gpu && "$BIN" -test.v -test.timeout 15m ${CUZK_GPU_TEST_RUN:+-test.run "$CUZK_GPU_TEST_RUN"}) >"$LOG/test.log" 2>&1
rc=$?
grep -E "^(--- |ok|FAIL|PASS)" "$LOG/test.log" | grep -v "^--- PASS" >>"$SUMMARY"
note "tests: $(grep -c '^--- PASS' "$LOG/test.log") passed, $(grep -c '^--- FAIL' "$LOG/test.log") failed, $(grep -c '^--- SKIP' "$LOG/test.log") skipped (rc=$rc)"
[ $rc -eq 0 ] || fail=1
pack

main_bench() {
	# BENCH lines reach the summary as they are printed.
	(cd gpu && CUZK_GPU_BENCH=1 "$BIN" -test.v -test.run 'TestGPUBench' -test.timeout 15m 2>&1) | tee "$LOG/bench.log" |
		grep --line-buffered -E '^(BENCH|msm-profile)' >>"$SUMMARY"
	brc=${PIPESTATUS[0]}
	[ $brc -eq 0 ] || { note "FAIL bench rc=$brc"; fail=1; }
	pack
}
# CUZK_BENCH_FIRST=1: the main library's benchmarks right after its tests, before the
# variants (when the call's time may run out before the end).
[ "${CUZK_SKIP_BENCH:-0}" != 1 ] && [ "${CUZK_BENCH_FIRST:-0}" = 1 ] && [ -z "${BUILD_PID:-}" ] && main_bench

# A/B variants (built above, or prebuilt ones from CUZK_GPU_VARIANT_LIBS="name=path;..."):
# correctness to a moderate size, then the MSM/NTT timings alone.
declare -A VLIB
for name in "${!VPID[@]}"; do
	if ! wait "${VPID[$name]}"; then
		note "FAIL build variant $name: $(tail -3 "$LOG/build-$name.log" | tr '\n' ' ')"
		fail=1
		continue
	fi
	note "$(tail -1 "$LOG/build-$name.log")"
	VLIB[$name]=$ROOT/gpu/cuda/build/$name/libcuzkgpu.so
	cp "${VLIB[$name]}" "$OUT/libcuzkgpu-$name.so"
done
IFS=';' read -r -a PREBUILT <<<"${CUZK_GPU_VARIANT_LIBS:-}"
for v in "${PREBUILT[@]}"; do
	[ -n "$v" ] || continue
	VLIB[${v%%=*}]=$(realpath "${v#*=}")
done
for name in $(printf '%s\n' "${!VLIB[@]}" | sort); do
	vlib=${VLIB[$name]}
	(cd gpu && CUZK_GPU_LIB=$vlib CUZK_GPU_TEST_MAXLOG=${CUZK_GPU_VARIANT_TEST_MAXLOG:-16} "$BIN" -test.v -test.run 'TestMSM|TestNTT|TestComputeH' -test.timeout 10m) >"$LOG/test-$name.log" 2>&1
	r=$?
	note "variant $name tests: rc=$r, $(grep -c '^--- PASS' "$LOG/test-$name.log") passed, $(grep -c '^--- FAIL' "$LOG/test-$name.log") failed"
	[ $r -eq 0 ] || { fail=1; continue; }
	(cd gpu && CUZK_GPU_LIB=$vlib CUZK_GPU_BENCH=1 CUZK_GPU_BENCH_CPU=0 CUZK_GPU_BENCH_CS= \
		CUZK_GPU_BENCH_PRECOMPUTE=${CUZK_GPU_VARIANT_PRECOMPUTE:-0} CUZK_GPU_BENCH_NTT_AB=0 CUZK_GPU_BENCH_LOGS=${CUZK_GPU_VARIANT_LOGS:-24} CUZK_GPU_BENCH_OPS=${CUZK_GPU_VARIANT_OPS:-${CUZK_GPU_BENCH_OPS:-}} "$BIN" -test.v -test.run 'TestGPUBench$' -test.timeout 10m) >"$LOG/bench-$name.log" 2>&1 || fail=1
	grep -h -E '^(BENCH|msm-profile)' "$LOG/bench-$name.log" | sed "s/^/[$name] /" | tee -a "$SUMMARY"
	pack
done

[ -n "${CUZK_FIELDBENCH:-}" ] && for name in $(printf '%s\n' "${!FBPID[@]}" | sort); do
	if ! wait "${FBPID[$name]}"; then
		note "FAIL fieldbench build $name: $(tail -3 "$LOG/fieldbench-build-$name.log" | tr '\n' ' ')"
		fail=1
		continue
	fi
	gpu/cuda/build/fieldbench/fb-$name >"$LOG/fieldbench-$name.log" 2>&1 || fail=1
	grep -E '^(FIELDBENCH|fp_|fr_|g1_|g2_)' "$LOG/fieldbench-$name.log" | sed "s/^/[$name] /" | tee -a "$SUMMARY" >/dev/null
done
# Each kernel's checksum, with how many products printed it (all of them, if they agree).
[ -n "${CUZK_FIELDBENCH:-}" ] && { grep -h '^FIELDBENCH' "$LOG"/fieldbench-*.log |
	awk '{k=$2; if ($3 ~ /^ilp=/) k=k" "$3; print k, $NF}' | sort | uniq -c | sed 's/^/fieldbench agreement: /' | tee -a "$SUMMARY"; pack; }

if [ -n "${CUZK_GPU_C_SWEEP:-}" ]; then
	for cc in ${CUZK_GPU_C_SWEEP//,/ }; do
		(cd gpu && CUZK_MSM_C=$cc CUZK_MSM_PROFILE=${CUZK_GPU_C_SWEEP_PROFILE:-0} CUZK_GPU_BENCH=1 CUZK_GPU_BENCH_CPU=0 CUZK_GPU_BENCH_LOGS=${CUZK_GPU_C_SWEEP_LOGS:-24} \
			CUZK_GPU_BENCH_OPS=${CUZK_GPU_C_SWEEP_OPS:-g1} "$BIN" -test.v -test.run 'TestGPUBench$' -test.timeout 10m) >"$LOG/csweep-$cc.log" 2>&1 || fail=1
		grep -h -E '^(BENCH|msm-profile)' "$LOG/csweep-$cc.log" | sed "s/^/[c=$cc] /" | tee -a "$SUMMARY"
	done
	pack
fi

if [ -n "${CUZK_NCU_KERNEL:-}" ]; then
	(cd gpu && CUZK_GPU_BENCH=1 CUZK_GPU_BENCH_CPU=0 CUZK_GPU_BENCH_LOGS=${CUZK_NCU_LOG:-22} CUZK_GPU_BENCH_OPS=${CUZK_NCU_OPS:-g1} \
		timeout 300 ncu --clock-control none -k "regex:$CUZK_NCU_KERNEL" -c "${CUZK_NCU_COUNT:-1}" --section SpeedOfLight --section Occupancy \
		--section LaunchStats --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
		--section MemoryWorkloadAnalysis ${CUZK_NCU_SECTIONS:-} "$BIN" -test.run 'TestGPUBench$' -test.timeout 10m) >"$LOG/ncu.log" 2>&1
	note "ncu rc=$?"
	grep -E 'Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|Issued Ipc|No Eligible|Warp Cycles Per Issued|Compute \(SM\) Throughput|Memory Throughput|L2 Hit|Stall|Pipe|One or More|Bank|Shared|Executed Ipc' "$LOG/ncu.log" | head -70 | tee -a "$SUMMARY"
	pack
fi

if [ -n "${CUZK_SANITIZE_RUN:-}" ]; then
	CSAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
	for name in ${CUZK_SANITIZE_VARIANTS:-main}; do
		slib=$LIB
		[ "$name" = main ] || slib=${VLIB[$name]:-}
		[ -n "$slib" ] || { note "sanitize $name: no such library"; continue; }
		(cd gpu && CUZK_GPU_LIB=$slib timeout "${CUZK_SANITIZE_TIMEOUT:-300}" "${CSAN:-compute-sanitizer}" --tool memcheck --print-limit 20 \
			"$BIN" -test.v -test.run "$CUZK_SANITIZE_RUN" -test.timeout 5m) >"$LOG/sanitize-$name.log" 2>&1
		note "sanitize $name rc=$?: $(grep -c 'Invalid\|Error' "$LOG/sanitize-$name.log") error lines"
		grep -m 12 -E 'Invalid|at 0x|by thread|Address|ERROR SUMMARY|--- (PASS|FAIL)' "$LOG/sanitize-$name.log" | tee -a "$SUMMARY"
	done
	pack
fi

# With a prebuilt library, the build ran beside the tests; wait for it before timing.
if [ -n "${BUILD_PID:-}" ]; then
	if wait "$BUILD_PID"; then
		note "$(tail -1 "$LOG/build.log")"
		(cd gpu && CUZK_GPU_LIB=$ROOT/gpu/cuda/build/libcuzkgpu.so "$BIN" -test.short -test.v) >"$LOG/test-devbuild.log" 2>&1
		r=$?
		note "short tests with the library built here: rc=$r, $(grep -c '^--- PASS' "$LOG/test-devbuild.log") passed, $(grep -c '^--- FAIL' "$LOG/test-devbuild.log") failed"
		[ $r -eq 0 ] || fail=1
		export CUZK_GPU_LIB=$ROOT/gpu/cuda/build/libcuzkgpu.so # benchmarks use the library built here
	else
		note "FAIL build (see build.log)"
		fail=1
	fi
fi

[ "${CUZK_SKIP_BENCH:-0}" != 1 ] && { [ "${CUZK_BENCH_FIRST:-0}" != 1 ] || [ -n "${BUILD_PID:-}" ]; } && main_bench

echo
echo "== summary =="
cat "$SUMMARY"
if [ $fail -ne 0 ]; then
	echo "GPU CHECK FAILED"
	exit 1
fi
echo "GPU CHECK OK"
