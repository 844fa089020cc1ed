#!/usr/bin/env bash
# Runs a three-member etcd cluster from Debian's `etcd-server` package (3.4)
# on 127.0.0.1, for the `peers` benchmark (docs/benchmarks.md), which sets
# groupcoord beside etcd doing the same membership work.
#
#   etcd-cluster.sh [--base-port P] [--dir D] [--heartbeat-ms H]
#                   [--election-ms E] COMMAND
#
# Commands:
#   start            start all three members (ends and wipes a run that
#                    crashed) and wait until all three are healthy and one leads
#   stop             stop every member (SIGCONT first, then SIGTERM, then SIGKILL)
#   status           one line per member: number, client port, pid, state, role
#   endpoints        print the client endpoints, comma-separated
#   pids             print the members' process ids, one a line
#   raft-index       print the leader's raft index (entries in the replicated log)
#   wait             wait until all three are healthy and one leads
#
# --heartbeat-ms and --election-ms are etcd's raft heartbeat interval and
# election timeout (etcd's defaults, 100 and 1000); on a machine whose cores
# are busy a leader can miss its heartbeats and lose its lead under load.
#
# Ports: member N listens for clients on BASE+N and for its peers on
# BASE+10+N; the default base is 28300. Two clusters with base ports at least
# 20 apart run side by side. Data and logs go to /tmp/groupcoord-etcd-BASE
# (memberN/data, memberN/etcd.log); only processes this script started (their
# pids are in memberN/pid) are ever signalled.
set -euo pipefail

base_port=${GROUPCOORD_ETCD_BASE_PORT:-28300}
dir=""
heartbeat_ms=${GROUPCOORD_ETCD_HEARTBEAT_MS:-100}
election_ms=${GROUPCOORD_ETCD_ELECTION_MS:-1000}

usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --base-port) base_port=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --heartbeat-ms) heartbeat_ms=$2; shift 2 ;;
    --election-ms) election_ms=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --*) echo "etcd-cluster: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { usage >&2; exit 2; }
cmd=$1; shift
dir=${dir:-/tmp/groupcoord-etcd-$base_port}

client_port() { echo $((base_port + $1)); }
peer_port() { echo $((base_port + 10 + $1)); }
endpoint() { echo "http://127.0.0.1:$(client_port "$1")"; }
endpoints() { echo "$(endpoint 1),$(endpoint 2),$(endpoint 3)"; }
initial_cluster() {
  local n out=""
  for n in 1 2 3; do out="$out${out:+,}m$n=http://127.0.0.1:$(peer_port "$n")"; done
  echo "$out"
}

need_etcd() {
  command -v etcd > /dev/null && command -v etcdctl > /dev/null && return 0
  echo "etcd-cluster: needs etcd and etcdctl (apt-get install etcd-server etcd-client)" >&2
  exit 1
}

pid_of() {
  local f="$dir/member$1/pid"
  [ -f "$f" ] && cat "$f" || true
}

# A process killed with -9 can linger as a zombie; only a live, non-zombie
# process counts as running.
is_running() {
  local pid=$1 state
  [ -n "$pid" ] || return 1
  state=$(ps -o stat= -p "$pid" 2>/dev/null | tr -d ' ') || return 1
  [ -n "$state" ] && [ "${state#Z}" = "$state" ]
}

ctl() { ETCDCTL_API=3 etcdctl --command-timeout=2s --dial-timeout=1s "$@"; }

# `endpoint status -w json` of the given endpoints, as lines
# "endpoint member_id leader raft_index"; nothing for a member that does not answer.
status_lines() {
  ctl --endpoints="$1" endpoint status -w json 2>/dev/null | /usr/bin/python3 -c '
import json, sys
text = sys.stdin.read().strip()
for e in (json.loads(text) if text else []):
    s = e.get("Status", {})
    print(e.get("Endpoint"), s.get("header", {}).get("member_id", 0), s.get("leader", 0), s.get("raftIndex", 0))
' 2>/dev/null || true
}

# Waits until every member is healthy and all agree on one leader.
wait_healthy() {
  local deadline=$((SECONDS + ${GROUPCOORD_ETCD_START_TIMEOUT:-60}))
  while [ $SECONDS -lt $deadline ]; do
    if ctl --endpoints="$(endpoints)" endpoint health > /dev/null 2>&1; then
      local leaders
      leaders=$(status_lines "$(endpoints)" | awk '$3 != 0 { print $3 }' | sort -u)
      [ "$(status_lines "$(endpoints)" | wc -l)" = 3 ] && [ -n "$leaders" ] && [ "$(echo "$leaders" | wc -l)" = 1 ] && return 0
    fi
    sleep 0.2
  done
  echo "etcd-cluster: the members were not healthy within the timeout; logs in $dir/member*/etcd.log" >&2
  return 1
}

start_member() {
  local n=$1 md="$dir/member$1"
  if is_running "$(pid_of "$n")"; then return 0; fi
  mkdir -p "$md"
  # setsid: the member outlives the shell that started it and gets no
  # terminal signals meant for a benchmark run.
  setsid etcd --name "m$n" --data-dir "$md/data" \
    --listen-client-urls "$(endpoint "$n")" --advertise-client-urls "$(endpoint "$n")" \
    --listen-peer-urls "http://127.0.0.1:$(peer_port "$n")" \
    --initial-advertise-peer-urls "http://127.0.0.1:$(peer_port "$n")" \
    --initial-cluster "$(initial_cluster)" --initial-cluster-state new \
    --initial-cluster-token "groupcoord-etcd-$base_port" \
    --heartbeat-interval "$heartbeat_ms" --election-timeout "$election_ms" \
    --logger zap --log-outputs stderr \
    > "$md/etcd.log" 2>&1 < /dev/null &
  echo $! > "$md/pid"
}

stop_member() {
  local n=$1 pid
  pid=$(pid_of "$n")
  if is_running "$pid"; then
    kill -CONT "$pid" 2>/dev/null || true
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do is_running "$pid" || break; sleep 0.05; done
    if is_running "$pid"; then
      kill -9 "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do is_running "$pid" || break; sleep 0.05; done
    fi
  fi
  rm -f "$dir/member$n/pid"
}

case "$cmd" in
  start)
    need_etcd
    # A run that crashed left pid files and data behind: end its members, wipe it.
    for n in 1 2 3; do stop_member "$n"; done
    rm -rf "$dir"
    mkdir -p "$dir"
    for n in 1 2 3; do start_member "$n"; done
    wait_healthy
    echo "etcd cluster serving at $(endpoints) (heartbeat ${heartbeat_ms} ms, election timeout ${election_ms} ms)"
    ;;
  stop)
    for n in 1 2 3; do stop_member "$n"; done
    ;;
  status)
    need_etcd
    for n in 1 2 3; do
      pid=$(pid_of "$n"); state=stopped; role=-
      if is_running "$pid"; then
        state=$(ps -o stat= -p "$pid" | tr -d ' ')
        case "$state" in T*) state=paused ;; *) state=running ;; esac
        role=$(status_lines "$(endpoint "$n")" | awk '{ print ($2 == $3 ? "leader" : "follower") }')
        role=${role:-not-serving}
      fi
      echo "member $n port $(client_port "$n") pid ${pid:--} $state $role"
    done
    ;;
  endpoints)
    endpoints
    ;;
  pids)
    for n in 1 2 3; do
      pid=$(pid_of "$n")
      if is_running "$pid"; then echo "$pid"; fi
    done
    ;;
  raft-index)
    need_etcd
    index=$(status_lines "$(endpoints)" | awk '$2 == $3 && $2 != 0 { print $4; exit }')
    [ -n "$index" ] || { echo "etcd-cluster: no member leads" >&2; exit 1; }
    echo "$index"
    ;;
  wait)
    need_etcd
    wait_healthy
    ;;
  *)
    echo "etcd-cluster: unknown command $cmd" >&2; usage >&2; exit 2
    ;;
esac
