#!/usr/bin/env bash
# gpu-e2e.sh: the product end to end on one GPU host, in one call: a private
# PostgreSQL, migrate, key setup, requests submitted with psql, `cuzk worker`, every
# proof verified, and a report of the attempts' timings. Needs only .gpubundle/ (make
# gpu-bundle on a development machine) and, without a prebuilt library in it, nvcc.
#
#   OUT=dir scripts/gpu-e2e.sh      # from the repository root; report.txt and logs.tgz in OUT
#
# Environment:
#   E2E_BACKEND         cuda (default), cpu or auto: the worker's --backend
#   E2E_CIRCUITS        "name:count ..." proven one circuit after the other, each after
#                       the previous one's requests are all done (default below)
#   E2E_WORKER_FLAGS    extra worker flags, e.g. "--max-batch 16"
#   E2E_COMPARE_SERIAL  1: afterwards, prove the largest circuit's count again with a
#                       second worker given --synth-concurrency 1 --queue-depth 1, and
#                       report both rates
#   E2E_COMPARE_BATCH   "circuit:k ...": afterwards, prove each listed circuit's count again
#                       with a worker given --max-batch k (label batch<k>), to set batched
#                       against one-at-a-time throughput; the circuit must be in E2E_CIRCUITS
#   E2E_EVICT           "c1,c2": afterwards, a worker whose --gpu-key-memory holds the
#                       larger of the two circuits' keys (sizes from the main worker's
#                       log) but not both proves E2E_EVICT_N (default 8) requests of each
#                       again, submitted alternately, so key switches evict; fails
#                       unless evictions happened and every request succeeded. That
#                       worker gets --gpu-precompute 0 and the sizes leave the copies
#                       out: under a limit a key makes fewer copies before any key is
#                       evicted, so both would fit
#   E2E_TRACE_S         S: workers get --pprof, and while each circuit's requests are
#                       proven (from 2 s after they are submitted) an execution trace and a
#                       CPU profile of S seconds are fetched into logs.tgz as
#                       logs/trace-LABEL-CIRCUIT.http and logs/cpu-LABEL-CIRCUIT.http (raw
#                       HTTP responses: strip the header before `go tool trace` / `go tool
#                       pprof`)
#   E2E_DEADLINE_S      give up (and fail) this many seconds after the start (default 530)
#   E2E_KEYS_DIR        keys and compiled circuits here instead of a temp dir: setup
#                       reuses keys it finds there (after checking they fit the circuit)
#   E2E_KEEP            1: keep the temp dir (database, keys) after the run
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
START=$SECONDS
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BACKEND=${E2E_BACKEND:-cuda}
CIRCUITS=${E2E_CIRCUITS:-synthetic-k12:64 synthetic-k16:64 merkle-poseidon2-d20-c16:16 synthetic-k20:12 synthetic-k22:10}
DEADLINE=$((START + ${E2E_DEADLINE_S:-530}))
read -r -a WFLAGS <<<"${E2E_WORKER_FLAGS:-}"

WORK=$(mktemp -d /tmp/cuzk-e2e.XXXXXX)
chmod 755 "$WORK" # the server's user must reach the bundled binaries
LOG=$WORK/logs
mkdir -p "$LOG"
# The token --pprof asks for (fetch sends it).
(umask 077 && head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$LOG/http-token")
REPORT=$OUT/report.txt
: >"$REPORT"
note() { echo "$*" | tee -a "$REPORT"; }
elapsed() { echo "$((SECONDS - START)) s"; }

BUILD_PID='' WPID='' PGUP='' FAILED=''
declare -a BG=()
cleanup() {
	local p
	for p in "${BG[@]}"; do kill -- "-$p" 2>/dev/null; done
	[ -n "$BUILD_PID" ] && kill -- "-$BUILD_PID" 2>/dev/null
	[ -n "$WPID" ] && kill -KILL "$WPID" 2>/dev/null
	[ -n "$PGUP" ] && pgrun pg_ctl -D "$PGDATA" -m immediate -w stop >>"$LOG/postgres.log" 2>&1
	tar czf "$OUT/logs.tgz" -C "$WORK" logs 2>/dev/null
	if [ "${E2E_KEEP:-0}" = 1 ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'fail "interrupted"' INT TERM

# fail ends the run: the report says why, and its last line says it failed.
fail() {
	FAILED=1
	note "FAIL: $*"
	[ -n "$WPID" ] && [ -f "$LOG/worker.log" ] && { echo "--- worker log, last lines"; tail -20 "$LOG/worker.log"; } >>"$REPORT"
	echo "e2e: FAILED after $(elapsed): $*" | tee -a "$REPORT"
	exit 1
}

# --- bundle ---------------------------------------------------------------------------
command -v xz >/dev/null || fail "xz is needed to unpack the bundle"
[ -f .gpubundle/bundle.tar.xz ] || fail "no .gpubundle/bundle.tar.xz (run make gpu-bundle on a machine with Go)"
tar -C "$WORK" -xJf .gpubundle/bundle.tar.xz || fail "unpack .gpubundle/bundle.tar.xz"
CUZK=$WORK/cuzk
PGBIN=$WORK/pg/usr/lib/postgresql/15/bin
export CUZK_PG_BINDIR=$PGBIN
# Only for PostgreSQL's processes: just the libraries the host lacks, never its libc.
pgrun() {
	local b=$1
	shift
	if [ -n "${PGUSER_RUN:-}" ]; then
		(cd "$WORK/pg" && runuser -u postgres -- env LD_LIBRARY_PATH="$WORK/pg/extralib" LC_ALL=C "$PGBIN/$b" "$@")
	else
		LD_LIBRARY_PATH=$WORK/pg/extralib LC_ALL=C "$PGBIN/$b" "$@"
	fi
}
psqlq() { LD_LIBRARY_PATH=$WORK/pg/extralib "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }
note "e2e: $(head -1 "$WORK/MANIFEST"), backend $BACKEND, circuits: $CIRCUITS"
[ ${#WFLAGS[@]} -gt 0 ] && note "worker flags: ${WFLAGS[*]}"
{ uname -a; nproc; free -g; nvidia-smi 2>&1; nvcc --version 2>&1; cat "$WORK/MANIFEST"; } >"$LOG/machine.txt" 2>&1
if command -v nvidia-smi >/dev/null; then
	note "device: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
fi

# --- CUDA library: bundled, or built beside the setup ----------------------------------
if [ "$BACKEND" != cpu ]; then
	if [ -f .gpubundle/libcuzkgpu.so ]; then
		export CUZK_GPU_LIB=$ROOT/.gpubundle/libcuzkgpu.so
		note "CUDA library: bundled ($CUZK_GPU_LIB)"
	else
		export CUZK_GPU_LIB=$ROOT/gpu/cuda/build/libcuzkgpu.so
		command -v nvcc >/dev/null || PATH=$PATH:/usr/local/cuda/bin
		# Its own process group, so that a failed run stops nvcc too.
		setsid -w make -C gpu/cuda -j16 >"$LOG/build.log" 2>&1 &
		BUILD_PID=$!
		note "CUDA library: building in the background ($CUZK_GPU_LIB)"
	fi
fi

# --- private PostgreSQL ----------------------------------------------------------------
# A fresh directory and port every call: a reused machine may keep an old postmaster.
if [ "$(id -u)" = 0 ]; then
	id postgres >/dev/null 2>&1 || useradd -r -M -s /usr/sbin/nologin postgres || fail "useradd postgres"
	PGUSER_RUN=1 # PostgreSQL refuses to run as root
fi
PGDATA=$WORK/pg/data
PGPORT=$((20000 + RANDOM % 20000))
[ -n "${PGUSER_RUN:-}" ] && chown postgres: "$WORK/pg"
pgrun initdb -D "$PGDATA" -U postgres --auth=trust --no-sync -E UTF8 --locale=C >"$LOG/initdb.log" 2>&1 ||
	fail "initdb (see logs: initdb.log): $(tail -3 "$LOG/initdb.log" | tr '\n' ' ')"
pgrun pg_ctl -D "$PGDATA" -l "$WORK/pg/server.log" -w -t 60 \
	-o "-p $PGPORT -k $WORK/pg -c listen_addresses='' -c fsync=off -c max_connections=200 -c jit=off" start >"$LOG/pg_ctl.log" 2>&1 ||
	{ cp "$WORK/pg/server.log" "$LOG/" 2>/dev/null; fail "pg_ctl start: $(tail -3 "$LOG/pg_ctl.log" | tr '\n' ' ')"; }
PGUP=1
export PGHOST=$WORK/pg PGPORT PGUSER=postgres
psqlq -d postgres -c "CREATE DATABASE cuzk" || fail "create database"
export PGDATABASE=cuzk
export DATABASE_URL="host=$PGHOST port=$PGPORT user=postgres dbname=cuzk sslmode=disable"
note "postgres: $(psqlq -At -c 'SHOW server_version') on $PGHOST port $PGPORT ($(elapsed))"

export NO_COLOR=1
"$CUZK" migrate >"$LOG/migrate.log" 2>&1 || fail "cuzk migrate: $(tail -2 "$LOG/migrate.log" | tr '\n' ' ')"

# --- keys (all circuits at once, beside the CUDA build) and inputs ---------------------
KEYS=${E2E_KEYS_DIR:-$WORK/keys}
export CUZK_KEYS_DIR=$KEYS/keys CUZK_CACHE_DIR=$KEYS/r1cs
declare -a NAMES=() COUNTS=()
for item in $CIRCUITS; do
	name=${item%%:*} n=${item#*:}
	[ "$n" = "$item" ] && n=16
	case $n in '' | *[!0-9]*) fail "E2E_CIRCUITS: bad count in '$item'" ;; esac
	case " ${NAMES[*]} " in *" $name "*) fail "E2E_CIRCUITS: $name twice" ;; esac
	NAMES+=("$name")
	COUNTS+=("$n")
done
[ ${#NAMES[@]} -gt 0 ] || fail "E2E_CIRCUITS is empty"
declare -A SETUP_PID=()
for i in "${!NAMES[@]}"; do
	name=${NAMES[$i]} n=${COUNTS[$i]}
	# Each job in its own process group, so that a failed run can stop all of it.
	# shellcheck disable=SC2016 # expanded by the inner shell
	setsid -w bash -c '
		cuzk=$1 name=$2 n=$3 log=$4 dir=$5 t0=$SECONDS
		"$cuzk" setup --circuit "$name" >"$log" 2>&1 || exit 1
		echo "setup: ok in $((SECONDS - t0)) s" >>"$log"
		mkdir -p "$dir"
		"$cuzk" inputs --circuit "$name" --seed 1 --count "$n" --out-dir "$dir" || exit 1' \
		_ "$CUZK" "$name" "$n" "$LOG/setup-$name.log" "$WORK/inputs/$name" &
	SETUP_PID[$name]=$!
	BG+=($!)
done

# waitfor PID WHAT: wait for a background job, failing at the deadline.
waitfor() {
	while kill -0 "$1" 2>/dev/null; do
		[ $SECONDS -lt "$DEADLINE" ] || fail "deadline reached waiting for $2"
		sleep 1
	done
	wait "$1"
}
for name in "${NAMES[@]}"; do
	waitfor "${SETUP_PID[$name]}" "setup of $name" ||
		fail "setup of $name: $(grep -v '^\s*$' "$LOG/setup-$name.log" | tail -2 | tr '\n' ' ')"
	note "setup $name: $(grep -o '[0-9]* constraints' "$LOG/setup-$name.log" | head -1), $(tail -1 "$LOG/setup-$name.log") (done at $(elapsed))"
done
BG=()
if [ -n "$BUILD_PID" ]; then
	waitfor "$BUILD_PID" "the CUDA build" || { BUILD_PID=; fail "CUDA build: $(tail -5 "$LOG/build.log" | tr '\n' ' ')"; }
	BUILD_PID=
	note "CUDA library: built (done at $(elapsed))"
fi

# --- worker ----------------------------------------------------------------------------
HWM_KB=0
sample_hwm() {
	local v
	v=$(awk '/^VmHWM:/ {print $2}' "/proc/$WPID/status" 2>/dev/null)
	[ -n "$v" ] && [ "$v" -gt "$HWM_KB" ] && HWM_KB=$v
	return 0
}

# start_worker LABEL FLAGS...: a worker logging to worker-LABEL.log, up when it says so.
start_worker() {
	local label=$1 port
	shift
	WLOG=$LOG/worker-$label.log
	port=$((40000 + RANDOM % 20000))
	WPORT=$port
	HWM_KB=0
	local pp=()
	[ -n "${E2E_TRACE_S:-}" ] && pp=(--pprof --http-token-file "$LOG/http-token")
	"$CUZK" worker --backend "$BACKEND" --http "127.0.0.1:$port" "${pp[@]}" "$@" >"$WLOG" 2>&1 &
	WPID=$!
	until grep -qs "worker started" "$WLOG"; do
		kill -0 "$WPID" 2>/dev/null || { WPID=''; fail "worker ($label) exited at start: $(tail -3 "$WLOG" | tr '\n' ' ')"; }
		[ $SECONDS -lt "$DEADLINE" ] || fail "deadline reached waiting for the worker to start"
		sleep 0.2
	done
	local ready
	ready=$( (exec 3<>"/dev/tcp/127.0.0.1/$port" && printf 'GET /readyz HTTP/1.0\r\n\r\n' >&3 && head -1 <&3) 2>/dev/null | tr -d '\r')
	note "worker $label: pid $WPID, http 127.0.0.1:$port /readyz: ${ready:-no answer}, $(grep -o 'memory budget.*' "$WLOG" | head -1)"
}

# stop_worker: SIGTERM, and the worker must exit 0 on its own.
stop_worker() {
	local rc t=$SECONDS
	sample_hwm
	WORKER_HWM+=("$HWM_KB")
	kill -TERM "$WPID"
	while kill -0 "$WPID" 2>/dev/null; do
		if [ $((SECONDS - t)) -ge 60 ]; then
			kill -KILL "$WPID"
			fail "worker did not stop within 60 s of SIGTERM"
		fi
		sleep 0.2
	done
	wait "$WPID"
	rc=$?
	WPID=
	[ "$rc" = 0 ] || fail "worker exited $rc after SIGTERM"
}

# submit LABEL CIRCUIT N: N requests in one transaction, through cuzk.submit_proof.
submit() {
	local label=$1 c=$2 n=$3 s f=$WORK/submit-$1-$2.sql
	{
		echo "BEGIN;"
		for s in $(seq 1 "$n"); do
			echo "\\set inp \`cat $WORK/inputs/$c/$s.json\`"
			echo "SELECT cuzk.submit_proof(request_id => 'e2e-$label-$c-$s', circuit => '$c', inputs => :'inp'::jsonb) \\g /dev/null"
		done
		echo "COMMIT;"
	} >"$f"
	psqlq -f "$f" >>"$LOG/submit.log" 2>&1 || fail "submit $c: $(tail -2 "$LOG/submit.log" | tr '\n' ' ')"
}

# fetch PATH FILE: GET PATH from the running worker into FILE (the raw response).
fetch() {
	(exec 3<>"/dev/tcp/127.0.0.1/$WPORT" && printf 'GET %s HTTP/1.0\r\nAuthorization: Bearer %s\r\n\r\n' "$1" "$(cat "$LOG/http-token")" >&3 && cat <&3 >"$2") 2>/dev/null
}

# prove LABEL CIRCUIT N: submit, then wait until every request is succeeded or failed.
prove() {
	local label=$1 c=$2 n=$3 ndone failed last=$SECONDS t0=$SECONDS
	submit "$label" "$c" "$n"
	if [ -n "${E2E_TRACE_S:-}" ]; then
		(
			sleep 2
			fetch "/debug/pprof/trace?seconds=$E2E_TRACE_S" "$LOG/trace-$label-$c.http" &
			fetch "/debug/pprof/profile?seconds=$E2E_TRACE_S" "$LOG/cpu-$label-$c.http"
			wait
		) &
	fi
	while :; do
		read -r ndone failed < <(psqlq -At -F' ' -c "SELECT count(*) FILTER (WHERE state IN ('succeeded', 'failed', 'cancelled')),
			count(*) FILTER (WHERE state IN ('failed', 'cancelled')) FROM cuzk.proof_status
			WHERE circuit = '$c' AND request_id LIKE 'e2e-$label-%'")
		[ "${ndone:-0}" -ge "$n" ] && break
		if ! kill -0 "$WPID" 2>/dev/null; then
			wait "$WPID"
			local rc=$?
			WPID=''
			fail "worker exited ($rc) proving $c, $ndone of $n done: $(tail -1 "$WLOG")"
		fi
		[ $SECONDS -lt "$DEADLINE" ] || fail "deadline reached: $c $ndone of $n done"
		sample_hwm
		if [ $((SECONDS - last)) -ge 15 ]; then
			echo "  $label $c: $ndone of $n done ($(elapsed))"
			last=$SECONDS
		fi
		sleep 0.3
	done
	sample_hwm
	note "proved $label $c: $n requests, $failed failed, in $((SECONDS - t0)) s (done at $(elapsed))"
	[ "$failed" = 0 ] || FAILED=1
}

WORKER_HWM=()
start_worker main "${WFLAGS[@]}"
for i in "${!NAMES[@]}"; do
	prove main "${NAMES[$i]}" "${COUNTS[$i]}"
done
stop_worker

if [ "${E2E_COMPARE_SERIAL:-0}" = 1 ]; then
	big=$(psqlq -At -c "SELECT name FROM cuzk.circuits ORDER BY constraints DESC, name LIMIT 1")
	for i in "${!NAMES[@]}"; do [ "${NAMES[$i]}" = "$big" ] && bign=${COUNTS[$i]}; done
	start_worker serial "${WFLAGS[@]}" --synth-concurrency 1 --queue-depth 1
	prove serial "$big" "$bign"
	stop_worker
fi

EXTRA_LABELS=()
for item in ${E2E_COMPARE_BATCH:-}; do
	c=${item%%:*} k=${item#*:} cn=
	for i in "${!NAMES[@]}"; do [ "${NAMES[$i]}" = "$c" ] && cn=${COUNTS[$i]}; done
	[ -n "$cn" ] || fail "E2E_COMPARE_BATCH: $c is not in E2E_CIRCUITS"
	case $k in '' | *[!0-9]*) fail "E2E_COMPARE_BATCH: bad batch size in '$item'" ;; esac
	start_worker "batch$k" "${WFLAGS[@]}" --max-batch "$k"
	prove "batch$k" "$c" "$cn"
	stop_worker
	EXTRA_LABELS+=("batch$k")
done

if [ -n "${E2E_EVICT:-}" ]; then
	e1=${E2E_EVICT%%,*} e2=${E2E_EVICT#*,} en=${E2E_EVICT_N:-8}
	# The key's bytes without precomputed copies (the evict worker makes none).
	keybytes() {
		local l
		l=$(grep 'proving key resident' "$LOG/worker-main.log" | grep -E "circuit=\"?$1\"?( |$)" | head -1)
		[ -n "$l" ] || return 0
		echo $(($(grep -o ' bytes=[0-9]*' <<<"$l" | cut -d= -f2) - $(grep -o 'precomputed_bytes=[0-9]*' <<<"$l" | cut -d= -f2 || echo 0)))
	}
	k1=$(keybytes "$e1") k2=$(keybytes "$e2")
	[ -n "$k1" ] && [ -n "$k2" ] || fail "E2E_EVICT: no key size of $e1 or $e2 in the main worker's log"
	lim=$((k1 > k2 ? k1 + k2 / 2 : k2 + k1 / 2))
	note "evict: keys $e1 $k1 bytes, $e2 $k2 bytes; --gpu-key-memory $lim"
	start_worker evict "${WFLAGS[@]}" --gpu-precompute 0 --gpu-key-memory "$lim"
	f=$WORK/submit-evict.sql t0=$SECONDS
	{
		echo "BEGIN;"
		for s in $(seq 1 "$en"); do
			for c in "$e1" "$e2"; do
				echo "\\set inp \`cat $WORK/inputs/$c/$s.json\`"
				echo "SELECT cuzk.submit_proof(request_id => 'e2e-evict-$c-$s', circuit => '$c', inputs => :'inp'::jsonb) \\g /dev/null"
			done
		done
		echo "COMMIT;"
	} >"$f"
	psqlq -f "$f" >>"$LOG/submit.log" 2>&1 || fail "submit evict: $(tail -2 "$LOG/submit.log" | tr '\n' ' ')"
	while :; do
		read -r ndone failed < <(psqlq -At -F' ' -c "SELECT count(*) FILTER (WHERE state IN ('succeeded', 'failed', 'cancelled')),
			count(*) FILTER (WHERE state IN ('failed', 'cancelled')) FROM cuzk.proof_status WHERE request_id LIKE 'e2e-evict-%'")
		[ "${ndone:-0}" -ge $((2 * en)) ] && break
		kill -0 "$WPID" 2>/dev/null || { WPID=''; fail "worker (evict) exited, $ndone of $((2 * en)) done"; }
		[ $SECONDS -lt "$DEADLINE" ] || fail "deadline reached: evict $ndone of $((2 * en)) done"
		sleep 0.3
	done
	stop_worker
	nev=$(grep -c 'proving key evicted' "$WLOG")
	note "evict: $((2 * en)) requests of $e1 and $e2 alternating, $failed failed, $nev evictions, in $((SECONDS - t0)) s"
	[ "$failed" = 0 ] && [ "$nev" -gt 0 ] || { FAILED=1; note "FAIL evict: want every request proven and evictions"; }
	EXTRA_LABELS+=(evict)
fi

"$CUZK" verify --all >"$LOG/verify.log" 2>&1
vrc=$?
verified=$(grep -c ': ok$' "$LOG/verify.log")
note "verify --all: rc $vrc, $verified ok, $(grep -c 'INVALID' "$LOG/verify.log") invalid"

# --- report ----------------------------------------------------------------------------
WORKER_LABELS=(main)
[ "${E2E_COMPARE_SERIAL:-0}" = 1 ] && WORKER_LABELS+=(serial)
WORKER_LABELS+=("${EXTRA_LABELS[@]}")
budget=$(grep -o 'budget="[^"]*"' "$LOG/worker-main.log" | head -1 | cut -d'"' -f2)
for i in "${!WORKER_LABELS[@]}"; do
	l=${WORKER_LABELS[$i]}
	flag=$(grep -o -- '--mem-budget[= ][^ ]*' <<<"${E2E_WORKER_FLAGS:-}")
	note "worker ${l}: peak RSS (VmHWM) $((WORKER_HWM[i] / 1024)) MiB against a memory budget of ${flag:-$budget};" \
		"log: $(grep -c ' WRN ' "$LOG/worker-$l.log") warnings, $(grep -c ' ERR ' "$LOG/worker-$l.log") errors"
done
{
	echo
	echo "Per circuit, succeeded attempts: p50 / p95 of each phase (ms) and batch size."
	psqlq -P pager=off -P footer=off -c "
	WITH a AS (SELECT split_part(request_id, '-', 2) AS run, * FROM cuzk.proof_attempts
	            WHERE outcome = 'succeeded' AND request_id LIKE 'e2e-%')
	SELECT run, circuit, count(*) AS n, $(
		sep=
		for ph in queue_ms srs_ms synth_ms prove_wait_ms prove_ms ntt_ms msm_ms verify_ms total_ms batch_size; do
			printf '%s' "$sep"
			printf "coalesce(round(percentile_cont(0.5) WITHIN GROUP (ORDER BY %s)::numeric, 1)::text, '-') || ' / ' ||
			        coalesce(round(percentile_cont(0.95) WITHIN GROUP (ORDER BY %s)::numeric, 1)::text, '-') AS %s" "$ph" "$ph" "$ph"
			sep=', '
		done
	)
	FROM a GROUP BY run, circuit ORDER BY run, min(started_at)"
	echo "Throughput: steady = n / (last finished_at - first prove_started_at), after keys are"
	echo "loaded; wall = n / (last finished_at - first request's created_at), from submission."
	echo "GPU: the device telemetry each attempt stored (the poller's latest sample when proving ended)."
	psqlq -P pager=off -P footer=off -c "
	WITH a AS (SELECT split_part(a.request_id, '-', 2) AS run, a.*, r.created_at AS submitted
	             FROM cuzk.proof_attempts a JOIN cuzk.proof_requests r USING (request_id)
	            WHERE a.outcome = 'succeeded' AND a.request_id LIKE 'e2e-%')
	SELECT run, circuit, count(*) AS n, string_agg(DISTINCT backend, ',') AS backend,
	       round((count(*) / extract(epoch FROM max(finished_at) - min(prove_started_at)))::numeric, 2) AS steady_per_s,
	       round((count(*) / extract(epoch FROM max(finished_at) - min(submitted)))::numeric, 2) AS wall_per_s,
	       round(avg((telemetry->>'gpu_util_pct')::numeric) / 100, 2) AS gpu_util_avg,
	       round(max((telemetry->>'gpu_util_pct')::numeric) / 100, 2) AS gpu_util_max,
	       round(max((telemetry->>'mem_used_bytes')::numeric) / 1073741824, 1) AS gpu_mem_gib_max,
	       round(max((telemetry->>'mem_total_bytes')::numeric) / 1073741824, 1) AS gpu_mem_gib_total,
	       max((telemetry->>'temperature_c')::int) AS temp_c_max,
	       round(avg((telemetry->>'power_mw')::numeric) / 1000) AS power_w_avg
	  FROM a GROUP BY run, circuit ORDER BY run, min(started_at)"
	bad=$(psqlq -At -c "SELECT count(*) FROM cuzk.proof_attempts WHERE outcome <> 'succeeded'")
	echo "Attempts that did not succeed: $bad"
	[ "$bad" = 0 ] || psqlq -P pager=off -P footer=off -c "SELECT request_id, attempt, outcome, left(error, 120) AS error
	  FROM cuzk.proof_attempts WHERE outcome <> 'succeeded' ORDER BY id LIMIT 20"
} >>"$REPORT" 2>&1
psqlq -P pager=off -c "SELECT * FROM cuzk.proof_attempts ORDER BY id" >"$LOG/attempts.txt" 2>&1
cp "$WORK/pg/server.log" "$LOG/" 2>/dev/null

total=$(psqlq -At -c "SELECT count(*) FROM cuzk.proof_requests WHERE request_id LIKE 'e2e-%'")
ok=$(psqlq -At -c "SELECT count(*) FROM cuzk.proof_status WHERE state = 'succeeded' AND request_id LIKE 'e2e-%'")
on=$(psqlq -At -c "SELECT coalesce(string_agg(DISTINCT backend, ','), '$BACKEND') FROM cuzk.proof_attempts WHERE outcome = 'succeeded'")
rates=$(psqlq -At -c "
	SELECT string_agg(c, ', ' ORDER BY run, t) FROM (
	  SELECT split_part(request_id, '-', 2) AS run, min(started_at) AS t,
	         circuit || CASE WHEN split_part(request_id, '-', 2) = 'main' THEN '' ELSE '(' || split_part(request_id, '-', 2) || ')' END
	         || ' ' || round((count(*) / extract(epoch FROM max(finished_at) - min(prove_started_at)))::numeric, 2) || ' proofs/s' AS c
	    FROM cuzk.proof_attempts WHERE outcome = 'succeeded' AND request_id LIKE 'e2e-%'
	   GROUP BY 1, circuit) x")
[ "$ok" = "$total" ] || fail "$ok of $total requests succeeded"
if [ "$vrc" != 0 ] || [ "$verified" != "$total" ]; then
	fail "verify --all: rc $vrc, $verified of $total verified"
fi
[ -z "$FAILED" ] || fail "see above"
note "elapsed: $(elapsed)"
note "e2e: $ok of $total proven on $on and verified, $rates"
