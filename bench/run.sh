#!/usr/bin/env bash
# Runs groupcoord's benchmarks end to end and prints one Markdown table.
#
#   bench/run.sh [--quick] [--pin] [SCENARIO...]
#
# SCENARIO: throughput, members, instructions, gate, members-100k, members-1conn,
# scale, join-storm, big-group, big-partitions, assign, direct, failover, fleet, kafka,
# peers, kip848, rebalance (default: all, in that order), placement (run by fleet too, after it).
# throughput: heartbeats at depth 1 and 16, groupcoordd
# against the IoLoop echo (groupcoordd's own TCP server with a handler that
# does nothing) and the minimal echo, in interleaved rounds; members: 10,000
# members at one heartbeat a second on an absolute schedule, latency from
# each beat's due time, the generator's own lateness, groupcoordd's own
# read-to-answer and stage figures from its /metrics, then the same schedule
# against both echoes, in turns (five rounds of a 4 s window each);
# instructions: instructions per heartbeat of the three
# servers, counted by callgrind, and of a Kafka heartbeat on groupcoordd's
# Kafka port beside its native one, then of groupcoordd with authentication on; gate: instructions per heartbeat through
# the authentication gate, without it, with roles only and with 1,000
# permission rules (no server); members-100k: 100,000 members in 1,000
# groups over 10,000 connections, heartbeating every 3 s with a 10 s
# session; members-1conn: the same schedule with one member per connection,
# as many as the 20,000-descriptor limit allows (19,000); scale: both of
# those shapes through join, 60 s of heartbeats, 1% of the members leaving
# and rejoining and 1% of the connections killed and restarted, counting
# false evictions (members evicted though the generator kept them alive),
# then the echoes at the same rate; big-group: one
# group of 10,000 members on 10,000 partitions, then a client-mode group of
# 3,000; big-partitions: 1,000 members on 100,000 partitions; assign: the
# optimiser alone, one join and one leave in three shapes; fleet starts and restarts its own three
# servers: a rolling restart under 30,000 members; placement (after fleet, or
# alone) starts its own servers for each of its phases: the bounded-load
# placement of groups over servers after a SIGKILL and return (empty groups,
# and groups of log-uniform sizes with heartbeating members), a fourth
# server joining, a fifth flapping, then PLACEMENT_STEADY_SECONDS (default
# 600; 30 with --quick) of steady weights.
# kafka: Kafka members (a connection each) on groupcoordd's Kafka port:
# 1,000 form one group with kafka.group.initial.rebalance.delay.ms 0, then
# one member leaves groups of 10 and 1,000 at heartbeat intervals of 1 s
# and 3 s (three times each); then 1,000 form one group on a fresh server
# with the delay at its default, 3000 ms.
# kip848: real KIP-848 consumers (librdkafka 2.15.1, scripts/librdkafka.sh,
# under Debian's python3-confluent-kafka; group.protocol=consumer), a
# process each, on groupcoordd's Kafka port (bench/kip848.py): 10 on a topic
# of 100 partitions grown to 1,000 by `groupctl topic grow`, 5 rounds, at
# heartbeat intervals of 1 s and 5 s; then, at 1 s, an 11th joins 10 stable
# ones 20 times (closing after each), timing each moved partition's unowned
# span by the callbacks; a partition held twice fails it. About 6 minutes.
# rebalance: groupcoord's own asyncio consumers (bench/rebalance.py, one
# process), 100 in a group on a topic of 400 partitions, with held heartbeats
# and without them, at heartbeat intervals of 1 s and 10 s: 5 joins (each
# then leaving), the topic grown by a quarter, a rolling restart of 20: the
# time each moved partition is unowned (p50 / p99 / max), and the server's
# CPU and heartbeats per member per second over 30 s of steady. Then the
# same phases with the bench's own members (groupcoord-bench rebalance), in
# groups of 100 and 10,000, held (Heartbeat versions 2 and 1) and not, at
# 1 s and 10 s (REBALANCE_PYTHON=0: these only).
# peers: the same membership workload on groupcoordd, on the ZooKeeper
# ensemble alone (a session, an ephemeral znode and a children watch per
# member) and on a three-node etcd cluster (scripts/etcd-cluster.sh),
# members in groups of 100 with a 10 s session or lease: join, steady
# (60 s), churn (1% leave and 1% join per 10 s, for 60 s), crash (1%);
# PEERS_ROUNDS rounds (default 3; --quick: 1), in each every size of
# PEERS_SIZES (default "1000 10000"; --quick: "100 300" with 10 s phases), in each every
# system of PEERS_SYSTEMS, one after another, each on freshly started
# processes; then bench/peers_report.py's tables (median and range over the
# rounds). The result lines are kept in PEERS_RESULTS (default in the logs
# directory). About 16 minutes a round at the default sizes, 4 with --quick.
# --quick: every scenario at a fraction of its size and length (under three
# minutes in all on 2 cores), to check that they run; its figures are not
# the table's. Each scenario's time is logged.
# --pin: the generator and the ZooKeeper ensemble on CPU 0, the servers on
# the other cores.
# It builds groupcoordd, groupcoord-bench, groupcoord-echo and
# groupcoord-loop-echo in build-bench/ (with scripts/dev.sh's build type),
# starts its own three-node ZooKeeper ensemble on 127.0.0.1 (base port
# 23800: clients on 23801-23803), starts groupcoordd servers as each
# scenario needs them (fresh ones, so that memory figures start from an
# empty server), and stops everything it started on exit. Everything stays
# on 127.0.0.1; each scenario is bounded in time.
#
# Environment: BUILD_DIR (default build-bench), BUILD_TYPE (RelWithDebInfo),
# GROUPCOORD_BENCH_ZK_BASE_PORT (23800), JOBS (cores), BENCH_OUT (also write
# the table to this file), BENCH_NO_BUILD=1 (use the binaries already in
# BUILD_DIR), BENCH_REGISTER_VERSION (the RegisterConsumer version the
# big-group and big-partitions members speak; default 2, 1 to compare),
# BENCH_CLIENT_MEMBERS (big-group's client-mode group; default 3,000),
# PLACEMENT_STEADY_SECONDS (placement's steady phase; default 600),
# BENCH_NO_SETUP=1 (install nothing: by default what the build needs is
# installed by scripts/dev.sh setup before building, and the packages the
# chosen scenarios need, valgrind and etcd, from Debian's archive when
# missing).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build-bench}
base=${GROUPCOORD_BENCH_ZK_BASE_PORT:-23800}
jobs=${JOBS:-$(nproc)}
zk_session_ms=4000
register_version=${BENCH_REGISTER_VERSION:-2}
quick=
pin=
scenarios=()
for a in "$@"; do
  case "$a" in
    --quick) quick=1 ;;
    --pin) pin=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) scenarios+=("$a") ;;
  esac
done
all_scenarios=(throughput members instructions gate members-100k members-1conn scale join-storm big-group big-partitions assign direct failover fleet kafka peers kip848 rebalance)
chosen="${scenarios[*]:-}"
[ ${#scenarios[@]} -gt 0 ] || scenarios=("${all_scenarios[@]}")
# q FULL QUICK: the full run's value, or the quick run's.
q() { if [ -n "$quick" ]; then echo "$2"; else echo "$1"; fi; }
placement_steady=${PLACEMENT_STEADY_SECONDS:-$(q 600 30)}

log() { printf '\033[1m[bench]\033[0m %s\n' "$*" >&2; }

# What the chosen scenarios need from Debian's archive, installed when
# missing as scripts/dev.sh setup installs its packages.
if [ -z "${BENCH_NO_SETUP:-}" ]; then
  # The build's packages, as for the tests (a fresh machine has none).
  [ -n "${BENCH_NO_BUILD:-}" ] || "$root/scripts/dev.sh" setup >&2
  needs=()
  for s in "${scenarios[@]}"; do
    case "$s" in
      instructions|gate) needs+=(valgrind) ;;
      peers) needs+=(etcd-server etcd-client) ;;
    esac
  done
  missing=()
  for p in $(printf '%s\n' "${needs[@]}" | sort -u); do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
    log "installing: ${missing[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  fi
fi

started=()
wrap=()  # what the servers run under (callgrind in `instructions`)
server_args=()  # more options for the next start_server (authentication in `instructions`)
work=$(mktemp -d /tmp/groupcoord-bench.XXXXXX)
ensemble=("$root/scripts/zk-ensemble.sh" --base-port "$base" --tick-ms 500)
# peers: an ensemble of its own, on the same ports, started afresh (empty
# data directories) for each run of a system on ZooKeeper.
peers_ensemble=("$root/scripts/zk-ensemble.sh" --base-port "$base" --tick-ms 500 --dir "$work/zk-peers")
etcd_base=${ETCD_BASE_PORT:-28300}
etcd_cluster=("$root/scripts/etcd-cluster.sh" --base-port "$etcd_base" --dir "$work/etcd-peers")
etcd_started=
cleanup() {
  local pid
  for pid in "${started[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${started[@]}"; do wait "$pid" 2>/dev/null || true; done
  "${ensemble[@]}" stop >/dev/null 2>&1 || true
  "${peers_ensemble[@]}" stop >/dev/null 2>&1 || true
  [ -z "$etcd_started" ] || "${etcd_cluster[@]}" stop >/dev/null 2>&1 || true
}
trap cleanup EXIT

t_start=$(date +%s)
if [ -n "${BENCH_NO_BUILD:-}" ]; then
  log "using the binaries already in $build_dir"
else
log "building in $build_dir (${BUILD_TYPE:-RelWithDebInfo}, as scripts/dev.sh builds)"
cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" -DGROUPCOORD_BUILD_TESTS=OFF \
  ${CMAKE_ARGS:-} > "$work/configure.log" 2>&1 || { cat "$work/configure.log" >&2; exit 1; }
cmake --build "$build_dir" -j "$jobs" --target groupcoordd groupcoord-bench groupcoord-echo groupcoord-loop-echo \
  groupcoord-gate-cost groupctl \
  > "$work/build.log" 2>&1 ||
  { tail -50 "$work/build.log" >&2; exit 1; }
fi
bench="$build_dir/bench/groupcoord-bench"
gate_bin="$build_dir/bench/groupcoord-gate-cost"
server_bin="$build_dir/server/groupcoordd"
# --pin: the generator and the ZooKeeper ensemble on the first core, every
# server on the others, so that they do not take turns on one core (the
# table says which was used). Pinning is the way to keep them apart here:
# niceness is not, because each ensemble node runs in a session of its own
# (setsid) and where the kernel groups tasks by session (autogroup,
# /proc/sys/kernel/sched_autogroup_enabled) every session gets an equal
# share of a core whatever its tasks' niceness.
gen_cpu=() srv_cpu=() zk_cpu=()
if [ -n "$pin" ] && [ "$(nproc)" -ge 2 ]; then
  gen_cpu=(taskset -c 0)
  zk_cpu=(taskset -c 0)
  srv_cpu=(taskset -c "1-$(($(nproc) - 1))")
  pinning="generator and ZooKeeper on CPU 0, servers on CPUs 1-$(($(nproc) - 1))"
else
  pinning="not pinned (bench/run.sh --pin pins them)"
fi

# Thousands of client connections per process.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
[ "$(ulimit -n)" -ge 16384 ] || ulimit -n 65536 2>/dev/null || log "warning: open-file limit is $(ulimit -n)"

log "starting a ZooKeeper ensemble on 127.0.0.1:$((base + 1))-$((base + 3))"
"${zk_cpu[@]}" "${ensemble[@]}" start >&2
zk=$("${ensemble[@]}" connect)

# start_server ID [ZK_SESSION_MS] -> sets server_pid and server_port
start_server() {
  local id=$1 pf="$work/server$1.port" hf="$work/server$1.http" session=${2:-$zk_session_ms}
  rm -f "$pf" "$hf" "$work/server$1.kport"
  "${srv_cpu[@]}" "${wrap[@]}" "$server_bin" --zk-connect="$zk" --listen-address=127.0.0.1 --listen-port=0 --port-file="$pf" \
    --server-id="$id" --zk-session-timeout-ms="$session" --http-port=0 --http-port-file="$hf" \
    --log-file="$work/server$id.log" "${server_args[@]}" 2>>"$work/server$id.stderr" &
  server_pid=$!
  started+=("$server_pid")
  local i
  for i in $(seq 1 300); do
    [ -s "$pf" ] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/server$id.stderr" >&2; exit 1; }
    sleep 0.1
  done
  [ -s "$pf" ] || { log "groupcoordd $id did not start"; exit 1; }
  server_port=$(cat "$pf")
  for i in $(seq 1 50); do [ -s "$hf" ] && break; sleep 0.1; done
  server_http=$(cat "$hf" 2>/dev/null || echo 0)
}
# kafka_on ID [DELAY_MS]: the next start_server ID opens a Kafka port (any
# free one, written to $work/serverID.kport), with this initial rebalance
# delay (default: the server's own, 3000 ms).
kafka_on() {
  server_args=(--kafka-listen-port=0 --kafka-port-file="$work/server$1.kport")
  [ -z "${2:-}" ] || server_args+=(--kafka-group-initial-rebalance-delay-ms="$2")
}
# wait_kafka_port ID -> sets kafka_port (a server started after kafka_on ID)
wait_kafka_port() {
  local f="$work/server$1.kport"
  for _ in $(seq 1 100); do [ -s "$f" ] && break; sleep 0.1; done
  [ -s "$f" ] || { log "groupcoordd $1 wrote no Kafka port"; exit 1; }
  kafka_port=$(cat "$f")
}
# start_control BINARY NAME -> sets control_pid and control_port
start_control() {
  local pf="$work/$2.port"
  rm -f "$pf"
  "${srv_cpu[@]}" "${wrap[@]}" "$build_dir/bench/$1" --port-file="$pf" 2>>"$work/$2.log" &
  control_pid=$!
  started+=("$control_pid")
  for _ in $(seq 1 300); do [ -s "$pf" ] && break; sleep 0.1; done
  [ -s "$pf" ] || { log "$1 did not start"; exit 1; }
  control_port=$(cat "$pf")
}
# start_echo -> sets echo_pid and echo_port (the minimal echo) and
# loop_echo_pid and loop_echo_port (groupcoordd's own TCP server with a
# handler that does nothing)
start_echo() {
  start_control groupcoord-echo echo
  echo_pid=$control_pid echo_port=$control_port
  start_control groupcoord-loop-echo loop-echo
  loop_echo_pid=$control_pid loop_echo_port=$control_port
}
stop_echoes() {
  stop_server "$echo_pid"
  stop_server "$loop_echo_pid"
}
stop_server() {
  kill -TERM "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

table="$work/table.md"
peers_md="$work/peers.md"
run() {
  log "scenario: $*"
  "${gen_cpu[@]}" "$bench" "$@" --zk-base-port="$base" | tee -a "$table"
}
# It starts its servers itself, for each phase, with their logs in
# $work/placement-*.
run_placement() {
  run placement --server-bin="$server_bin" --work-dir="$work" --zk-session-ms=$zk_session_ms \
    --settle-ms=2000 --placement-interval-ms=3000 --steady-seconds="$placement_steady" \
    --max-members="$(q 5000 500)"
}

# peers_run SYSTEM SIZE ROUND: one run of the peers scenario on freshly
# started processes, its result line appended to $peers_results.
peers_run() {
  local system=$1 size=$2 round=$3 pids=() n pid ports=() rc=0
  log "peers: round $round, $size members, $system"
  case "$system" in
    groupcoord|zookeeper)
      "${peers_ensemble[@]}" stop >/dev/null 2>&1 || true
      rm -rf "$work/zk-peers"
      "${zk_cpu[@]}" "${peers_ensemble[@]}" start >&2
      for n in 1 2 3; do pids+=("zookeeper:$(cat "$work/zk-peers/node$n/pid")"); done
      ;;
    etcd)
      "${etcd_cluster[@]}" stop >/dev/null 2>&1 || true
      rm -rf "$work/etcd-peers"
      etcd_started=1
      "${etcd_cluster[@]}" start >&2
      for pid in $("${etcd_cluster[@]}" pids); do pids+=("etcd:$pid"); done
      ports=(--etcd-ports="$((etcd_base + 1)),$((etcd_base + 2)),$((etcd_base + 3))")
      ;;
  esac
  if [ "$system" = groupcoord ]; then
    # groupcoordd's ZooKeeper session at its default, 10 s.
    start_server 1 10000
    pids+=("groupcoordd:$server_pid")
    ports=(--ports="$server_port")
  fi
  "${gen_cpu[@]}" "$bench" peers --system="$system" --members="$size" --group-size=100 --ttl-seconds=10 \
    --steady-seconds="$peers_phase" --churn-seconds="$peers_phase" --round="$round" --zk-base-port="$base" \
    --pids="$(IFS=,; echo "${pids[*]}")" "${ports[@]}" >> "$peers_results" || rc=$?
  [ "$system" != groupcoord ] || stop_server "$server_pid"
  case "$system" in
    groupcoord|zookeeper) "${peers_ensemble[@]}" stop >/dev/null 2>&1 || true ;;
    etcd) "${etcd_cluster[@]}" stop >/dev/null 2>&1 || true ;;
  esac
  return $rc
}

for s in "${scenarios[@]}"; do
  s_start=$(date +%s)
  case "$s" in
    throughput)
      start_server 1
      start_echo
      run throughput --ports="$server_port" --echo-port="$echo_port" --loop-echo-port="$loop_echo_port" \
        --pids="$server_pid,$echo_pid,$loop_echo_pid" --seconds="$(q 2 1)" --pairs="$(q 5 1)"
      stop_echoes
      stop_server "$server_pid"
      ;;
    members)
      start_server 1
      start_echo
      run members --ports="$server_port" --pids="$server_pid" --echo-port="$echo_port" --echo-pid="$echo_pid" \
        --loop-echo-port="$loop_echo_port" --loop-echo-pid="$loop_echo_pid" --metrics-port="$server_http" \
        --members="$(q 10000 2000)" --conns="$(q 1000 200)" --groups="$(q 100 20)" \
        --rounds="$(q 5 2)" --seconds="$(q 4 1)" --idle-seconds="$(q 10 1)"
      stop_echoes
      stop_server "$server_pid"
      ;;
    members-100k)
      start_server 1
      start_echo
      run members --label="2b 100,000 members" --ports="$server_port" --pids="$server_pid" --metrics-port="$server_http" \
        --echo-port="$echo_port" --echo-pid="$echo_pid" \
        --members="$(q 100000 10000)" --conns="$(q 10000 1000)" --groups="$(q 1000 100)" --partitions=100 \
        --interval-ms="$(q 3000 1000)" --session-ms=10000 --settle-interval-ms=1000 \
        --seconds="$(q 60 2)" --idle-seconds="$(q 4 1)"
      stop_echoes
      stop_server "$server_pid"
      ;;
    members-1conn)
      start_server 1
      start_echo
      run members --label="2c one member per connection" --ports="$server_port" --pids="$server_pid" \
        --metrics-port="$server_http" \
        --echo-port="$echo_port" --echo-pid="$echo_pid" \
        --members="$(q 19000 2000)" --conns="$(q 19000 2000)" --groups="$(q 190 20)" --partitions=100 \
        --interval-ms="$(q 3000 1000)" --session-ms=10000 --settle-interval-ms=1000 \
        --seconds="$(q 30 2)" --idle-seconds="$(q 4 1)"
      stop_echoes
      stop_server "$server_pid"
      ;;
    scale)
      # Two shapes, each: join, 60 s of heartbeats, 1% leave and rejoin, 1%
      # of the connections killed and restarted; then the echoes at the
      # same rate for the CPU comparison.
      for shape in "100000 10000 1000 2d scale, ten members a connection" \
                   "19000 19000 190 2e scale, one member a connection"; do
        read -r s_members s_conns s_groups s_label <<<"$shape"
        [ -z "$quick" ] || { s_members=$((s_members / 10)); s_conns=$((s_conns / 10)); s_groups=$((s_groups / 10)); }
        # The server's ZooKeeper session at its default (10 s), as a
        # deployment of this size would run it.
        start_server 1 10000
        start_echo
        run members --label="$s_label" --ports="$server_port" --pids="$server_pid" --metrics-port="$server_http" \
          --echo-port="$echo_port" --echo-pid="$echo_pid" \
          --loop-echo-port="$loop_echo_port" --loop-echo-pid="$loop_echo_pid" \
          --members="$s_members" --conns="$s_conns" --groups="$s_groups" --partitions=100 \
          --interval-ms=3000 --session-ms=10000 --settle-interval-ms=3000 \
          --seconds="$(q 60 5)" --echo-seconds="$(q 20 3)" --idle-seconds="$(q 4 1)" \
          --churn-percent=1 --kill-percent=1
        stop_echoes
        stop_server "$server_pid"
      done
      ;;
    join-storm)
      start_server 1
      run join-storm --ports="$server_port" --members="$(q 1000 300)"
      stop_server "$server_pid"
      ;;
    big-group)
      start_server 1
      run big-group --ports="$server_port" --server-log="$work/server1.log" --metrics-port="$server_http" \
        --members="$(q 10000 500)" --partitions="$(q 10000 500)" --conns="$(q 1000 50)" --others="$(q 1000 100)" \
        --client-members="${BENCH_CLIENT_MEMBERS:-$(q 3000 300)}" --register-version="$register_version"
      stop_server "$server_pid"
      ;;
    assign)
      run assign --repeat="$(q 5 1)"
      ;;
    gate)
      command -v valgrind >/dev/null || { log "gate needs valgrind (apt-get install valgrind)"; exit 1; }
      # Instructions inside runHeartbeats() for N and 2N heartbeats; the
      # difference over N is one heartbeat's. No server, no ensemble.
      gate_n=$(q 20000 2000)
      for groups in 1 10; do
        declare -A gate_per=()
        for mode in none roles permissions; do
          ir=()
          for n in "$gate_n" "$((2 * gate_n))"; do
            out="$work/gate.$groups.$mode.$n"
            valgrind --tool=callgrind --toggle-collect='*runHeartbeats*' --callgrind-out-file="$out" \
              "$gate_bin" --mode "$mode" --heartbeats "$n" --groups "$groups" --rules 1000 >/dev/null 2>"$out.log" ||
              { cat "$out.log" >&2; exit 1; }
            ir+=("$(awk '/^totals:/ {print $2}' "$out")")
          done
          gate_per[$mode]=$(( (ir[1] - ir[0]) / gate_n ))
        done
        printf '| 9b gate | instructions per heartbeat into the handler, %s group(s) on one connection: no gate / the gate, roles only / the gate with 1,000 permission rules (callgrind; windows of %s and %s) | %s / %s / %s |  |\n' \
          "$groups" "$gate_n" "$((2 * gate_n))" "${gate_per[none]}" "${gate_per[roles]}" "${gate_per[permissions]}" |
          tee -a "$table"
        printf '| 9b gate | permissions minus roles only, %s group(s) on one connection (instructions per heartbeat) | %s |  |\n' \
          "$groups" "$(( gate_per[permissions] - gate_per[roles] ))" | tee -a "$table"
        # The I/O thread's fast path: the gate's admitsNow, then the handler.
        for mode in roles permissions; do
          ir=()
          for n in "$gate_n" "$((2 * gate_n))"; do
            out="$work/gate-now.$groups.$mode.$n"
            valgrind --tool=callgrind --toggle-collect='*runHeartbeats*' --callgrind-out-file="$out" \
              "$gate_bin" --mode "$mode" --path now --heartbeats "$n" --groups "$groups" --rules 1000 >/dev/null 2>"$out.log" ||
              { cat "$out.log" >&2; exit 1; }
            ir+=("$(awk '/^totals:/ {print $2}' "$out")")
          done
          gate_per[now_$mode]=$(( (ir[1] - ir[0]) / gate_n ))
        done
        printf '| 9b gate | instructions per heartbeat into the handler through the fast path'"'"'s check (AuthGate::admitsNow), %s group(s): roles only / 1,000 permission rules |  %s / %s |  |\n' \
          "$groups" "${gate_per[now_roles]}" "${gate_per[now_permissions]}" | tee -a "$table"
        unset gate_per
      done
      ;;
    big-partitions)
      start_server 1
      run big-group --label="7b one group of $(q 1,000 300) members, $(q 100,000 5,000) partitions" \
        --ports="$server_port" --server-log="$work/server1.log" --metrics-port="$server_http" \
        --members="$(q 1000 300)" --partitions="$(q 100000 5000)" --conns="$(q 100 30)" --others="$(q 1000 200)" \
        --client-mode=0 --register-version="$register_version"
      stop_server "$server_pid"
      ;;
    instructions)
      command -v valgrind >/dev/null || { log "instructions needs valgrind (apt-get install valgrind)"; exit 1; }
      # groupcoordd and the IoLoop echo: only what their I/O threads do per
      # loop turn (events, then flushing answers) is counted, not what other
      # threads do meanwhile (the ticker, ZooKeeper's client), whose cost
      # follows the clock and not the heartbeats. The minimal echo has no
      # other threads: all of it.
      cg=(valgrind --tool=callgrind --instr-atstart=no "--callgrind-out-file=$work/cg.%p")
      io=("--toggle-collect=*IoLoop::onEvent*" "--toggle-collect=*IoLoop::flushScheduled*")
      # groupcoordd with its Kafka port open: a Kafka member's heartbeat
      # is counted the same way, after the native one.
      wrap=("${cg[@]}" "${io[@]}")
      kafka_on 1 0
      start_server 1
      server_args=()
      wait_kafka_port 1
      start_control groupcoord-loop-echo loop-echo
      loop_echo_pid=$control_pid loop_echo_port=$control_port
      wrap=("${cg[@]}")
      start_control groupcoord-echo echo
      echo_pid=$control_pid echo_port=$control_port
      wrap=()
      run instructions --ports="$server_port,$loop_echo_port,$echo_port" \
        --pids="$server_pid,$loop_echo_pid,$echo_pid" --callgrind-bases="$work/cg,$work/cg,$work/cg" \
        --count="$(q 20000 2000)" --kafka-port="$kafka_port"
      stop_echoes
      stop_server "$server_pid"
      # The same with authentication on: every connection authenticates
      # first, and heartbeats keep the I/O thread's fast path, behind the
      # gate's check (AuthGate::admitsNow).
      secret=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
      printf '%s\n' "$secret" | "$build_dir/client/groupctl" auth hash --user bench --role member > "$work/credentials"
      wrap=("${cg[@]}" "${io[@]}")
      server_args=(--auth-credentials-file="$work/credentials")
      start_server 2
      server_args=()
      wrap=()
      run instructions --ports="$server_port" --pids="$server_pid" --callgrind-bases="$work/cg" \
        --labels="groupcoordd with authentication" --user=bench --secret="$secret" --count="$(q 20000 2000)"
      stop_server "$server_pid"
      ;;
    direct)
      start_server 1
      sleep 2  # the new server watches the groups earlier scenarios left; let that settle first
      run direct --ports="$server_port" --members=100 --steady-seconds="$(q 10 2)"
      [ -n "$quick" ] || run direct --ports="$server_port" --members=1000
      stop_server "$server_pid"
      ;;
    failover)
      start_server 1
      p1=$server_port pid1=$server_pid
      start_server 2
      p2=$server_port pid2=$server_pid
      run failover --ports="$p1,$p2" --pids="$pid1,$pid2" --zk-session-ms=$zk_session_ms
      stop_server "$pid1"
      stop_server "$pid2"
      ;;
    fleet)
      # It starts its servers itself (it restarts them), with their logs in $work.
      run fleet --server-bin="$server_bin" --work-dir="$work" --zk-session-ms=$zk_session_ms \
        --members="$(q 30000 900)" --groups="$(q 300 9)" --restarts="$(q 3 1)"
      run_placement
      ;;
    placement)
      run_placement
      ;;
    kafka)
      # The forming and the leaves with no initial rebalance delay; then a
      # fresh server at the default delay, for the forming alone.
      for delay in 0 3000; do
        kafka_on 1 "$delay"
        start_server 1
        server_args=()
        wait_kafka_port 1
        leaves=(--leave-sizes=)
        [ "$delay" != 0 ] || leaves=(--leave-sizes="10,$(q 1000 100)" --intervals-ms=1000,3000 --rounds="$(q 3 1)")
        run kafka --kafka-port="$kafka_port" --members="$(q 1000 100)" --delay-ms="$delay" "${leaves[@]}"
        stop_server "$server_pid"
      done
      ;;
    kip848)
      # Real consumers: librdkafka 2.15.1 (built once per machine and cached)
      # under Debian's python3-confluent-kafka, a process each, driven by
      # bench/kip848.py; the server sets their heartbeat interval.
      rdkafka_lib=$("$root/scripts/librdkafka.sh" path)
      for hb in 1000 5000; do
        kafka_on 1 0
        server_args+=(--kafka-group-consumer-heartbeat-interval-ms="$hb")
        start_server 1
        server_args=()
        wait_kafka_port 1
        phases=growth
        [ "$hb" != 1000 ] || phases=growth,join
        log "scenario: kip848, heartbeat interval $hb ms ($phases)"
        # Every wait in the driver is bounded, the whole of it by --deadline-s;
        # timeout is the last resort (its members close when it is gone).
        LD_LIBRARY_PATH="$rdkafka_lib" "${gen_cpu[@]}" timeout --kill-after=10 420 /usr/bin/python3 "$root/bench/kip848.py" \
          --bootstrap="127.0.0.1:$kafka_port" --zookeeper="$zk" --groupctl="$build_dir/client/groupctl" \
          --heartbeat-ms="$hb" --phases="$phases" --rounds="$(q 5 1)" --joins="$(q 20 2)" --deadline-s=400 \
          --events-log="$work/kip848-hb$hb.events" --member-stderr="$work/kip848-hb$hb.members.log" |
          tee -a "$table" || { kip848_failed=1; log "kip848 at $hb ms FAILED (server log $work/server1.log, member lines $work/kip848-hb$hb.events)"; }
        stop_server "$server_pid"
      done
      ;;
    rebalance)
      # Planned rebalances by groupcoord's asyncio consumers (bench/rebalance.py,
      # one process): the time each moved partition is unowned, with held
      # heartbeats (the default) and without (heartbeat.max.wait.ms=0, every
      # heartbeat answered at once as before Heartbeat version 1), at 1 s and
      # 10 s intervals; then the server's CPU per member in a steady window.
      rebalance_failed=
      # REBALANCE_PYTHON=0: the bench's members only.
      for hb in $([ "${REBALANCE_PYTHON:-1}" = 0 ] || echo 1000 10000); do
        for held in held not-held; do
          [ "$held" = held ] || server_args=(--heartbeat-max-wait-ms=0)
          start_server 1
          server_args=()
          log "scenario: rebalance, $held, heartbeat interval $hb ms"
          "${gen_cpu[@]}" timeout --kill-after=10 1800 python3 "$root/bench/rebalance.py" \
            --bootstrap="127.0.0.1:$server_port" --zookeeper="$zk" --groupctl="$build_dir/client/groupctl" \
            --interval-ms="$hb" --members="$(q 100 20)" --joins="$(q 5 2)" --restarts="$(q 20 4)" \
            --steady-s="$(q 30 10)" --server-pid="$server_pid" --metrics-url="http://127.0.0.1:$server_http/metrics" \
            --label="$held" | tee -a "$table" ||
            { rebalance_failed=1; log "rebalance, $held, $hb ms FAILED (server log $work/server1.log)"; }
          stop_server "$server_pid"
        done
      done
      # The same phases in groups of 100 and 10,000 of the bench's own
      # members (bench/RebalanceScenario.cpp: C++, a connection each, one
      # generator thread): held with Heartbeat version 2 (a move that leaves
      # a member as it was needs no registration), held with version 1 (every
      # move makes every member register), and not held (version 0 at the
      # interval, as clients before either), at 1 s and 10 s.
      for size in $(q "100 10000" "100 1000"); do
        for hb in 1000 10000; do
          for variant in 2 1 0; do
            start_server 1
            run rebalance --ports="$server_port" --members="$size" --interval-ms="$hb" \
              --held="$([ "$variant" = 0 ] && echo 0 || echo 1)" --heartbeat-version="$((variant > 0 ? variant : 1))" \
              --joins="$(q 3 1)" --restarts="$(q 5 2)" --steady-s="$(q 10 5)" --server-pid="$server_pid" \
              --metrics-port="$server_http" ||
              { rebalance_failed=1; log "rebalance (bench members), $size, $hb ms, heartbeat version $variant FAILED (server log $work/server1.log)"; }
            stop_server "$server_pid"
          done
        done
      done
      ;;
    peers)
      peers_results=${PEERS_RESULTS:-$work/peers-results.txt}
      peers_sizes=(${PEERS_SIZES:-$(q "1000 10000" "100 300")})
      peers_systems=(${PEERS_SYSTEMS:-groupcoord zookeeper etcd})
      peers_phase=$(q 60 10)
      # The ensemble the other scenarios used stops: every run here starts
      # what it measures afresh, and nothing else runs beside it.
      "${ensemble[@]}" stop >&2
      : >> "$peers_results"
      for round in $(seq 1 "${PEERS_ROUNDS:-$(q 3 1)}"); do
        for size in "${peers_sizes[@]}"; do
          for system in "${peers_systems[@]}"; do
            peers_run "$system" "$size" "$round" ||
              log "peers: $system, $size members, round $round failed (see above); going on"
          done
        done
      done
      "${ensemble[@]}" start >&2
      /usr/bin/python3 "$root/bench/peers_report.py" "$peers_results" > "$peers_md"
      log "peers: result lines in $peers_results"
      ;;
    *)
      log "unknown scenario '$s' (${all_scenarios[*]} placement)"
      exit 2
      ;;
  esac
  log "$s took $(( $(date +%s) - s_start )) s"
done

elapsed=$(( $(date +%s) - t_start ))
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
{
  echo
  echo "Measured $(date -u +%Y-%m-%d) on $(nproc) cores ($cpu), $(free -g | awk '/Mem:/ {print $2}') GiB," \
    "$(. /etc/os-release && echo "$PRETTY_NAME"), commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)," \
    "with \`bench/run.sh${quick:+ --quick}${pin:+ --pin}${chosen:+ $chosen}\` (${elapsed} s including the build). ZooKeeper: three nodes of Debian's package on loopback," \
    "tick 500 ms; groupcoordd's ZooKeeper session ${zk_session_ms} ms (10000 ms in scale and peers). Cores: ${pinning}."
  echo
  if [ -s "$table" ]; then
    echo "| scenario | figure | value | target |"
    echo "|---|---|---|---|"
    cat "$table"
  fi
  if [ -s "$peers_md" ]; then
    echo
    cat "$peers_md"
  fi
} > "$work/final.md"
echo
cat "$work/final.md"
[ -z "${BENCH_OUT:-}" ] || cp "$work/final.md" "$BENCH_OUT"
log "logs in $work"
[ -z "${kip848_failed:-}" ] || { log "kip848 FAILED (its rows say how)"; exit 1; }
[ -z "${rebalance_failed:-}" ] || { log "rebalance FAILED (see above)"; exit 1; }
