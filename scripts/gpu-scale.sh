#!/usr/bin/env bash
# gpu-scale.sh: one Filecoin-shaped size measured in ONE call on the GPU host: a request
# of SCALE_PARTS partitions of porep-k<SCALE_K> end to end through SQL with an urgent
# request during it (scripts/gpu-e2e.sh), then, with the key that setup made, the key's
# tier moves from a cold page cache (TestKeyTierTimes), streamed against resident bases
# (TestGPUBench op stream) and the solver alone, the block solver against gnark's
# (cuzk bench --synth-only). Each step runs only while the call has time
# for it; logs and summary.txt go to $OUT.
#
# Prepare on a machine with Go (the GPU host has none):
#   make gpu-bundle                                        # .gpubundle/ (add CUZK_PREBUILT_LIB=lib)
#   CGO_ENABLED=1 go test -c -o .devbuild/gpu.test ./gpu   # the GPU tests and benchmarks
# then, on the GPU host with both carried: OUT=dir scripts/gpu-scale.sh
#
# Environment:
#   SCALE_K            the circuit's size, porep-k<K> (default 26)
#   SCALE_PARTS        partitions of the request (default 10)
#   SCALE_BUDGET       the worker's --mem-budget (default 96GiB: the 128 GiB host)
#   SCALE_FLAGS        more worker flags, e.g. "--synth-concurrency 4"
#   SCALE_URGENT       the priority-1 request's circuit (default synthetic-k20; "" sends
#                      none, so the setup runs alone)
#   SCALE_STREAM_LOGS  sizes of the streamed-bases bench (default 24; "" skips it)
#   SCALE_SYNTH        solves at once for the solver bench (default 2,4,8; "" skips it)
#   SCALE_SPLIT        its --synth-split (default on: the cores split as the worker does)
#   SCALE_SOLVER       its --synth-solver (default both: the block solver against gnark's)
#   SCALE_DEADLINE_S   give up starting steps this long after the start (default 560)
#   SCALE_KEYS_DIR     where setup keeps keys and compiled circuits (default /tmp/e2ekeys;
#                      a warm machine reuses them)
#   SCALE_PRUNE        1 (default): first remove the other porep sizes' keys and compiled
#                      circuits from SCALE_KEYS_DIR, since the host's 64 GiB disk holds one
#                      2^26 set (18 GB) beside a 2^27 one (~37 GB) only just; 0 keeps them
#
# A Filecoin PoRep partition's size, 2^27 x 10 on the 128 GiB host (setup peaks at 91 GiB;
# the worker's budget raised to 110 GiB for the key's 28 GiB host copy beside the circuit
# and the partitions in flight; about 8 minutes on a fresh machine):
#   SCALE_K=27 SCALE_URGENT= SCALE_SYNTH= SCALE_STREAM_LOGS= SCALE_BUDGET=110GiB OUT=dir scripts/gpu-scale.sh
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
K=${SCALE_K:-26}
PARTS=${SCALE_PARTS:-10}
DEADLINE=${SCALE_DEADLINE_S:-560}
KEYS=${SCALE_KEYS_DIR:-/tmp/e2ekeys}
CIRCUIT=porep-k$K
S=$OUT/summary.txt
log() { echo "[$(date +%T) +${SECONDS}s] $*" | tee -a "$S"; }
left() { echo $((DEADLINE - SECONDS)); }

log "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)," \
	"$(nproc) cores, $(free -g | awk '/Mem/ {print $2}') GiB, disk free $(df -h --output=avail /tmp | tail -1 | tr -d ' ')"
BIN=$ROOT/.devbuild/gpu.test
[ -x "$BIN" ] || { log "FAIL no .devbuild/gpu.test (go test -c -o .devbuild/gpu.test ./gpu)"; exit 1; }

if [ "${SCALE_PRUNE:-1}" = 1 ]; then
	for d in "$KEYS"/keys/porep-k*; do
		[ -e "$d" ] && [ "$(basename "$d")" != "$CIRCUIT" ] && rm -rf "$d" && log "pruned $d"
	done
	for f in "$KEYS"/r1cs/porep-k*.r1cs; do
		case $(basename "$f") in "$CIRCUIT"-*) ;; *) [ -e "$f" ] && rm -f "$f" && log "pruned $f" ;; esac
	done
fi
log "disk free for keys: $(df -h --output=avail "$(dirname "$KEYS")" | tail -1 | tr -d ' ')"

# 1. The request end to end; the library comes from the bundle or is built beside setup.
OUT=$OUT/e2e E2E_KEYS_DIR=$KEYS E2E_CIRCUITS="$CIRCUIT:1x$PARTS" E2E_URGENT=${SCALE_URGENT-synthetic-k20} \
	E2E_WORKER_FLAGS="--mem-budget ${SCALE_BUDGET:-96GiB} --preload-keys all ${SCALE_FLAGS:-}" \
	E2E_DEADLINE_S=$(($(left) - 30)) scripts/gpu-e2e.sh >"$OUT/e2e.out" 2>&1
rc=$?
log "e2e $CIRCUIT:1x$PARTS: rc=$rc"
grep -E '^(setup|proved|urgent|worker .*peak|e2e:)' "$OUT/e2e.out" | tee -a "$S"
LIB=$ROOT/.gpubundle/libcuzkgpu.so
[ -f "$LIB" ] || LIB=$ROOT/gpu/cuda/build/libcuzkgpu.so
[ -f "$LIB" ] || { log "FAIL no CUDA library (bundled or built by the e2e run)"; exit 1; }
[ -f "$ROOT/.gpubundle/libcuzkgpu.so" ] || cp "$LIB" "$OUT/" # for CUZK_PREBUILT_LIB in later calls

# 2. The key's tier moves, its file read from disk.
if [ -f "$KEYS/keys/$CIRCUIT/pk.dump" ] && [ "$(left)" -gt 60 ]; then
	sync
	if echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then
		# The disk's own rate bounds a cold read: one sequential pass, nothing decoded.
		log "disk read of pk.dump: $(dd if="$KEYS/keys/$CIRCUIT/pk.dump" of=/dev/null bs=64M 2>&1 | tail -1)"
		echo 3 >/proc/sys/vm/drop_caches
		log "page cache dropped"
	else
		log "page cache NOT dropped: the file is read warm"
	fi
	(cd gpu && CUZK_GPU_LIB=$LIB CUZK_KEYTIER=1 CUZK_KEYTIER_DIR=$KEYS/keys CUZK_KEYTIER_CIRCUIT=$CIRCUIT \
		timeout "$(left)" "$BIN" -test.v -test.run '^TestKeyTierTimes$') >"$OUT/keytier.log" 2>&1
	log "key tiers: rc=$?"
	grep -h '^KEYTIER' "$OUT/keytier.log" | tee -a "$S"
fi

# 3. Streamed against resident bases: MSMs, then whole proofs on a dense timing key.
if [ -n "${SCALE_STREAM_LOGS-24}" ] && [ "$(left)" -gt 90 ]; then
	(cd gpu && CUZK_GPU_LIB=$LIB CUZK_GPU_BENCH=1 CUZK_GPU_BENCH_OPS=stream CUZK_GPU_BENCH_STREAM_LOGS=${SCALE_STREAM_LOGS-24} \
		timeout "$(left)" "$BIN" -test.v -test.run 'TestGPUBench$' -test.timeout 10m) >"$OUT/stream.log" 2>&1
	log "streamed bases: rc=$?"
	grep -h -E '^BENCH|differs|^--- FAIL' "$OUT/stream.log" | tee -a "$S"
fi

# 4. The solver alone at this size: solves at once, the block solver against gnark's.
if [ -n "${SCALE_SYNTH-2,4,8}" ] && [ "$(left)" -gt 60 ] && [ -d "$KEYS/r1cs" ]; then
	mkdir -p /tmp/scale-bin && tar -C /tmp/scale-bin -xJf .gpubundle/bundle.tar.xz ./cuzk &&
		timeout "$(left)" /tmp/scale-bin/cuzk bench --synth-only --circuit "$CIRCUIT" --runs 1 \
			--concurrency "${SCALE_SYNTH-2,4,8}" --synth-split "${SCALE_SPLIT:-on}" --synth-solver "${SCALE_SOLVER:-both}" --cache-dir "$KEYS/r1cs" >"$OUT/synth.log" 2>&1
	log "solver bench: rc=$?"
	grep -h -E 'solve x|peak RSS' "$OUT/synth.log" | tee -a "$S"
fi
log done
