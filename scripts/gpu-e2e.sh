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
#                       the previous one's requests are all done (default below);
#                       "name:NxP" is N requests of P partitions each (porep-k24:1x10,
#                       one Filecoin-shaped request), reported per partition and per
#                       request as well (phases, serial against pipelined time,
#                       constraints/s, solves at once, device idle share)
#   E2E_WORKER_FLAGS    extra worker flags, e.g. "--max-batch 16"
#   E2E_WORKER_FLAGS_FILE  a file whose flags are added to those: the worker starts once
#                       it exists (written beside the setup, e.g. after an A/B)
#   E2E_COMPARE_SERIAL  1: afterwards, prove the largest circuit's count again with a
#                       second worker given --synth-concurrency 1 --queue-depth 1, and
#                       report both rates
#   E2E_COMPARE_FLAGS   "CIRCUIT FLAGS...": afterwards, prove CIRCUIT's requests again with a
#                       worker given E2E_WORKER_FLAGS and FLAGS (label cmp), e.g.
#                       "porep-k24 --synth-concurrency 1"; the circuit must be in E2E_CIRCUITS
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
#   E2E_URGENT          circuit: once the first partition of the first partitioned request
#                       is proven, one request of this circuit is submitted with priority 1;
#                       the report gives its time from submission to done and how many of
#                       the long request's partitions were proven meanwhile
#   E2E_DEADLINE_S      give up (and fail) this many seconds after the start (default 530)
#   E2E_KEYS_DIR        keys and compiled circuits here instead of a temp dir: setup
#                       reuses keys it finds there (after checking they fit the circuit)
#   E2E_KEEP            1: keep the temp dir (database, keys) after the run
#   E2E_CUZK            a cuzk binary to run instead of the bundle's
#   E2E_PG_BINDIR       PostgreSQL 15's bin directory (initdb, pg_ctl, postgres, psql) to
#                       use instead of the bundle's, e.g. /usr/lib/postgresql/15/bin;
#                       with E2E_CUZK too, no bundle is needed (a development machine)
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

BUILD_PID='' WPID='' PGUP='' FAILED='' SMI=''
declare -a BG=()
cleanup() {
	local p
	for p in "${BG[@]}"; do kill -- "-$p" 2>/dev/null; done
	[ -n "$BUILD_PID" ] && kill -- "-$BUILD_PID" 2>/dev/null
	[ -n "$SMI" ] && kill "$SMI" 2>/dev/null
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

# --- bundle, or this machine's binaries -------------------------------------------------
CUZK=${E2E_CUZK:-} PGBIN=${E2E_PG_BINDIR:-} PGLIB=''
if [ -z "$CUZK" ] || [ -z "$PGBIN" ]; then
	command -v xz >/dev/null || fail "xz is needed to unpack the bundle"
	[ -f .gpubundle/bundle.tar.xz ] ||
		fail "no .gpubundle/bundle.tar.xz (run make gpu-bundle on a machine with Go, or set E2E_CUZK and E2E_PG_BINDIR)"
	tar -C "$WORK" -xJf .gpubundle/bundle.tar.xz || fail "unpack .gpubundle/bundle.tar.xz"
	[ -n "$CUZK" ] || CUZK=$WORK/cuzk
	[ -n "$PGBIN" ] || PGBIN=$WORK/pg/usr/lib/postgresql/15/bin PGLIB=$WORK/pg/extralib
fi
CUZK=$(realpath "$CUZK") PGBIN=$(realpath "$PGBIN")
[ -x "$CUZK" ] || fail "no cuzk binary at $CUZK"
[ -x "$PGBIN/initdb" ] && [ -x "$PGBIN/pg_ctl" ] && [ -x "$PGBIN/psql" ] || fail "no initdb, pg_ctl and psql in $PGBIN"
mkdir -p "$WORK/pg"
export CUZK_PG_BINDIR=$PGBIN
# Only for PostgreSQL's processes: just the libraries the host lacks, never its libc.
pgrun() {
	local b=$1
	shift
	if [ -n "${PGUSER_RUN:-}" ]; then
		(cd "$WORK/pg" && runuser -u postgres -- env LD_LIBRARY_PATH="$PGLIB" LC_ALL=C "$PGBIN/$b" "$@")
	else
		LD_LIBRARY_PATH=$PGLIB LC_ALL=C "$PGBIN/$b" "$@"
	fi
}
psqlq() { LD_LIBRARY_PATH=$PGLIB "$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }
if [ -f "$WORK/MANIFEST" ] && [ -z "${E2E_CUZK:-}" ]; then
	build=$(head -1 "$WORK/MANIFEST")
else
	build="cuzk $CUZK"
fi
note "e2e: $build, backend $BACKEND, circuits: $CIRCUITS"
[ ${#WFLAGS[@]} -gt 0 ] && note "worker flags: ${WFLAGS[*]}"
{ uname -a; nproc; free -g; df -h "$WORK" /tmp; nvidia-smi 2>&1; nvcc --version 2>&1; cat "$WORK/MANIFEST"; } >"$LOG/machine.txt" 2>&1
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
declare -A PARTS=() # circuit -> partitions of each of its requests
for item in $CIRCUITS; do
	name=${item%%:*} n=${item#*:} p=1
	[ "$n" = "$item" ] && n=16
	case $n in *x*) p=${n#*x} n=${n%%x*} ;; esac
	case $n in '' | *[!0-9]* | 0) fail "E2E_CIRCUITS: bad count in '$item'" ;; esac
	case $p in '' | *[!0-9]* | 0) fail "E2E_CIRCUITS: bad partitions in '$item'" ;; esac
	case " ${NAMES[*]} " in *" $name "*) fail "E2E_CIRCUITS: $name twice" ;; esac
	NAMES+=("$name")
	COUNTS+=("$n")
	PARTS[$name]=$p
done
[ ${#NAMES[@]} -gt 0 ] || fail "E2E_CIRCUITS is empty"
# The urgent circuit gets a key and one request's inputs beside the others.
URGENT=${E2E_URGENT:-}
SETUP_NAMES=("${NAMES[@]}")
declare -A SETUP_N=()
for i in "${!NAMES[@]}"; do SETUP_N[${NAMES[$i]}]=${COUNTS[$i]}; done
if [ -n "$URGENT" ]; then
	case " ${NAMES[*]} " in *" $URGENT "*) fail "E2E_URGENT: $URGENT is in E2E_CIRCUITS too" ;; esac
	SETUP_NAMES+=("$URGENT")
	SETUP_N[$URGENT]=1
	PARTS[$URGENT]=1
fi
declare -A SETUP_PID=() SETUP_HWM=()
for name in "${SETUP_NAMES[@]}"; do
	n=${SETUP_N[$name]}
	SETUP_HWM[$name]=0
	# Each job in its own process group, so that a failed run can stop all of it. The
	# setup's pid goes to a file, for its peak RSS. The inputs come after the setup:
	# at 2^26 both at once would only slow the setup down.
	# shellcheck disable=SC2016 # expanded by the inner shell
	setsid -w bash -c '
		cuzk=$1 name=$2 n=$3 log=$4 dir=$5 p=$6 t0=$SECONDS
		"$cuzk" setup --circuit "$name" >"$log" 2>&1 &
		echo $! >"$log.pid"
		wait $! || exit 1
		echo "setup: ok in $((SECONDS - t0)) s" >>"$log"
		mkdir -p "$dir"
		"$cuzk" inputs --circuit "$name" --seed 1 --count "$n" --partitions "$p" --out-dir "$dir" || exit 1' \
		_ "$CUZK" "$name" "$n" "$LOG/setup-$name.log" "$WORK/inputs/$name" "${PARTS[$name]}" &
	SETUP_PID[$name]=$!
	BG+=($!)
done

# hwm PID: the peak RSS of a running process in KiB (0 once it is gone).
hwm() { awk '/^VmHWM:/ {print $2; f=1} END {if (!f) print 0}' "/proc/$1/status" 2>/dev/null || echo 0; }

# waitfor PID WHAT: wait for a background job, failing at the deadline.
waitfor() {
	local name s v
	while kill -0 "$1" 2>/dev/null; do
		[ $SECONDS -lt "$DEADLINE" ] || fail "deadline reached waiting for $2"
		for name in "${!SETUP_PID[@]}"; do
			[ -f "$LOG/setup-$name.log.pid" ] || continue
			s=$(cat "$LOG/setup-$name.log.pid") v=$(hwm "$s")
			[ "$v" -gt "${SETUP_HWM[$name]}" ] && SETUP_HWM[$name]=$v
		done
		sleep 1
	done
	wait "$1"
}
for name in "${SETUP_NAMES[@]}"; do
	waitfor "${SETUP_PID[$name]}" "setup of $name" ||
		fail "setup of $name: $(grep -v '^\s*$' "$LOG/setup-$name.log" | tail -2 | tr '\n' ' ')"
	note "setup $name: $(grep -o '[0-9]* constraints' "$LOG/setup-$name.log" | head -1), $(grep '^setup: ok' "$LOG/setup-$name.log" | tail -1)," \
		"circuit compiled (or read from the cache) in $(grep -o "compiling $name: done in [0-9.hmµn]*s" "$LOG/setup-$name.log" | head -1 | awk '{print $NF}')," \
		"peak RSS $((SETUP_HWM[$name] / 1024)) MiB (sampled each second, 0: done within one; done at $(elapsed))"
	[ -d "$KEYS/keys/$name" ] && note "  key files of $name: $(du -sh "$KEYS/keys/$name" | cut -f1); compiled circuit cache: $(du -sh "$KEYS/r1cs" | cut -f1); free disk: $(df -h --output=avail "$KEYS" | tail -1 | tr -d ' ')"
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
	# With --preload-keys the requests come once the keys are resident and the circuits
	# loaded, so that their times are those of a worker in service.
	if [[ " $* " == *" --preload-keys "* ]]; then
		until grep -qs "preload done" "$WLOG"; do
			kill -0 "$WPID" 2>/dev/null || { WPID=''; fail "worker ($label) exited while preloading: $(tail -3 "$WLOG" | tr '\n' ' ')"; }
			[ $SECONDS -lt "$DEADLINE" ] || fail "deadline reached waiting for the worker's preload"
			sleep 0.2
		done
		note "worker $label: $(grep -o 'preload done.*' "$WLOG" | head -1)"
	fi
	local ready
	ready=$( (exec 3<>"/dev/tcp/127.0.0.1/$port" && printf 'GET /readyz HTTP/1.0\r\n\r\n' >&3 && head -1 <&3) 2>/dev/null | tr -d '\r')
	local mem
	mem=$(grep -o 'memory budget.*' "$WLOG" | head -1)
	[ -n "$mem" ] || mem="memory budget $(grep -o 'mem_budget=[0-9]*' "$WLOG" | head -1 | cut -d= -f2) bytes (--mem-budget)"
	note "worker $label: pid $WPID, http 127.0.0.1:$port /readyz: ${ready:-no answer}, $mem"
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

# inputs CIRCUIT S: the inputs file of request S (from 1) of CIRCUIT: with P partitions
# a request's file is named by the first of its P seeds.
inputs() { echo "$WORK/inputs/$1/$((1 + ($2 - 1) * ${PARTS[$1]:-1})).json"; }

# submit LABEL CIRCUIT N: N requests in one transaction, through cuzk.submit_proof.
submit() {
	local label=$1 c=$2 n=$3 s f=$WORK/submit-$1-$2.sql
	{
		echo "BEGIN;"
		for s in $(seq 1 "$n"); do
			echo "\\set inp \`cat $(inputs "$c" "$s")\`"
			echo "SELECT cuzk.submit_proof(request_id => 'e2e-$label-$c-$s', circuit => '$c', inputs => :'inp'::jsonb) \\g /dev/null"
		done
		echo "COMMIT;"
	} >"$f"
	psqlq -f "$f" >>"$LOG/submit.log" 2>&1 || fail "submit $c: $(tail -2 "$LOG/submit.log" | tr '\n' ' ')"
}

# urgent_during LABEL CIRCUIT: once the first partition of LABEL's CIRCUIT request is
# proven, submit one priority-1 request of $URGENT, wait for it, and write what it
# waited and how many of the long request's partitions were proven meanwhile to
# logs/urgent.txt.
urgent_during() {
	local label=$1 c=$2 f=$WORK/submit-urgent.sql id="e2e-urgent-$URGENT" state=''
	until [ "$(psqlq -At -c "SELECT count(*) FROM cuzk.partition_attempts
		WHERE request_id LIKE 'e2e-$label-$c-%' AND outcome = 'succeeded'")" -ge 1 ]; do
		[ $SECONDS -lt "$DEADLINE" ] || return 1
		sleep 0.2
	done
	{
		echo "\\set inp \`cat $(inputs "$URGENT" 1)\`"
		echo "SELECT cuzk.submit_proof(request_id => '$id', circuit => '$URGENT', inputs => :'inp'::jsonb, priority => 1) \\g /dev/null"
	} >"$f"
	psqlq -f "$f" >>"$LOG/submit.log" 2>&1 || return 1
	until case $state in succeeded | failed | cancelled) true ;; *) false ;; esac; do
		[ $SECONDS -lt "$DEADLINE" ] || return 1
		sleep 0.1
		state=$(psqlq -At -c "SELECT state FROM cuzk.proof_status WHERE request_id = '$id'")
	done
	psqlq -At -F' ' -c "SELECT '$URGENT ' || u.state || ' in ' || round(extract(epoch FROM u.finished_at - u.created_at)::numeric, 2)
		|| ' s from submission (queue ' || coalesce(round(a.queue_ms)::text, '?') || ' ms, synthesis ' || coalesce(round(a.synth_ms)::text, '?')
		|| ' ms, prove ' || coalesce(round(a.prove_ms)::text, '?') || ' ms); partitions of $c proven before it was submitted: '
		|| (SELECT count(*) FROM cuzk.partition_attempts p WHERE p.request_id LIKE 'e2e-$label-$c-%' AND p.outcome = 'succeeded'
		    AND p.finished_at <= u.created_at)
		|| ', while it ran: ' || (SELECT count(*) FROM cuzk.partition_attempts p WHERE p.request_id LIKE 'e2e-$label-$c-%'
		    AND p.outcome = 'succeeded' AND p.finished_at > u.created_at AND p.finished_at <= u.finished_at)
		FROM cuzk.proof_status u LEFT JOIN cuzk.proof_attempts a ON a.request_id = u.request_id
		WHERE u.request_id = '$id' ORDER BY a.attempt DESC LIMIT 1" >"$LOG/urgent.txt"
}

# fetch PATH FILE: GET PATH from the running worker into FILE (the raw response).
fetch() {
	(exec 3<>"/dev/tcp/127.0.0.1/$WPORT" && printf 'GET %s HTTP/1.0\r\nAuthorization: Bearer %s\r\n\r\n' "$1" "$(cat "$LOG/http-token")" >&3 && cat <&3 >"$2") 2>/dev/null
}

# prove LABEL CIRCUIT N: submit, then wait until every request is succeeded or failed.
# Meanwhile the GPU's utilization and memory are sampled every 0.5 s into
# logs/gpu-LABEL-CIRCUIT.csv (utilization %, memory used MiB, total MiB, power W).
prove() {
	local label=$1 c=$2 n=$3 ndone failed last=$SECONDS t0=$SECONDS
	SMI=''
	if command -v nvidia-smi >/dev/null && [ "$BACKEND" != cpu ]; then
		nvidia-smi --query-gpu=utilization.gpu,memory.used,memory.total,power.draw --format=csv,noheader,nounits \
			-lms 500 >"$LOG/gpu-$label-$c.csv" 2>/dev/null &
		SMI=$!
	fi
	submit "$label" "$c" "$n"
	local upid=''
	if [ -n "$URGENT" ] && [ "$label" = main ] && [ "${PARTS[$c]:-1}" -gt 1 ] && [ -z "${URGENT_SENT:-}" ]; then
		URGENT_SENT=1
		urgent_during "$label" "$c" &
		upid=$!
	fi
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
	[ -n "$SMI" ] && kill "$SMI" 2>/dev/null && wait "$SMI" 2>/dev/null
	SMI=''
	local gpu=''
	[ -s "$LOG/gpu-$label-$c.csv" ] && gpu=$(awk -F', *' '{n++; u+=$1; if ($1 > um) um=$1; if ($2 > mm) mm=$2; t=$3}
		END {if (n) printf "; GPU while proving: utilization avg %.0f%%, max %d%%, memory max %.1f of %.1f GiB (%d samples)", u/n, um, mm/1024, t/1024, n}' \
		"$LOG/gpu-$label-$c.csv")
	note "proved $label $c: $n requests, $failed failed, in $((SECONDS - t0)) s (done at $(elapsed))$gpu"
	if [ -n "$upid" ]; then
		wait "$upid" && [ -s "$LOG/urgent.txt" ] || fail "urgent request of $URGENT during $c: not done"
		note "urgent: $(cat "$LOG/urgent.txt")"
		grep -q "^$URGENT succeeded" "$LOG/urgent.txt" || FAILED=1
	fi
	[ "$failed" = 0 ] || FAILED=1
}

# Flags decided during the run (e.g. by a measurement beside the setup) come last.
if [ -n "${E2E_WORKER_FLAGS_FILE:-}" ]; then
	until [ -s "$E2E_WORKER_FLAGS_FILE" ]; do
		[ $SECONDS -lt "$DEADLINE" ] || fail "deadline reached waiting for $E2E_WORKER_FLAGS_FILE"
		sleep 1
	done
	read -r -a more <"$E2E_WORKER_FLAGS_FILE"
	WFLAGS+=("${more[@]}")
	note "worker flags from $E2E_WORKER_FLAGS_FILE: ${more[*]}"
fi
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
if [ -n "${E2E_COMPARE_FLAGS:-}" ]; then
	read -r -a cmp <<<"$E2E_COMPARE_FLAGS"
	c=${cmp[0]} cn=
	for i in "${!NAMES[@]}"; do [ "${NAMES[$i]}" = "$c" ] && cn=${COUNTS[$i]}; done
	[ -n "$cn" ] || fail "E2E_COMPARE_FLAGS: $c is not in E2E_CIRCUITS"
	note "cmp: $c again with worker flags ${WFLAGS[*]} ${cmp[*]:1}"
	start_worker cmp "${WFLAGS[@]}" "${cmp[@]:1}"
	prove cmp "$c" "$cn"
	stop_worker
	EXTRA_LABELS+=(cmp)
fi
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
				echo "\\set inp \`cat $(inputs "$c" "$s")\`"
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
verified=$(grep -cE ': ok( \([0-9]+ partitions\))?$' "$LOG/verify.log")
note "verify --all: rc $vrc, $verified ok, $(grep -c 'INVALID' "$LOG/verify.log") invalid"

# --- report ----------------------------------------------------------------------------
# The succeeded partition rows of the run's requests, with their attempt's times and
# the circuit's constraints: the start of the partition queries below.
PARTITION_ROWS="WITH p AS (
	SELECT pa.*, split_part(pa.request_id, '-', 2) AS run, r.circuit, c.constraints, a.queue_ms,
	       a.started_at AS a_start, a.finished_at AS a_end,
	       pa.synth_started_at + pa.synth_ms * interval '1 ms' AS synth_end,
	       pa.prove_started_at + pa.prove_ms * interval '1 ms' AS prove_end
	  FROM cuzk.partition_attempts pa
	  JOIN cuzk.proof_attempts a USING (request_id, attempt)
	  JOIN cuzk.proof_requests r USING (request_id)
	  JOIN cuzk.circuits c ON c.name = r.circuit
	 WHERE pa.request_id LIKE 'e2e-%' AND pa.outcome = 'succeeded' AND a.outcome = 'succeeded')"
# Per request (after PARTITION_ROWS): b has its phase sums, wall_s, busy_s (the union of
# its partitions' proving intervals) and solves (most partitions solved at once).
PARTITION_REQUESTS=",
	r AS (SELECT request_id, run, circuit, count(*) AS n, max(constraints) AS k, min(a_start) AS a_start, max(a_end) AS a_end,
	             max(queue_ms)::numeric AS queue_ms, coalesce(sum(srs_ms), 0)::numeric AS srs, coalesce(sum(mem_wait_ms), 0)::numeric AS mem_wait,
	             sum(synth_ms)::numeric AS synth, sum(prove_ms)::numeric AS prove, coalesce(sum(verify_ms), 0)::numeric AS verify,
	             coalesce(sum(persist_ms), 0)::numeric AS persist,
	             min(synth_started_at) AS s0, max(synth_end) AS s1, min(prove_started_at) AS p0, max(prove_end) AS p1,
	             range_agg(tstzrange(prove_started_at, prove_end)) AS busy,
	             max((SELECT count(*) FROM p q WHERE q.request_id = p.request_id AND q.synth_started_at <= p.synth_started_at
	                    AND q.synth_end > p.synth_started_at)) AS solves
	        FROM p GROUP BY request_id, run, circuit),
	b AS (SELECT r.*, (SELECT extract(epoch FROM sum(upper(x) - lower(x))) FROM unnest(r.busy) x) AS busy_s,
	             extract(epoch FROM a_end - a_start) AS wall_s FROM r)"
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
	if [ "$(psqlq -At -c "SELECT count(*) FROM cuzk.partition_attempts WHERE request_id LIKE 'e2e-%'")" != 0 ]; then
		echo
		echo "Partitioned requests, per partition (ms; t_synth and t_prove: when synthesis and proving began,"
		echo "from the attempt's start). Each run's first request in full, then p50 / p95 over all partitions."
		psqlq -P pager=off -P footer=off -c "
		$PARTITION_ROWS
		SELECT request_id, partition, round(mem_wait_ms) AS mem_wait, round(srs_ms) AS srs,
		       round(extract(epoch FROM synth_started_at - a_start) * 1000) AS t_synth, round(synth_ms) AS synth,
		       round(prove_wait_ms) AS prove_wait, round(extract(epoch FROM prove_started_at - a_start) * 1000) AS t_prove,
		       round(prove_ms) AS prove, round(verify_ms) AS verify, round(persist_ms) AS persist, round(total_ms) AS total
		  FROM p WHERE request_id IN (SELECT min(request_id) FROM p GROUP BY run, circuit)
		 ORDER BY a_start, request_id, partition"
		psqlq -P pager=off -P footer=off -c "
		$PARTITION_ROWS
		SELECT run, circuit, count(*) AS partitions, $(
			sep=
			for ph in mem_wait_ms srs_ms synth_ms prove_wait_ms prove_ms verify_ms persist_ms total_ms; do
				printf '%s' "$sep"
				printf "round(percentile_cont(0.5) WITHIN GROUP (ORDER BY %s)::numeric)::text || ' / ' ||
				        round(percentile_cont(0.95) WITHIN GROUP (ORDER BY %s)::numeric)::text AS %s" "$ph" "$ph" "${ph%_ms}"
				sep=', '
			done
		)
		  FROM p GROUP BY run, circuit ORDER BY run, min(a_start)"
		echo "Per request: queue (its wait for a worker), the phases summed over its partitions (s),"
		echo "serial = srs + synth + prove + verify + persist summed, wall = the attempt's start to its"
		echo "proof stored; synth/solve = constraints per second of one solve (summed constraints over"
		echo "summed synth time), synth/wall = the request's constraints over first synthesis start to"
		echo "last synthesis end, solves = most partitions solved at once; gpu = constraints per second"
		echo "of proving time; gpu_busy = the union of the partitions' proving intervals, gpu_idle = the"
		echo "share of the wall (and of first proving start to last proving end) the device proved none."
		psqlq -P pager=off -P footer=off -c "
		$PARTITION_ROWS$PARTITION_REQUESTS
		SELECT request_id, n AS parts, round(queue_ms) AS queue_ms, round(srs / 1000, 2) AS srs_s,
		       round(mem_wait / 1000, 2) AS mem_wait_s, round(synth / 1000, 2) AS synth_s, round(prove / 1000, 2) AS prove_s,
		       round(verify / 1000, 2) AS verify_s,
		       round((srs + synth + prove + verify + persist) / 1000, 2) AS serial_s, round(wall_s, 2) AS wall_s,
		       round((srs + synth + prove + verify + persist) / 1000 / nullif(wall_s, 0), 2) AS serial_per_wall,
		       round(k * n / nullif(synth, 0) / 1000, 2) AS synth_solve_mcs,
		       round(k * n / nullif(extract(epoch FROM s1 - s0), 0) / 1e6, 2) AS synth_wall_mcs, solves,
		       round(k * n / nullif(prove, 0) / 1000, 2) AS gpu_mcs, round(busy_s, 2) AS gpu_busy_s,
		       round(100 * (1 - busy_s / nullif(wall_s, 0)), 1) AS gpu_idle_pct,
		       round(100 * (1 - busy_s / nullif(extract(epoch FROM p1 - p0), 0)), 1) AS gpu_idle_proving_pct
		  FROM b ORDER BY a_start, request_id"
	fi
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
parted=$(psqlq -At -c "$PARTITION_ROWS$PARTITION_REQUESTS
	SELECT string_agg(c, '; ' ORDER BY t) FROM (
	  SELECT min(a_start) AS t,
	         format('%s %sx%s%s: wall %s s (serial %s s), synthesis %sM constraints/s (%s at once), GPU idle %s%%',
	                circuit, count(*), max(n), CASE run WHEN 'main' THEN '' ELSE '(' || run || ')' END,
	                round(avg(wall_s), 1), round(avg(srs + synth + prove + verify + persist) / 1000, 1),
	                round(sum(k * n) / nullif(sum(extract(epoch FROM s1 - s0)), 0) / 1e6, 1), max(solves),
	                round(100 * (1 - sum(busy_s) / nullif(sum(wall_s), 0)))) AS c
	    FROM b GROUP BY run, circuit) x")
[ -n "$parted" ] && rates="$rates; partitioned: $parted"
[ "$ok" = "$total" ] || fail "$ok of $total requests succeeded"
if [ "$vrc" != 0 ] || [ "$verified" != "$total" ]; then
	fail "verify --all: rc $vrc, $verified of $total verified"
fi
[ -z "$FAILED" ] || fail "see above"
note "elapsed: $(elapsed)"
note "e2e: $ok of $total proven on $on and verified, $rates"
