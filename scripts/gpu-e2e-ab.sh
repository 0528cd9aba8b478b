#!/usr/bin/env bash
# gpu-e2e-ab.sh: two cuzk builds through the same end-to-end run (scripts/gpu-e2e.sh),
# alternating on one GPU host with the same keys and compiled circuits, so a change to
# the worker is measured on what users wait for: a request's wall, its first proof's
# start, an urgent request's time. The first run pays setup (compile and key); the
# others reuse them from E2E_KEYS_DIR.
#
#   scripts/gpu-e2e-ab.sh A B [ROUNDS]
#
# A and B: a cuzk binary, or "bundle" for the one in .gpubundle/bundle.tar.xz (a binary
# kept small for the trip with xz is unpacked first: name it path.xz). ROUNDS (default
# 1) alternates A B, then B A, ...: A B for 1, A B B A for 2. Both use the bundle's
# PostgreSQL and CUDA library. The runs take gpu-e2e.sh's environment (E2E_CIRCUITS,
# E2E_WORKER_FLAGS, E2E_URGENT, ...); E2E_KEYS_DIR defaults to /tmp/e2ekeys and the
# whole call's deadline to AB_DEADLINE_S (default 570 s): a run starts only with 75 s
# left. Each run's output goes to $OUT/<label>-<round>.out (its report and logs under
# $OUT/<label>-<round>/) and its lines that matter to $OUT/summary.txt.
#
# A real C2's size, the build before a change against the tree's (old.xz built on the
# development machine with go build -trimpath -ldflags "-s -w" ./cmd/cuzk, then xz):
#   E2E_CIRCUITS=porep-k27:1x10 E2E_URGENT=synthetic-k20 \
#     E2E_WORKER_FLAGS="--mem-budget 110GiB --preload-keys all" OUT=dir scripts/gpu-e2e-ab.sh .devbuild/old.xz bundle
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 1
[ $# -ge 2 ] || { echo "usage: $0 A B [ROUNDS]" >&2; exit 2; }
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
S=$OUT/summary.txt
DEADLINE=${AB_DEADLINE_S:-570}
left() { echo $((DEADLINE - SECONDS)); }
log() { echo "[+${SECONDS}s] $*" | tee -a "$S"; }

# binary SPEC LABEL: the path gpu-e2e.sh runs for SPEC ("" for the bundle's).
binary() {
	if [ "$1" = bundle ]; then
		echo ""
	elif [ "${1%.xz}" != "$1" ]; then
		xz -dc "$1" >"/tmp/e2e-ab-$2" && chmod +x "/tmp/e2e-ab-$2" && echo "/tmp/e2e-ab-$2"
	else
		[ -x "$1" ] && realpath "$1"
	fi
}
BIN_A=$(binary "$1" a) || { echo "A: cannot run $1" >&2; exit 2; }
BIN_B=$(binary "$2" b) || { echo "B: cannot run $2" >&2; exit 2; }
ROUNDS=${3:-1}
log "A = $1, B = $2, $ROUNDS round(s); circuits ${E2E_CIRCUITS:-the default set}; worker flags ${E2E_WORKER_FLAGS:-}"
log "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1), $(nproc) cores"

run() { # label round binary
	local out=$OUT/$1-$2.out
	if [ "$(left)" -lt 75 ]; then
		log "$1 round $2: not run, $(left) s left"
		return
	fi
	E2E_CUZK=$3 E2E_KEYS_DIR=${E2E_KEYS_DIR:-/tmp/e2ekeys} E2E_DEADLINE_S=$(($(left) - 5)) OUT=$OUT/$1-$2 \
		scripts/gpu-e2e.sh >"$out" 2>&1
	log "$1 round $2: rc=$?"
	# The notes that matter (setup, proved, urgent, workers, the verdict), then the
	# report's per-partition and per-request rows.
	grep -E '^(setup|proved|urgent|worker .*peak|verify|FAIL|e2e:)' "$out" | sed "s/^/  $1: /" >>"$S"
	grep -E '^ *(e2e-[^ ]*|request_id) *[|]' "$OUT/$1-$2/report.txt" 2>/dev/null | sed "s/^/  $1: /" >>"$S"
}
for r in $(seq 1 "$ROUNDS"); do
	if [ $((r % 2)) = 1 ]; then
		run A "$r" "$BIN_A"
		run B "$r" "$BIN_B"
	else
		run B "$r" "$BIN_B"
		run A "$r" "$BIN_A"
	fi
done
log done
