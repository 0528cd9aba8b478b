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
#                           the library (make EXTRA=..., nvcc flags) beside the
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
#                           entry (nvcc flags, e.g. "base:") beside the library build and
#                           runs each after the tests (FIELDBENCH lines; equal checksums
#                           across builds are required)
#   CUZK_GPU_C_SWEEP        "16,18,20": times the MSM with the window size forced to each
#                           (the library's knobs, CUZK_GPU_BENCH_CS) at CUZK_GPU_C_SWEEP_LOGS
#                           (default 24), operations CUZK_GPU_C_SWEEP_OPS (default g1), no
#                           CPU reference; with CUZK_GPU_C_SWEEP_PROFILE=1 each MSM prints
#                           its stage times
#   CUZK_AB_LIBS            "old=LIB[,BIN];new=LIB[,BIN]": A/B of prebuilt libraries, nothing
#                           built; BIN: the test binary for that library (one of the same
#                           ABI version; default CUZK_GPU_TEST_BIN):
#                           the GPU tests against gnark-crypto with the last library named
#                           (CUZK_AB_TEST_RUN, CUZK_AB_TEST_MAXLOG; TestNTT to 2^24), then
#                           the benchmarks (G1 and G2 MSM and NTT at CUZK_AB_LOGS, default 24;
#                           one proof at CUZK_AB_PROVE_LOGS, default 22; no CPU reference),
#                           one process per library in turn, CUZK_AB_ROUNDS rounds (default 2,
#                           the order reversed every other round); ab.txt has each BENCH line
#                           by library and round, and a median per line across rounds.
#                           CUZK_GPU_TEST_BIN: the test binary (default .devbuild/gpu.test)
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
BIN=$(realpath "${CUZK_GPU_TEST_BIN:-$ROOT/.devbuild/gpu.test}")

# A/B of two prebuilt libraries (CUZK_AB_LIBS): tests with the last, then benchmarks
# alternating between them, each library in a process of its own.
ab_mode() {
	local names=() paths=() bins=() v spec name lib bin r i order rc
	IFS=';' read -r -a AB <<<"$CUZK_AB_LIBS"
	for v in "${AB[@]}"; do
		[ -n "$v" ] || continue
		names+=("${v%%=*}")
		spec=${v#*=}
		lib=${spec%%,*} bin=$BIN
		[ "$lib" = "$spec" ] || bin=${spec#*,}
		paths+=("$(realpath "$lib")")
		bins+=("$(realpath "$bin")")
	done
	for i in "${!names[@]}"; do
		[ -f "${paths[$i]}" ] || { note "FAIL missing library ${paths[$i]}"; exit 1; }
		[ -x "${bins[$i]}" ] || { note "FAIL missing test binary ${bins[$i]} (go test -c -o it ./gpu/)"; exit 1; }
		note "${names[$i]}: library ${paths[$i]} ($(sha256sum "${paths[$i]}" | cut -c1-16)), tests ${bins[$i]}"
	done
	lib=${paths[-1]} name=${names[-1]} bin=${bins[-1]}
	local t0=$SECONDS
	(cd gpu && CUZK_GPU_LIB=$lib CUZK_GPU_TEST_MAXLOG=${CUZK_AB_TEST_MAXLOG:-22} "$bin" -test.v -test.timeout 4m \
		-test.run "${CUZK_AB_TEST_RUN:-TestMSM|TestComputeH|TestFixedBase|TestUploadGather|TestProveBatchOverCap|TestProveStaged}") >"$LOG/test-$name.log" 2>&1
	rc=$?
	(cd gpu && CUZK_GPU_LIB=$lib CUZK_GPU_TEST_MAXLOG=24 "$bin" -test.v -test.timeout 4m -test.run '^TestNTT$') >"$LOG/test-$name-ntt24.log" 2>&1
	r=$?
	# A skipped test means the library did not load: count it as a failure here.
	grep -h -E '^--- SKIP|unavailable' "$LOG/test-$name.log" | head -3 | tee -a "$SUMMARY"
	grep -q '^--- SKIP' "$LOG/test-$name.log" "$LOG/test-$name-ntt24.log" && rc=1
	note "tests with $name: rc=$rc, $(grep -c '^--- PASS' "$LOG/test-$name.log") passed, $(grep -c '^--- FAIL' "$LOG/test-$name.log") failed; TestNTT to 2^24 rc=$r; $((SECONDS - t0)) s"
	grep -h -E '^--- FAIL' "$LOG/test-$name.log" "$LOG/test-$name-ntt24.log" | tee -a "$SUMMARY"
	[ $rc -eq 0 ] && [ $r -eq 0 ] || fail=1
	pack
	: >"$OUT/ab.txt"
	for ((r = 1; r <= ${CUZK_AB_ROUNDS:-2}; r++)); do
		order=$(seq 0 $((${#names[@]} - 1)))
		[ $((r % 2)) -eq 0 ] && order=$(echo "$order" | tac)
		for i in $order; do
			name=${names[$i]} lib=${paths[$i]} bin=${bins[$i]} t0=$SECONDS
			(cd gpu && CUZK_GPU_LIB=$lib CUZK_GPU_BENCH=1 CUZK_GPU_BENCH_CPU=0 CUZK_GPU_BENCH_LOGS=${CUZK_AB_LOGS:-24} \
				CUZK_GPU_BENCH_OPS=g1,g2,ntt "$bin" -test.v -test.run 'TestGPUBench$' -test.timeout 5m &&
				CUZK_GPU_LIB=$lib CUZK_GPU_BENCH=1 CUZK_GPU_BENCH_CPU=0 CUZK_GPU_BENCH_LOGS=${CUZK_AB_PROVE_LOGS:-22} \
				CUZK_GPU_BENCH_OPS=prove CUZK_GPU_BENCH_PROVE_RUNS=5 "$bin" -test.v -test.run 'TestGPUBench$' -test.timeout 5m) \
				>"$LOG/bench-$name-$r.log" 2>&1 || { note "FAIL bench $name round $r"; fail=1; }
			grep -q '^--- SKIP' "$LOG/bench-$name-$r.log" && { note "FAIL bench $name round $r skipped: $(grep -m1 -i 'unavailable\|skip' "$LOG/bench-$name-$r.log")"; fail=1; }
			grep -h '^BENCH' "$LOG/bench-$name-$r.log" | sed "s/^/[$name r$r] /" >>"$OUT/ab.txt"
			note "bench $name round $r: $((SECONDS - t0)) s"
			pack
		done
	done
	# Per BENCH line (op, size) and library: the median over rounds of its gpu_ms.
	grep -h 'gpu_ms=' "$OUT/ab.txt" | sed -E 's/^\[([^ ]+) r[0-9]+\] BENCH +([^ ]+) +([^ ]+) .*gpu_ms=([0-9.]+).*/\2 \3 \1 \4/' |
		sort -k1,1 -k2,2 -k3,3 -k4,4n | awk 'function out() { printf "AB %s median_gpu_ms=%s (%d rounds)\n", p, v[int((n + 1) / 2)], n }
			{ k = $1 " " $2 " " $3; if (k != p) { if (p != "") out(); n = 0; p = k } v[++n] = $4 }
			END { if (p != "") out() }' | tee -a "$SUMMARY"
	echo
	echo "== summary =="
	cat "$SUMMARY"
	[ $fail -eq 0 ] && echo "GPU AB OK" || { echo "GPU AB FAILED"; exit 1; }
	exit 0
}
[ -n "${CUZK_AB_LIBS:-}" ] && ab_mode

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
		CUZK_GPU_BENCH_PRECOMPUTE=${CUZK_GPU_VARIANT_PRECOMPUTE:-0} CUZK_GPU_BENCH_LOGS=${CUZK_GPU_VARIANT_LOGS:-24} CUZK_GPU_BENCH_OPS=${CUZK_GPU_VARIANT_OPS:-${CUZK_GPU_BENCH_OPS:-}} "$BIN" -test.v -test.run 'TestGPUBench$' -test.timeout 10m) >"$LOG/bench-$name.log" 2>&1 || fail=1
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
	(cd gpu && CUZK_GPU_BENCH_CS=$CUZK_GPU_C_SWEEP CUZK_MSM_PROFILE=${CUZK_GPU_C_SWEEP_PROFILE:-0} CUZK_GPU_BENCH=1 CUZK_GPU_BENCH_CPU=0 \
		CUZK_GPU_BENCH_LOGS=${CUZK_GPU_C_SWEEP_LOGS:-24} CUZK_GPU_BENCH_OPS=${CUZK_GPU_C_SWEEP_OPS:-g1} "$BIN" -test.v -test.run 'TestGPUBench$' \
		-test.timeout 10m) >"$LOG/csweep.log" 2>&1 || fail=1
	grep -h -E '^(BENCH|msm-profile)' "$LOG/csweep.log" | tee -a "$SUMMARY"
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
