#!/usr/bin/env bash
# synth-ab.sh: the solver of two cuzk builds on one machine, alternating, with the
# same compiled circuit: `cuzk bench --synth-only` by each in turn, ROUNDS times.
# For a solver change on the GPU host (no Go there): build both binaries here, carry
# them (xz'd if the carry limit needs it), run this there.
#
#   synth-ab.sh OLD NEW [CIRCUIT] [ROUNDS] [BENCH FLAGS...]
#
# CIRCUIT defaults to porep-k25, ROUNDS to 2; the flags default to
# "--runs 3 --concurrency 2 --synth-split on" (two solves at once, as the worker runs
# large ones on 16 cores). The circuit is compiled once, by NEW, into SYNTH_AB_CACHE
# (default /tmp/cuzk-synth-ab). Each bench's output goes to stdout under a "== name
# round i" line; the summary at the end has each run's constraints/s line.
set -u -o pipefail
[ $# -ge 2 ] || { sed -n '2,11p' "$0" >&2; exit 2; }
OLD=$1 NEW=$2 CIRCUIT=${3:-porep-k25} ROUNDS=${4:-2}
shift $(($# < 4 ? $# : 4))
FLAGS=("$@")
[ ${#FLAGS[@]} -gt 0 ] || FLAGS=(--runs 3 --concurrency 2 --synth-split on)
CACHE=${SYNTH_AB_CACHE:-/tmp/cuzk-synth-ab}
for b in "$OLD" "$NEW"; do
	[ -x "$b" ] || { echo "synth-ab: $b is not an executable" >&2; exit 2; }
done
echo "== $(nproc) cpus; $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p')"
echo "== compile $CIRCUIT"
"$NEW" bench --synth-only --circuit "$CIRCUIT" --runs 1 --concurrency 1 --cache-dir "$CACHE" || exit 1
summary=()
for i in $(seq 1 "$ROUNDS"); do
	for side in old new; do
		b=$OLD
		[ $side = new ] && b=$NEW
		echo "== $side round $i"
		out=$("$b" bench --synth-only --circuit "$CIRCUIT" --cache-dir "$CACHE" "${FLAGS[@]}" 2>&1) || { echo "$out"; exit 1; }
		echo "$out"
		while read -r line; do summary+=("$side round $i: $line"); done < <(grep -E '^solve x' <<<"$out")
	done
done
echo "== summary"
printf '%s\n' "${summary[@]}"
