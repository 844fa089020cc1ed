#!/usr/bin/env bash
# Runs a three-node ZooKeeper ensemble from Debian's `zookeeper` package on
# 127.0.0.1, for development and for the integration and fault tests.
#
#   zk-ensemble.sh [--base-port P] [--tick-ms T] [--dir D] COMMAND [ARG]
#
# Commands:
#   start            start all three nodes (cleans up a run that crashed) and
#                    wait until all three serve and exactly one leads
#   stop             stop every node (SIGCONT first, then SIGTERM, then SIGKILL)
#   status           one line per node: id, port, pid, state, mode
#   connect          print the connect string
#   leader           print the id (1..3) of the node that leads
#   kill N           SIGKILL node N and wait until it is gone
#   restart N        start node N again and wait until it serves
#   pause N|all      SIGSTOP one node or all of them
#   resume N|all     SIGCONT one node or all of them
#   wait             wait until all three serve and one leads
#   mntr N           print node N's `mntr` output
#
# Ports: node N listens for clients on BASE+N, for quorum traffic on
# BASE+10+N and for leader election on BASE+20+N. Two ensembles with base
# ports at least 30 apart run side by side.
set -euo pipefail

base_port=${GROUPCOORD_ZK_BASE_PORT:-21800}
tick_ms=${GROUPCOORD_ZK_TICK_MS:-500}
dir=""

usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --base-port) base_port=$2; shift 2 ;;
    --tick-ms) tick_ms=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --*) echo "zk-ensemble: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { usage >&2; exit 2; }
cmd=$1; shift
dir=${dir:-/tmp/groupcoord-zk-$base_port}

client_port() { echo $((base_port + $1)); }
connect_string() { echo "127.0.0.1:$(client_port 1),127.0.0.1:$(client_port 2),127.0.0.1:$(client_port 3)"; }

# Sends a four-letter word to node N; prints the answer, empty if none.
fourlw() {
  local out
  out=$(printf '%s' "$2" | timeout 2 nc -N -w 2 127.0.0.1 "$(client_port "$1")" 2>/dev/null) || true
  printf '%s' "$out"
}

node_mode() {
  fourlw "$1" srvr | sed -n 's/^Mode: //p'
}

pid_of() {
  local f="$dir/node$1/pid"
  [ -f "$f" ] && cat "$f" || true
}

# A process killed with -9 can linger as a zombie; only a live, non-zombie
# java process counts as running.
is_running() {
  local pid=$1 state
  [ -n "$pid" ] || return 1
  state=$(ps -o stat= -p "$pid" 2>/dev/null | tr -d ' ') || return 1
  [ -n "$state" ] && [ "${state#Z}" = "$state" ]
}

write_config() {
  local n=$1 nd="$dir/node$1"
  mkdir -p "$nd/data" "$nd/logs"
  echo "$n" > "$nd/data/myid"
  cat > "$nd/zoo.cfg" <<EOF
tickTime=$tick_ms
initLimit=10
syncLimit=5
dataDir=$nd/data
clientPort=$(client_port "$n")
clientPortAddress=127.0.0.1
maxClientCnxns=0
4lw.commands.whitelist=*
admin.enableServer=false
standaloneEnabled=false
reconfigEnabled=false
autopurge.purgeInterval=0
server.1=127.0.0.1:$((base_port + 11)):$((base_port + 21))
server.2=127.0.0.1:$((base_port + 12)):$((base_port + 22))
server.3=127.0.0.1:$((base_port + 13)):$((base_port + 23))
EOF
  cat > "$nd/log4j.properties" <<EOF
log4j.rootLogger=INFO, FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File=$nd/logs/zookeeper.log
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} [myid:%X{myid}] %-5p [%t] %c{1}@%L - %m%n
EOF
}

start_node() {
  local n=$1 nd="$dir/node$1"
  if is_running "$(pid_of "$n")"; then return 0; fi
  local cp=/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar
  # setsid: the node outlives the shell that started it and gets no
  # terminal signals meant for a test run.
  setsid java -Xmx256m -XX:+UseSerialGC \
    -Dlog4j.configuration="file:$nd/log4j.properties" \
    -Dzookeeper.jmx.log4j.disable=true \
    -cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain "$nd/zoo.cfg" \
    > "$nd/logs/stdout.log" 2>&1 < /dev/null &
  echo $! > "$nd/pid"
}

kill_node() {
  local n=$1 pid
  pid=$(pid_of "$n")
  if is_running "$pid"; then
    kill -CONT "$pid" 2>/dev/null || true
    kill -9 "$pid" 2>/dev/null || true
  fi
  for _ in $(seq 1 100); do is_running "$pid" || break; sleep 0.05; done
  rm -f "$dir/node$n/pid"
}

stop_node() {
  local n=$1 pid
  pid=$(pid_of "$n")
  if is_running "$pid"; then
    kill -CONT "$pid" 2>/dev/null || true
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do is_running "$pid" || break; sleep 0.05; done
  fi
  kill_node "$n"
}

wait_serving() {
  # Waits until every node given serves and, over all three, exactly one leads.
  local deadline=$((SECONDS + ${GROUPCOORD_ZK_START_TIMEOUT:-60})) nodes=("$@")
  while [ $SECONDS -lt $deadline ]; do
    local ok=1 leaders=0 n m
    for n in "${nodes[@]}"; do
      m=$(node_mode "$n")
      case "$m" in
        leader) leaders=$((leaders + 1)) ;;
        follower) ;;
        *) ok=0 ;;
      esac
    done
    if [ $ok = 1 ]; then
      # count leaders among all nodes, not only the ones waited for
      leaders=0
      for n in 1 2 3; do [ "$(node_mode "$n")" = leader ] && leaders=$((leaders + 1)); done
      [ $leaders = 1 ] && return 0
    fi
    sleep 0.2
  done
  echo "zk-ensemble: nodes ${nodes[*]} did not serve within the timeout; logs in $dir/node*/logs" >&2
  return 1
}

parse_node() {
  case "$1" in
    1|2|3) echo "$1" ;;
    *) echo "zk-ensemble: node must be 1, 2 or 3, not '$1'" >&2; exit 2 ;;
  esac
}

case "$cmd" in
  start)
    # A run that crashed left pid files and data behind: end its nodes, wipe it.
    for n in 1 2 3; do kill_node "$n"; done
    rm -rf "$dir"
    mkdir -p "$dir"
    for n in 1 2 3; do write_config "$n"; done
    for n in 1 2 3; do start_node "$n"; done
    wait_serving 1 2 3
    echo "ZooKeeper ensemble serving at $(connect_string) (tick ${tick_ms} ms, leader node $(bash "$0" --base-port "$base_port" --dir "$dir" leader))"
    ;;
  stop)
    for n in 1 2 3; do stop_node "$n"; done
    ;;
  status)
    for n in 1 2 3; do
      pid=$(pid_of "$n"); state=stopped; mode=-
      if is_running "$pid"; then
        state=$(ps -o stat= -p "$pid" | tr -d ' ')
        case "$state" in T*) state=paused ;; *) state=running ;; esac
        mode=$(node_mode "$n"); mode=${mode:-not-serving}
      fi
      echo "node $n port $(client_port "$n") pid ${pid:--} $state $mode"
    done
    ;;
  connect)
    connect_string
    ;;
  leader)
    for n in 1 2 3; do
      if [ "$(node_mode "$n")" = leader ]; then echo "$n"; exit 0; fi
    done
    echo "zk-ensemble: no node leads" >&2; exit 1
    ;;
  kill)
    n=$(parse_node "${1:-}"); kill_node "$n"
    ;;
  restart)
    n=$(parse_node "${1:-}")
    [ -f "$dir/node$n/zoo.cfg" ] || { echo "zk-ensemble: no ensemble in $dir; run start first" >&2; exit 1; }
    start_node "$n"
    wait_serving "$n"
    ;;
  pause|resume)
    sig=STOP; [ "$cmd" = resume ] && sig=CONT
    target=${1:-}
    if [ "$target" = all ]; then nodes="1 2 3"; else nodes=$(parse_node "$target"); fi
    for n in $nodes; do
      pid=$(pid_of "$n")
      is_running "$pid" && kill -"$sig" "$pid"
    done
    ;;
  wait)
    wait_serving 1 2 3
    ;;
  mntr)
    n=$(parse_node "${1:-}"); fourlw "$n" mntr
    ;;
  *)
    echo "zk-ensemble: unknown command $cmd" >&2; usage >&2; exit 2
    ;;
esac
