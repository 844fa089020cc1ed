#!/usr/bin/env bash
# Brings docker-compose.yml's deployment (a three-node ZooKeeper ensemble and
# two groupcoordd servers) up for real, uses it as a user would, takes servers
# and a ZooKeeper node away and back, and tears it all down again, checking
# that nothing is left. Made for machines that reach no image registry: the
# base images come from debootstrap and ZooKeeper from a local stand-in for
# the official image (packaging/zookeeper).
#
#   scripts/compose-test.sh [--help | --prepare]
#
# --prepare does only what needs no CPU to speak of, so that it can run
# beside a build (.ci/run does): the packages, the base images and the
# ZooKeeper stand-in image, with a daemon of its own if none runs, started
# with --iptables=false --bridge=none (it touches no firewall rule and makes
# no bridge; the stand-in is built with --network host) and stopped again.
#
# Run it as root from anywhere in the tree (it needs the Docker daemon, and
# apt-get and debootstrap when something is missing). It:
#   - installs what is missing with apt-get (docker.io, docker-compose,
#     debootstrap, curl, jq, iproute2), after an apt-get update;
#   - starts dockerd only if no daemon answers `docker info` (its log in the
#     work directory) and stops that daemon, and no other, when it exits;
#   - makes debian:bookworm-slim and debian:bookworm with debootstrap
#     (minbase) and `docker import`, unless both exist;
#   - builds the ZooKeeper stand-in as groupcoord/zookeeper-standin:3.8
#     (seconds once its layers are cached) and the project image,
#     groupcoord/groupcoordd:local, once (`docker-compose build
#     groupcoordd-1`: about 10 minutes on 2 cores from cold);
#   - runs docker-compose.yml under its own project name (so a deployment
#     you run yourself is never touched) on the default ports, which must be
#     free: 7400, 7401, 7410, 7411, 9092, 9093, 2181, 2182, 2183;
#   - waits until all five services are healthy and runs the steps:
#       a  a topic and groups, created from inside a container; both servers
#          control some of them
#       b  consumers (groupcoord-watch) of a group of each server own every
#          partition
#       c  `groupctl describe` from the host and from inside each container
#       d  /api/groups/NAME and /health/ready over HTTP on both servers
#       i  ports published on 127.0.0.1 only; the servers' open-file limit
#          and their logs
#       e  `docker-compose stop` of server 2: its groups and consumers move
#          to server 1; then it starts again
#       f  `docker kill -s KILL` of server 2: the same, after the ZooKeeper
#          session timeout
#       g  the ZooKeeper leader stopped: both servers ready again, describe
#          works, consumers own everything; then it starts again
#       k  the logs: ZooKeeper client errors at most once per 5 s while the
#          leader was away; server 2's process killed from the host (a
#          crash the restart policy answers) says its id is taken once and
#          is ready again; `groupctl topic create` against no ensemble fails
#          in a few lines; groupcoord-watch joins a group that exists
#       h  `down` without -v leaves no anonymous volume and `up` again keeps
#          the groups; `down -v` leaves no container, volume or network
#       j  packaging/groupcoord-external/docker-compose.yml: a project of
#          its own, ps and down without GROUPCOORD_ZK_CONNECT, and servers
#          that find no ensemble stay up, say so, and turn unhealthy; then,
#          with packaging/groupcoord-external/network.yml, the same file
#          against the bundled ensemble brought up alone (zk1 zk2 zk3): its
#          servers healthy and working, and nothing of either project left
#   - whatever happens, takes the project down with `down -v` when it exits.
# With the images built, a run takes about four and a half minutes.
#
# Output: `PASS <step>: <detail>` or `FAIL <step>: <detail>`, one line per
# step; `figure <what>: ...` lines with the failover timings; `phase <name>:
# S s` lines with how long each phase took; `-- ...` progress notes; and last
# `N passed, M failed`. Exit status: 0 when every step passed, 1 when a step
# failed, 2 when setup failed (nothing could be tested), 130 on interrupt.
#
# Time (tests/README.md, "Time in tests"): a step waits for a state by
# polling it, up to a deadline at least the bound the design gives plus the
# scheduling allowance, and ends the wait as soon as the state is there; how
# long something took is a figure, never a limit. A check that should hold
# already (describe, the HTTP API, readiness) is polled too: a busy machine,
# a handover or a ZooKeeper session being re-established can keep it away for
# a while, never for good.
#
# Environment:
#   GROUPCOORD_CT_PROJECT       compose project name (default groupcoord-ci-<pid>)
#   GROUPCOORD_ZOOKEEPER_IMAGE  the ZooKeeper image docker-compose.yml runs
#                               (default groupcoord/zookeeper-standin:3.8, built
#                               here from packaging/zookeeper; any other value
#                               must already be present locally)
#   GROUPCOORD_CT_IMAGE         the groupcoordd image the compose file names
#                               (default groupcoord/groupcoordd:local)
#   GROUPCOORD_CT_SKIP_BUILD    1: use GROUPCOORD_CT_IMAGE as it is instead of
#                               building it (it must exist)
#   GROUPCOORD_CT_CONSUMERS     where the consumers run: container (inside
#                               groupcoordd-1, `docker-compose exec -d`), host
#                               (build/client/groupcoord-watch), or auto
#                               (default: container if the image has
#                               groupcoord-watch, else host)
#   GROUPCOORD_CT_GROUPCTL      groupctl on the host (default
#                               build/client/groupctl; when missing, groupctl
#                               runs from the image with --network host)
#   GROUPCOORD_CT_WATCH         groupcoord-watch on the host (default
#                               build/client/groupcoord-watch)
#   GROUPCOORD_CT_WORKDIR       where logs go (default a new directory under
#                               /tmp, removed after a run where all passed)
#   GROUPCOORD_CT_DEBIAN_MIRROR debootstrap's mirror (default
#                               http://deb.debian.org/debian)
#   GROUPCOORD_CT_HEALTH_TIMEOUT    seconds to wait for healthy services (180)
#   GROUPCOORD_CT_FAILOVER_TIMEOUT  seconds to wait for groups, consumers and
#                               servers after a failure (90)
#   GROUPCOORD_CT_BUILD_TIMEOUT     seconds for the project image's build (3600)
#   GROUPCOORD_TEST_ALLOWANCE_MS    what a deadline derived from the design's
#                               bounds adds for scheduling, in milliseconds
#                               (20000; rounded up to whole seconds)
#   GROUPCOORD_CT_MIN_NOFILE    the open-file limit the servers must have
#                               (default 65536, or what the daemon can grant)
#   GROUPCOORD_CT_EXTRA_COMPOSE_FILE  one more compose file, given after
#                               docker-compose.yml (-f), to adapt the deployment
#                               to a machine. Without it, where the daemon runs
#                               under a hard open-file limit below the compose
#                               file's 65536 (it cannot grant more), one is made
#                               that gives the servers that limit and
#                               max.connections 1000 below it
# COMPOSE_PROJECT_NAME and COMPOSE_FILE are ignored (unset for the run).
set -euo pipefail

usage() { sed -n '2,/^set -euo pipefail$/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

prepare=0
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  --prepare) prepare=1 ;;
  "") ;;
  *) echo "compose-test: unknown argument $1" >&2; usage >&2; exit 2 ;;
esac

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
unset COMPOSE_PROJECT_NAME COMPOSE_FILE

# As docker-compose normalises it (the label on everything it makes).
project=$(printf '%s' "${GROUPCOORD_CT_PROJECT:-groupcoord-ci-$$}" | tr '[:upper:]' '[:lower:]' | tr -cd 'a-z0-9_-')
[ -n "$project" ] || { echo "compose-test: GROUPCOORD_CT_PROJECT has no usable character" >&2; exit 2; }
standin_image=groupcoord/zookeeper-standin:3.8
zk_image=${GROUPCOORD_ZOOKEEPER_IMAGE:-$standin_image}
export GROUPCOORD_ZOOKEEPER_IMAGE=$zk_image
gcd_image=${GROUPCOORD_CT_IMAGE:-groupcoord/groupcoordd:local}
skip_build=${GROUPCOORD_CT_SKIP_BUILD:-0}
consumers_mode=${GROUPCOORD_CT_CONSUMERS:-auto}
groupctl_bin=${GROUPCOORD_CT_GROUPCTL:-$root/build/client/groupctl}
watch_bin=${GROUPCOORD_CT_WATCH:-$root/build/client/groupcoord-watch}
mirror=${GROUPCOORD_CT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
health_timeout=${GROUPCOORD_CT_HEALTH_TIMEOUT:-180}
failover_timeout=${GROUPCOORD_CT_FAILOVER_TIMEOUT:-90}
build_timeout=${GROUPCOORD_CT_BUILD_TIMEOUT:-3600}
min_nofile=${GROUPCOORD_CT_MIN_NOFILE:-65536}
extra_compose=${GROUPCOORD_CT_EXTRA_COMPOSE_FILE:-}
compose_cmd=(docker-compose -p "$project" -f "$root/docker-compose.yml")
if [ -n "$extra_compose" ]; then compose_cmd+=(-f "$extra_compose"); fi

if [ -n "${GROUPCOORD_CT_WORKDIR:-}" ]; then
  workdir=$GROUPCOORD_CT_WORKDIR
  keep_workdir=1
  mkdir -p "$workdir"
else
  workdir=$(mktemp -d /tmp/groupcoord-compose-test.XXXXXX)
  keep_workdir=0
fi

services=(zk1 zk2 zk3 groupcoordd-1 groupcoordd-2)
ports=(7400 7401 7410 7411 9092 9093 2181 2182 2183)
zk_internal=zk1:2181,zk2:2181,zk3:2181
host_bootstrap=127.0.0.1:7400,127.0.0.1:7410
topic=demo
partitions=6
watch_seconds=1800   # the consumers' lifetime; the run ends long before

# Time: the scheduling allowance, and the design's bounds the waits rest on
# (docs/design.md), as the deployment runs: groupcoordd's defaults, since
# docker-compose.groupcoordd.yml sets none of them.
allowance_ms=${GROUPCOORD_TEST_ALLOWANCE_MS:-20000}
case "$allowance_ms" in ''|*[!0-9]*) allowance_ms=20000 ;; esac
allowance_s=$(((10#$allowance_ms + 999) / 1000))
zk_session_s=10          # zk.session.timeout.ms
claim_fallback_s=3       # a group without a controller is claimed by any server after this
join_window_max_s=3      # group.join.window.max.ms: the longest a join waits in the batch
handover_settle_s=10     # handover.settle.ms: a server is nobody's preferred one until live this long
placement_interval_s=30  # placement.interval.ms: handover rounds of a server over its bound
# A group goes unanswered at most until its controller's ZooKeeper session
# has ended and another server has claimed it.
unanswered_s=$((zk_session_s + claim_fallback_s))

# State the exit trap and the steps share.
started_dockerd_pid=""
rootfs_dir=""
compose_up=0
ext_up=0            # the external file's project is up (step j)
ext_net_up=0        # ... with network.yml, on this project's network (step j)
zk_stop_from=""     # when step g stopped the ZooKeeper leader and when all
zk_stop_until=""    # was healthy again (seconds since the epoch)
setup_failed=""
passed=0
failed=0
watch_pids=()
leaked_volumes=()   # anonymous volumes of this project's containers, left by `down` without -v
groups_created=()
watched=()          # groups with consumers
watched_s1=""       # a watched group controlled by server 1, and one by server 2
watched_s2=""
consumers_where=""
declare -A cids=()
detail=""
out=""
err=""
rc=0

# ---------------------------------------------------------------------------
# Helpers

now() { date +%s.%N; }
# design_bound SECONDS: a bound the design gives, plus the scheduling allowance.
design_bound() { echo $(($1 + allowance_s)); }

# until_within SECONDS CMD...: runs CMD, once a second, until it succeeds or
# SECONDS have passed (it runs once more after the last sleep); the status is
# CMD's last. For a state that should hold already but that a busy machine, a
# handover or a ZooKeeper session being re-established can keep away a while.
until_within() {
  local deadline=$(($(date +%s) + $1))
  shift
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 1
  done
}
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
note() { echo "-- $*"; }
phase() { echo "phase $1: $(since "$2") s"; }
oneline() { printf '%s' "$*" | tr '\n\r\t' '   ' | sed 's/  */ /g; s/^ //; s/ $//' | cut -c1-300; }

# capture CMD...: its standard output in $out, a line of its standard error
# in $err, its status in $rc. Never fails itself.
capture() {
  local ef="$workdir/capture.err"
  if out=$("$@" 2>"$ef"); then rc=0; else rc=$?; fi
  err=$(oneline "$(cat "$ef" 2>/dev/null)")
  return 0
}

compose() { "${compose_cmd[@]}" "$@"; }

# A command inside a running service's container (no terminal, no stdin).
cexec() {
  local svc=$1
  shift
  timeout 30 "${compose_cmd[@]}" exec -T "$svc" "$@" </dev/null
}

refresh_cids() {
  local s
  for s in "${services[@]}"; do cids[$s]=$(compose ps -q "$s" 2>/dev/null || true); done
}

state_of() {
  local c=${cids[$1]:-}
  [ -n "$c" ] || { echo missing; return 0; }
  docker inspect -f '{{if not .State.Running}}{{.State.Status}}{{else if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}' "$c" 2>/dev/null ||
    echo missing
}

# wait_healthy SECONDS SERVICE...: 0 once all are healthy; else 1 with
# $not_healthy naming the others.
not_healthy=""
wait_healthy() {
  local limit=$1 s st
  shift
  local deadline=$(($(date +%s) + limit))
  while :; do
    not_healthy=""
    for s in "$@"; do
      st=$(state_of "$s")
      [ "$st" = healthy ] || not_healthy+=" $s=$st"
    done
    [ -z "$not_healthy" ] && return 0
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 1
  done
}

# The last log lines of every service that is not healthy.
show_unhealthy_logs() {
  local s st why
  for s in "${services[@]}"; do
    st=$(state_of "$s")
    if [ "$st" = missing ]; then
      echo "-- $s: no container"
    elif [ "$st" != healthy ]; then
      why=$(docker inspect -f '{{.State.Error}}' "${cids[$s]}" 2>/dev/null || true)
      echo "-- $s is $st${why:+ ($why)}; its last log lines:"
      timeout -k 5 30 "${compose_cmd[@]}" logs --no-color --tail 40 "$s" 2>&1 |
        sed 's/^/   /' || true
    fi
  done
}

# groupctl as a user on the host runs it.
hostctl() {
  if [ -x "$groupctl_bin" ]; then
    timeout 30 "$groupctl_bin" "$@"
  else
    timeout 45 docker run --rm --network host --entrypoint groupctl "$gcd_image" "$@"
  fi
}

# `groupctl list --output json` from the host (through BOOTSTRAP, default both servers).
list_json() { hostctl --bootstrap "${1:-$host_bootstrap}" --output json list; }

# groups_on JSON ID: the groups the list JSON shows controlled by server ID.
groups_on() {
  jq -r --argjson id "$2" '.groups[] | select(.controller != null and .controller.id == $id) | .name' <<<"$1"
}

# controller_in JSON GROUP: the id of GROUP's controller, "none" without one.
controller_in() {
  jq -r --arg g "$2" '[.groups[] | select(.name == $g)][0] | if . == null then "missing" else (.controller.id // "none") end' <<<"$1"
}

# owned_by GROUP SERVER: 0 when `describe` shows GROUP controlled by SERVER
# (any when empty) and every partition of it owned by a consumer.
owned_by() {
  local json
  json=$(hostctl --bootstrap "$host_bootstrap" --output json describe "$1" 2>/dev/null) || return 1
  jq -e --arg s "${2:-}" '
    ([.partitions[] | select(.owner != null)] | length) as $owned
    | $owned > 0 and $owned == (.partitions | length)
      and ($s == "" or (.controller != null and (.controller.id | tostring) == $s))' <<<"$json" >/dev/null
}

# http_get URL: the status code in $http_code, the body in $http_body.
http_code=""
http_body=""
http_get() {
  local bf="$workdir/http.body"
  http_code=$(curl -s -m 5 -o "$bf" -w '%{http_code}' "$1" 2>/dev/null) || true
  http_body=$(cat "$bf" 2>/dev/null || true)
  [ -n "$http_code" ] || http_code=000
}

port_busy() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }

check_ports() {
  local p busy=()
  for p in "${ports[@]}"; do if port_busy "$p"; then busy+=("$p"); fi; done
  if [ "${#busy[@]}" -gt 0 ]; then
    setup_fail "port(s) ${busy[*]} already in use (another deployment? \`ss -ltnp\` tells by whom); the test publishes on ${ports[*]}"
  fi
}

# Dangling volumes without a compose volume label: anonymous ones.
dangling_anonymous() {
  comm -23 <(docker volume ls -qf dangling=true | sort) \
    <(docker volume ls -qf dangling=true --filter label=com.docker.compose.volume | sort)
}

# The anonymous volumes mounted by this project's containers.
project_anonymous_volumes() {
  local c
  for c in $(docker ps -aq --filter "label=com.docker.compose.project=$project"); do
    docker inspect -f '{{range .Mounts}}{{if eq .Type "volume"}}{{.Name}}{{"\n"}}{{end}}{{end}}' "$c"
  done | sed '/^$/d' | sort -u | while read -r v; do
    [ -z "$(docker volume inspect -f '{{index .Labels "com.docker.compose.volume"}}' "$v" 2>/dev/null)" ] && echo "$v"
  done
  return 0
}

stop_consumers() {
  local p
  for p in "${watch_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${watch_pids[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  watch_pids=()
}

# ---------------------------------------------------------------------------
# Exit: consumers, the project, a debootstrap tree, and a daemon this run
# started, in that order.

cleanup() {
  local status=$?
  set +e
  # The teardown is bounded (every command under timeout -k) and runs to
  # its end: a second interrupt must not leave the project behind.
  trap - EXIT
  trap '' INT TERM
  stop_consumers
  # The external file's project first: with network.yml it is on this
  # project's network, which can go only once nothing is attached to it.
  if [ "$ext_up" = 1 ] || [ "$ext_net_up" = 1 ]; then
    local ext_files=()
    [ "$ext_net_up" = 1 ] && ext_files=(-f "$ext_net_file")
    note "taking project $ext_project down (down -v)"
    GROUPCOORD_ZK_CONNECT='' ext_cmd "${ext_files[@]}" down -v --remove-orphans >>"$workdir/down.log" 2>&1 ||
      echo "-- WARNING: docker-compose down -v of $ext_project failed; see $workdir/down.log"
  fi
  if [ "$compose_up" = 1 ]; then
    if [ -n "$setup_failed" ] || [ "$failed" -gt 0 ] || [ "$status" -ne 0 ]; then show_unhealthy_logs; fi
    timeout -k 5 60 "${compose_cmd[@]}" logs --no-color >"$workdir/compose.log" 2>&1
    note "taking project $project down (down -v)"
    timeout -k 5 180 "${compose_cmd[@]}" down -v --remove-orphans >>"$workdir/down.log" 2>&1 ||
      echo "-- WARNING: docker-compose down -v failed; see $workdir/down.log"
  fi
  if [ "${#leaked_volumes[@]}" -gt 0 ]; then docker volume rm "${leaked_volumes[@]}" >/dev/null 2>&1; fi
  if [ -n "$rootfs_dir" ] && [ -d "$rootfs_dir" ]; then
    grep -F " $rootfs_dir/" /proc/mounts | awk '{ print $2 }' | sort -r | xargs -r umount -l 2>/dev/null
    rm -rf --one-file-system "$rootfs_dir"
  fi
  if [ -n "$started_dockerd_pid" ]; then
    note "stopping the dockerd this run started (pid $started_dockerd_pid)"
    kill -TERM "$started_dockerd_pid" 2>/dev/null
    for _ in $(seq 1 150); do kill -0 "$started_dockerd_pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$started_dockerd_pid" 2>/dev/null
    wait "$started_dockerd_pid" 2>/dev/null
  fi
  if [ "$status" -eq 0 ] && [ "$keep_workdir" = 0 ]; then
    rm -rf "$workdir"
  else
    echo "-- logs in $workdir"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

setup_fail() {
  setup_failed=$1
  echo "SETUP FAILED: $1"
  echo "$passed passed, $failed failed"
  exit 2
}

# ---------------------------------------------------------------------------
# Setup

t_all=$(now)
t=$(now)
missing=()
{ command -v docker && command -v dockerd; } >/dev/null || missing+=(docker.io)
command -v docker-compose >/dev/null || missing+=(docker-compose)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v curl >/dev/null || missing+=(curl)
command -v jq >/dev/null || missing+=(jq)
command -v ss >/dev/null || missing+=(iproute2)
if [ "${#missing[@]}" -gt 0 ]; then
  [ "$(id -u)" = 0 ] || setup_fail "missing ${missing[*]}, and installing needs root"
  note "installing ${missing[*]}"
  apt-get update >"$workdir/apt.log" 2>&1 || setup_fail "apt-get update failed (see $workdir/apt.log)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}" >>"$workdir/apt.log" 2>&1 ||
    setup_fail "apt-get install ${missing[*]} failed (see $workdir/apt.log)"
fi
phase tools "$t"

t=$(now)
if ! timeout 20 docker info >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || setup_fail "no Docker daemon answers, and starting one needs root"
  note "no Docker daemon answers; starting dockerd (log: $workdir/dockerd.log)"
  daemon_flags=()
  if [ "$prepare" = 1 ]; then daemon_flags=(--iptables=false --bridge=none); fi
  dockerd "${daemon_flags[@]}" >"$workdir/dockerd.log" 2>&1 &
  started_dockerd_pid=$!
  for _ in $(seq 1 60); do
    timeout 5 docker info >/dev/null 2>&1 && break
    kill -0 "$started_dockerd_pid" 2>/dev/null || setup_fail "dockerd exited: $(tail -n 3 "$workdir/dockerd.log" | tr '\n' ' ')"
    sleep 0.5
  done
  timeout 5 docker info >/dev/null 2>&1 || setup_fail "dockerd did not answer within 30 s"
fi
phase daemon "$t"
# The ports now (and again just before `up`): no point in building for a run
# that cannot start.
if [ "$prepare" = 0 ]; then check_ports; fi

t=$(now)
if ! docker image inspect debian:bookworm-slim >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || setup_fail "debootstrap needs root"
  rootfs_dir="$workdir/rootfs"
  note "debootstrap --variant=minbase bookworm from $mirror (about a minute)"
  timeout 900 debootstrap --variant=minbase bookworm "$rootfs_dir" "$mirror" >"$workdir/debootstrap.log" 2>&1 ||
    setup_fail "debootstrap failed: $(tail -n 3 "$workdir/debootstrap.log" | tr '\n' ' ')"
  tar -C "$rootfs_dir" -c . | docker import - debian:bookworm-slim >/dev/null ||
    setup_fail "docker import of the debootstrap tree failed"
  rm -rf --one-file-system "$rootfs_dir"
  rootfs_dir=""
fi
if ! docker image inspect debian:bookworm >/dev/null 2>&1; then
  docker tag debian:bookworm-slim debian:bookworm
fi
phase base-images "$t"

t=$(now)
if [ "$zk_image" = "$standin_image" ]; then
  note "building the ZooKeeper stand-in $standin_image"
  build_net=()
  if [ "$prepare" = 1 ]; then build_net=(--network host); fi
  timeout 1800 docker build "${build_net[@]}" -t "$standin_image" "$root/packaging/zookeeper" \
    >"$workdir/zookeeper-build.log" 2>&1 ||
    setup_fail "building $standin_image failed: $(tail -n 5 "$workdir/zookeeper-build.log" | tr '\n' ' ')"
elif ! docker image inspect "$zk_image" >/dev/null 2>&1; then
  setup_fail "GROUPCOORD_ZOOKEEPER_IMAGE=$zk_image is not present locally (nothing can be pulled)"
fi
# docker-compose.yml must take its ZooKeeper image from GROUPCOORD_ZOOKEEPER_IMAGE.
capture compose config
[ "$rc" = 0 ] || setup_fail "docker-compose config failed: $err"
configured_zk=$(awk '/^  zk1:$/ { f = 1; next } f && /^  [^ ]/ { f = 0 } f && /^    image:/ { print $2; exit }' <<<"$out")
if [ "$configured_zk" != "$zk_image" ]; then
  docker image inspect "$configured_zk" >/dev/null 2>&1 ||
    setup_fail "docker-compose.yml runs ZooKeeper image '$configured_zk', not \$GROUPCOORD_ZOOKEEPER_IMAGE ($zk_image), and '$configured_zk' is not present locally"
  note "WARNING: docker-compose.yml ignores GROUPCOORD_ZOOKEEPER_IMAGE; running its '$configured_zk' (present locally)"
fi
phase zookeeper-image "$t"
if [ "$prepare" = 1 ]; then
  phase total "$t_all"
  note "prepared: packages, base images and $zk_image"
  exit 0
fi

t=$(now)
if [ "$skip_build" = 1 ]; then
  docker image inspect "$gcd_image" >/dev/null 2>&1 ||
    setup_fail "GROUPCOORD_CT_SKIP_BUILD=1 but $gcd_image does not exist"
  note "using $gcd_image as it is (GROUPCOORD_CT_SKIP_BUILD=1)"
else
  note "building $gcd_image (docker-compose build groupcoordd-1; several minutes on 2 cores)"
  timeout "$build_timeout" "${compose_cmd[@]}" build groupcoordd-1 \
    >"$workdir/groupcoordd-build.log" 2>&1 ||
    setup_fail "building the project image failed: $(tail -n 5 "$workdir/groupcoordd-build.log" | tr '\n' ' ')"
  docker image inspect "$gcd_image" >/dev/null 2>&1 ||
    setup_fail "the build made no $gcd_image (does the compose file still name that image?)"
fi
phase groupcoordd-image "$t"

# The compose file asks for 65,536 open files per server. A daemon that
# cannot grant that (it runs under a lower hard limit it cannot raise, as in
# an unprivileged container) refuses to start the servers; then they get
# what it can grant, and max.connections 1,000 below it, so that the
# server's own check of its limit still has to pass.
daemon_nofile=$(awk '/^Max open files/ {print $5}' "/proc/$(pgrep -xo dockerd)/limits" 2>/dev/null || true)
if [ -z "$extra_compose" ] && [[ "$daemon_nofile" =~ ^[0-9]+$ ]] && [ "$daemon_nofile" -lt 65536 ]; then
  extra_compose=$workdir/nofile-override.yml
  limit_connections=$((daemon_nofile - 1000))
  {
    echo "# Made by scripts/compose-test.sh: the daemon grants at most $daemon_nofile open files."
    echo "services:"
    for svc in groupcoordd-1 groupcoordd-2; do
      echo "  $svc:"
      echo "    ulimits: {nofile: {soft: $daemon_nofile, hard: $daemon_nofile}}"
      echo "    environment: {GROUPCOORDD_MAX_CONNECTIONS: \"$limit_connections\"}"
    done
  } >"$extra_compose"
  compose_cmd+=(-f "$extra_compose")
  min_nofile=${GROUPCOORD_CT_MIN_NOFILE:-$daemon_nofile}
  note "the Docker daemon grants at most $daemon_nofile open files (hard limit), below the compose file's 65536: the servers run with $daemon_nofile and max.connections $limit_connections ($extra_compose)"
fi

check_ports
if [ -n "$(docker ps -aq --filter "label=com.docker.compose.project=$project")" ]; then
  setup_fail "containers of a project named $project exist already; set GROUPCOORD_CT_PROJECT to another name"
fi
dangling_before=$(dangling_anonymous)
n_dangling_before=$(sed '/^$/d' <<<"$dangling_before" | wc -l)

t=$(now)
note "docker-compose -p $project up -d (ZooKeeper image $zk_image)"
compose_up=1
if ! timeout 300 "${compose_cmd[@]}" up -d --no-build >"$workdir/up.log" 2>&1; then
  refresh_cids
  hint=""
  if grep -q 'rlimit type 7' "$workdir/up.log"; then
    hint=" (the compose file's ulimits.nofile is more than this machine grants: containers here inherit a hard open-file limit of $(ulimit -Hn), which they cannot raise; GROUPCOORD_CT_EXTRA_COMPOSE_FILE can lower it)"
  fi
  setup_fail "docker-compose up -d failed: $(grep -E 'ERROR|rror' "$workdir/up.log" | tail -n 2 | tr '\n' ' ')$hint"
fi
refresh_cids
wait_healthy "$health_timeout" "${services[@]}" ||
  setup_fail "not healthy within ${health_timeout} s:$not_healthy"
phase up-healthy "$t"

# ---------------------------------------------------------------------------
# Steps. Each returns 0 (pass) or 1 (fail) with $detail set; they run in an
# `if`, so a failing command inside one does not end the run.

run_step() {
  local name=$1 fn=$2 t0
  detail=""
  t0=$(now)
  if "$fn"; then
    detail=${detail%;}
    passed=$((passed + 1))
    echo "PASS $name: $detail [$(since "$t0") s]"
  else
    detail=${detail%;}
    failed=$((failed + 1))
    echo "FAIL $name: $detail [$(since "$t0") s]"
  fi
}

# a: a topic and groups, made from inside groupcoordd-1.
step_create() {
  local i g id json
  capture cexec groupcoordd-1 groupctl topic create "$topic" --partitions "$partitions" --zookeeper "$zk_internal"
  [ "$rc" = 0 ] || { detail="groupctl topic create in groupcoordd-1: exit $rc: $err $(oneline "$out")"; return 1; }
  # Groups settle on the servers by rendezvous hashing over their names (a
  # new group may first be claimed by the server that made it, then handed
  # over): eight of them land on both servers.
  for i in $(seq 1 8); do
    g=g$i
    capture cexec groupcoordd-1 groupctl --output json create "$g" --topics "$topic" --session-timeout 10s
    [ "$rc" = 0 ] || { detail="groupctl create $g in groupcoordd-1: exit $rc: $err $(oneline "$out")"; return 1; }
    groups_created+=("$g")
    printf '%s\n' "$out" >>"$workdir/create.log"
  done
  # What `servers` and `list` (asked inside the container) say: once the
  # servers have settled (handover.settle.ms), one over its bound hands groups
  # over in rounds at most placement.interval.ms apart.
  local settle s1="" s2="" none=""
  settle=$(design_bound $((handover_settle_s + placement_interval_s)))
  local deadline=$(($(date +%s) + settle))
  while :; do
    capture cexec groupcoordd-1 groupctl --output json servers
    if [ "$rc" = 0 ]; then
      json=$out
      s1=$(jq -r '[.servers[] | select(.id == 1) | .groups[]] | join(" ")' <<<"$json" 2>/dev/null || true)
      s2=$(jq -r '[.servers[] | select(.id == 2) | .groups[]] | join(" ")' <<<"$json" 2>/dev/null || true)
      none=$(jq -r '.without_controller | join(" ")' <<<"$json" 2>/dev/null || true)
      capture cexec groupcoordd-1 groupctl --output json list
      local listed_ok=1
      for g in "${groups_created[@]}"; do
        id=$(controller_in "$out" "$g" 2>/dev/null || echo "?")
        case "$id" in 1|2) ;; *) listed_ok=0 ;; esac
      done
      if [ -n "$s1" ] && [ -n "$s2" ] && [ -z "$none" ] && [ "$listed_ok" = 1 ]; then
        detail="topic $topic ($partitions partitions); ${#groups_created[@]} groups; \`groupctl servers\`: server 1 controls $s1; server 2 controls $s2"
        return 0
      fi
    else
      json=""
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      if [ -z "$json" ]; then
        detail="groupctl servers in groupcoordd-1: exit $rc: $err"
      else
        detail="after $settle s: server 1 controls [${s1}], server 2 controls [${s2}], without controller [${none}]"
      fi
      return 1
    fi
    sleep 1
  done
}

# Starts consumers of GROUP (groupcoord-watch, which creates it as an
# ephemeral group) where $consumers_where says.
start_watch() {
  local g=$1
  if [ "$consumers_where" = container ]; then
    timeout 30 "${compose_cmd[@]}" exec -T -d groupcoordd-1 sh -c \
      "exec groupcoord-watch --bootstrap \"\${GROUPCTL_BOOTSTRAP:-127.0.0.1:7400}\" --group $g --topic $topic --consumers 3 --seconds $watch_seconds >/tmp/watch-$g.log 2>&1" \
      </dev/null >/dev/null 2>&1
  else
    "$watch_bin" --bootstrap "$host_bootstrap" --group "$g" --topic "$topic" --consumers 3 \
      --seconds "$watch_seconds" >"$workdir/watch-$g.log" 2>&1 </dev/null &
    watch_pids+=($!)
  fi
}

watch_log_tail() {
  if [ "$consumers_where" = container ]; then
    oneline "$(cexec groupcoordd-1 sh -c "tail -n 3 /tmp/watch-$1.log" 2>/dev/null)"
  else
    oneline "$(tail -n 3 "$workdir/watch-$1.log" 2>/dev/null)"
  fi
}

# b: consumers of a group of each server own every partition.
step_consumers() {
  case "$consumers_mode" in
    container|host) consumers_where=$consumers_mode ;;
    auto)
      if cexec groupcoordd-1 sh -c 'command -v groupcoord-watch' >/dev/null 2>&1; then
        consumers_where=container
      else
        consumers_where=host
      fi ;;
    *) detail="GROUPCOORD_CT_CONSUMERS must be auto, container or host, not $consumers_mode"; return 1 ;;
  esac
  if [ "$consumers_where" = container ]; then
    cexec groupcoordd-1 sh -c 'command -v groupcoord-watch' >/dev/null 2>&1 ||
      { detail="the image has no groupcoord-watch (\`command -v groupcoord-watch\` in groupcoordd-1 finds none)"; return 1; }
  elif [ ! -x "$watch_bin" ]; then
    detail="the image has no groupcoord-watch and there is no $watch_bin on the host"
    return 1
  fi
  local i g id json deadline
  for i in $(seq 1 8); do
    g=watch$i
    start_watch "$g"
    watched+=("$g")
    deadline=$(($(date +%s) + 20))
    id=missing
    while :; do
      json=$(list_json 2>/dev/null) && id=$(controller_in "$json" "$g")
      case "$id" in 1|2) break ;; esac
      [ "$(date +%s)" -lt "$deadline" ] || break
      sleep 0.5
    done
    case "$id" in
      1) [ -n "$watched_s1" ] || watched_s1=$g ;;
      2) [ -n "$watched_s2" ] || watched_s2=$g ;;
      *) detail="consumers ($consumers_where) of $g: the group has no controller after 20 s (controller: $id); watch log: $(watch_log_tail "$g")"
         return 1 ;;
    esac
    [ -n "$watched_s1" ] && [ -n "$watched_s2" ] && break
  done
  if [ -z "$watched_s1" ] || [ -z "$watched_s2" ]; then
    detail="${#watched[@]} watched groups, none controlled by server $([ -z "$watched_s1" ] && echo 1 || echo 2)"
    return 1
  fi
  local t0 pending
  t0=$(now)
  deadline=$(($(date +%s) + 45))
  while :; do
    pending=""
    for g in "${watched[@]}"; do owned_by "$g" || pending+=" $g"; done
    [ -z "$pending" ] && break
    if [ "$(date +%s)" -ge "$deadline" ]; then
      detail="after 45 s some partitions have no owner in:$pending (watch log: $(watch_log_tail "${pending# }" | cut -c1-150))"
      return 1
    fi
    sleep 1
  done
  detail="3 consumers each ($consumers_where) of ${watched[*]}: $watched_s1 on server 1, $watched_s2 on server 2; every partition owned $(since "$t0") s after both had a controller"
}

# The groups c and d look at: the watched ones, or else any group of each server.
pick1=""
pick2=""
pick_groups() {
  local json
  pick1=$watched_s1
  pick2=$watched_s2
  if [ -z "$pick1" ] || [ -z "$pick2" ]; then
    json=$(list_json 2>/dev/null) || json='{"groups":[]}'
    [ -n "$pick1" ] || pick1=$(groups_on "$json" 1 | head -n 1)
    [ -n "$pick2" ] || pick2=$(groups_on "$json" 2 | head -n 1)
  fi
  if [ -z "$pick1" ] || [ -z "$pick2" ]; then
    detail="no group controlled by server ${pick1:+2}${pick1:-1} to look at"
    return 1
  fi
}

describes_group() { grep -Eq "^group: +$1\$" <<<"$2"; }

# c (host): groupctl describe from the host, through server 1.
# check_describe WHERE GROUP CMD...: CMD is a `groupctl describe GROUP`; what
# went wrong with it is added to the caller's $bad, WHERE first.
check_describe() {
  local where=$1 g=$2
  shift 2
  capture "$@"
  if [ "$rc" != 0 ]; then
    bad+=" ${where}describe $g: exit $rc: $err;"
  elif ! describes_group "$g" "$out"; then
    bad+=" ${where}describe $g: no 'group: $g' line;"
  fi
}

# describe_from_host: one look (see step_describe_host); 0 when both answer.
describe_from_host() {
  local g
  bad=""
  for g in "$pick1" "$pick2"; do
    check_describe "" "$g" hostctl --bootstrap 127.0.0.1:7400 describe "$g"
  done
  [ -z "$bad" ]
}

# Polled up to the longest a group may go unanswered (its controller's
# ZooKeeper session ending, then the claim) plus the allowance: a look can
# meet a handover under way, or a server that a busy machine slowed past
# groupctl's 3 s request timeout.
step_describe_host() {
  pick_groups || return 1
  local bad="" limit
  limit=$(design_bound "$unanswered_s")
  until_within "$limit" describe_from_host ||
    { detail="from the host (--bootstrap 127.0.0.1:7400), still after $limit s:$bad"; return 1; }
  detail="from the host (--bootstrap 127.0.0.1:7400): describe $pick1 (server 1) and $pick2 (server 2) exit 0"
}

# describe_in_containers: one look (see step_describe_containers); 0 when all answer.
describe_in_containers() {
  local svc g
  bad=""
  for svc in groupcoordd-1 groupcoordd-2; do
    for g in "$pick1" "$pick2"; do
      check_describe "in $svc: " "$g" cexec "$svc" groupctl describe "$g"
    done
  done
  [ -z "$bad" ]
}

# c (containers): groupctl describe inside each server's container, without
# --bootstrap; polled, as from the host.
step_describe_containers() {
  pick_groups || return 1
  local svc bad="" boot no_boot="" limit
  for svc in groupcoordd-1 groupcoordd-2; do
    # shellcheck disable=SC2016  # expanded by the container's shell
    boot=$(cexec "$svc" sh -c 'echo "${GROUPCTL_BOOTSTRAP:-}"' 2>/dev/null | tr -d '\r') || boot=""
    [ -n "$boot" ] || no_boot+=" $svc has no GROUPCTL_BOOTSTRAP;"
  done
  limit=$(design_bound "$unanswered_s")
  until_within "$limit" describe_in_containers || bad="${bad:+ still after $limit s:}$bad"
  bad="$no_boot$bad"
  [ -z "$bad" ] || { detail="${bad# }"; return 1; }
  detail="inside groupcoordd-1 and groupcoordd-2: describe $pick1 (server 1) and $pick2 (server 2) exit 0"
}

# d: /api/groups/NAME on both HTTP ports, and /health/ready; polled (see
# step_describe_host).
http_api_once() {
  local port g name
  bad=""
  for port in 7401 7411; do
    for g in "$pick1" "$pick2"; do
      http_get "http://127.0.0.1:$port/api/groups/$g"
      if [ "$http_code" != 200 ]; then
        bad+=" :$port/api/groups/$g: $http_code $(oneline "$http_body" | cut -c1-160);"
        continue
      fi
      name=$(jq -r '.group.name // .group // empty' <<<"$http_body" 2>/dev/null || true)
      [ "$name" = "$g" ] || bad+=" :$port/api/groups/$g: 200 but the JSON names '$name';"
    done
  done
  [ -z "$bad" ]
}

step_http_api() {
  pick_groups || return 1
  local bad="" limit
  limit=$(design_bound "$unanswered_s")
  until_within "$limit" http_api_once || { detail="still after $limit s:$bad"; return 1; }
  detail="127.0.0.1:7401 and 127.0.0.1:7411 answer /api/groups/$pick1 (server 1) and /api/groups/$pick2 (server 2): 200, JSON naming the group"
}

http_ready_once() {
  local port
  bad=""
  for port in 7401 7411; do
    http_get "http://127.0.0.1:$port/health/ready"
    [ "$http_code" = 200 ] || bad+=" :$port/health/ready: $http_code $(oneline "$http_body");"
  done
  [ -z "$bad" ]
}

step_http_ready() {
  local bad="" limit
  # Ready needs a ZooKeeper session: one being re-established takes at most its timeout.
  limit=$(design_bound "$zk_session_s")
  until_within "$limit" http_ready_once || { detail="still after $limit s:$bad"; return 1; }
  detail="127.0.0.1:7401 and 127.0.0.1:7411 /health/ready: 200"
}

# i: every published port is on 127.0.0.1, and the expected ones are there.
step_ports() {
  local s lines bad="" seen="" want line hostaddr
  declare -A expect=([zk1]="2181" [zk2]="2182" [zk3]="2183" [groupcoordd-1]="7400 7401 9092" [groupcoordd-2]="7410 7411 9093")
  for s in "${services[@]}"; do
    lines=$(docker port "${cids[$s]}" 2>/dev/null) || { bad+=" $s: docker port failed;"; continue; }
    while read -r line; do
      [ -n "$line" ] || continue
      hostaddr=${line##*-> }
      seen+=" ${hostaddr##*:}"
      hostaddr=${hostaddr%:*}
      [ "$hostaddr" = 127.0.0.1 ] || bad+=" $s: $line;"
    done <<<"$lines"
    for want in ${expect[$s]}; do
      grep -Eq -- "-> 127\.0\.0\.1:$want\$" <<<"$lines" || bad+=" $s: nothing on 127.0.0.1:$want;"
    done
  done
  [ -z "$bad" ] || { detail="not loopback-only:${bad}"; return 1; }
  detail="all published ports on 127.0.0.1 only:$(tr ' ' '\n' <<<"$seen" | sed '/^$/d' | sort -un | tr '\n' ' ' | sed 's/ $//;s/^/ /')"
}

# i: the servers' open-file limit.
step_nofile() {
  local svc n bad="" got=""
  for svc in groupcoordd-1 groupcoordd-2; do
    n=$(cexec "$svc" sh -c 'ulimit -n' 2>/dev/null | tr -d '\r ') || n=""
    got+=" $svc=$n"
    case "$n" in
      unlimited) ;;
      ''|*[!0-9]*) bad+=" $svc: ulimit -n answered '$n';" ;;
      *) [ "$n" -ge "$min_nofile" ] || bad+=" $svc: ulimit -n is $n, below $min_nofile;" ;;
    esac
  done
  [ -z "$bad" ] || { detail="${bad# }"; return 1; }
  detail="ulimit -n:$got (at least $min_nofile)"
}

# i: no open-file warning in the servers' logs.
step_nofile_logs() {
  local logs hits
  logs=$(timeout 60 "${compose_cmd[@]}" logs --no-color groupcoordd-1 groupcoordd-2 2>&1) ||
    { detail="docker-compose logs failed"; return 1; }
  hits=$(grep -iE 'open.file' <<<"$logs" || true)
  [ -z "$hits" ] || { detail="$(grep -c . <<<"$hits") line(s), e.g.: $(oneline "$(head -n 1 <<<"$hits")")"; return 1; }
  detail="no open-file warning in groupcoordd-1's and groupcoordd-2's logs ($(grep -c . <<<"$logs") lines)"
}

# on2_now: the groups server 2 controls, from one `groupctl list`, in the
# caller's $on2 (why there are none in $on2_why); 0 when there are some.
on2_now() {
  local json
  on2=""
  json=$(list_json 2>/dev/null) || { on2_why="groupctl list from the host failed"; return 1; }
  on2=$(groups_on "$json" 2 | tr '\n' ' ' | sed 's/ $//')
  on2_why="server 2 controls no group"
  [ -n "$on2" ]
}

# Server 2 taken away by ACTION (stop|kill); its groups and their consumers
# must come to server 1; then it comes back.
failover() {
  local label=$1 json on2="" on2_why="" g watched_on2=() t0 tmove="" town="" pending deadline spid="" stop_rc=0 limit
  # What server 2 controls before it goes: polled, as a slow answer or a
  # handover under way can hide it from one look.
  limit=$(design_bound "$unanswered_s")
  until_within "$limit" on2_now || { detail="before the $label, still after $limit s: $on2_why"; return 1; }
  local n_on2
  n_on2=$(wc -w <<<"$on2")
  for g in "${watched[@]}"; do
    case " $on2 " in *" $g "*) watched_on2+=("$g") ;; esac
  done

  t0=$(now)
  if [ "$label" = stop ]; then
    timeout 60 "${compose_cmd[@]}" stop groupcoordd-2 \
      >"$workdir/stop.log" 2>&1 &
    spid=$!
  else
    docker kill -s KILL "${cids[groupcoordd-2]}" >/dev/null 2>&1 ||
      { detail="docker kill -s KILL of groupcoordd-2 failed"; return 1; }
  fi
  deadline=$(($(date +%s) + failover_timeout))
  while :; do
    if json=$(list_json 127.0.0.1:7400 2>/dev/null); then
      pending=""
      for g in $on2; do [ "$(controller_in "$json" "$g")" = 1 ] || pending+=" $g"; done
      if [ -z "$pending" ]; then tmove=$(since "$t0"); break; fi
    else
      pending=" (list failed)"
    fi
    [ "$(date +%s)" -lt "$deadline" ] || break
    sleep 0.2
  done
  if [ -n "$tmove" ]; then
    while :; do
      pending=""
      for g in "${watched_on2[@]}"; do owned_by "$g" 1 || pending+=" $g"; done
      if [ -z "$pending" ]; then town=$(since "$t0"); break; fi
      [ "$(date +%s)" -lt "$deadline" ] || break
      sleep 0.2
    done
  fi
  if [ -n "$spid" ]; then wait "$spid" || stop_rc=$?; fi
  local stopped_state
  stopped_state=$(state_of groupcoordd-2)
  echo "figure $label: $n_on2 groups moved in ${tmove:-(not within ${failover_timeout} s)} s, consumers (of ${watched_on2[*]:-no group}) owning again after ${town:-(not within ${failover_timeout} s)} s"

  # Back again.
  local t1 tback="" tctl="" n_back=0
  t1=$(now)
  timeout 60 "${compose_cmd[@]}" start groupcoordd-2 >"$workdir/start.log" 2>&1
  if wait_healthy "$failover_timeout" groupcoordd-2; then
    tback=$(since "$t1")
    deadline=$(($(date +%s) + failover_timeout))
    while :; do
      if json=$(list_json 2>/dev/null); then
        n_back=$(groups_on "$json" 2 | grep -c . || true)
        if [ "$n_back" -gt 0 ] && { [ -z "$watched_s2" ] || { [ "$(controller_in "$json" "$watched_s2")" = 2 ] && owned_by "$watched_s2" 2; }; }; then
          tctl=$(since "$t1")
          break
        fi
      fi
      [ "$(date +%s)" -lt "$deadline" ] || break
      sleep 0.5
    done
  fi
  echo "figure $label: server 2 healthy again after ${tback:-(not within ${failover_timeout} s)} s, controlling $n_back groups again after ${tctl:-(not within ${failover_timeout} s)} s"

  local bad=""
  [ "$stop_rc" = 0 ] || bad+=" docker-compose stop exited $stop_rc;"
  [ -n "$tmove" ] || bad+=" still not on server 1 after ${failover_timeout} s:$pending;"
  [ -z "$tmove" ] || [ -n "$town" ] || bad+=" partitions not all owned after ${failover_timeout} s in:$pending;"
  [ -n "$tback" ] || bad+=" groupcoordd-2 not healthy again within ${failover_timeout} s:$not_healthy;"
  [ -z "$tback" ] || [ -n "$tctl" ] || bad+=" server 2 took no group back within ${failover_timeout} s;"
  if [ -n "$bad" ]; then
    detail="${bad# }"
    return 1
  fi
  detail="server 2 ($label; then $stopped_state): its $n_on2 groups ($on2) on server 1 after $tmove s, consumers owning after $town s; back: healthy after $tback s, controlling $n_back groups after $tctl s"
}

step_stop_server2() { failover stop; }
step_kill_server2() { failover kill; }

zk_mode() {  # zk_mode SERVICE: leader, follower, or what else srvr says
  local m
  m=$(timeout 10 docker exec "${cids[$1]}" sh -c 'echo srvr | nc -w 2 127.0.0.1 2181' 2>/dev/null </dev/null |
    sed -n 's/^Mode: //p' | tr -d '\r') || true
  echo "${m:-none}"
}

# g: the ZooKeeper leader stopped.
step_zk_leader() {
  pick_groups || return 1
  local n leader="" m t0 tlead="" tok="" newleader="" deadline bad_now ready_dropped=no modes="" tfind
  # The ensemble may be between leaders when the step begins (a node that
  # lost its quorum link during the steps before answers srvr with "not
  # currently serving requests"): wait for one, as long as a failover.
  refresh_cids
  t0=$(now)
  deadline=$(($(date +%s) + failover_timeout))
  while :; do
    modes=""
    for n in 1 2 3; do
      m=$(zk_mode "zk$n")
      modes+=" zk$n=$m"
      [ "$m" = leader ] && leader=zk$n
    done
    [ -n "$leader" ] && break
    [ "$(date +%s)" -lt "$deadline" ] || break
    sleep 0.5
  done
  tfind=$(since "$t0")
  [ -n "$leader" ] || { detail="no ZooKeeper node says Mode: leader within ${failover_timeout} s (last:$modes)"; return 1; }
  echo "figure zk-leader-stop: leader $leader found after $tfind s (modes:$modes)"
  zk_stop_from=$(date +%s)
  t0=$(now)
  timeout 60 "${compose_cmd[@]}" stop "$leader" >"$workdir/zk-stop.log" 2>&1 ||
    { detail="docker-compose stop $leader failed"; return 1; }
  local tstop
  tstop=$(since "$t0")
  deadline=$(($(date +%s) + failover_timeout))
  while [ -z "$newleader" ]; do
    for n in 1 2 3; do
      [ "zk$n" = "$leader" ] && continue
      [ "$(zk_mode "zk$n")" = leader ] && newleader=zk$n && tlead=$(since "$t0")
    done
    [ -n "$newleader" ] && break
    [ "$(date +%s)" -lt "$deadline" ] || break
    sleep 0.2
  done
  while :; do
    bad_now=""
    http_get http://127.0.0.1:7401/health/ready
    [ "$http_code" = 200 ] || { bad_now+=" server 1 ready: $http_code;"; ready_dropped=yes; }
    http_get http://127.0.0.1:7411/health/ready
    [ "$http_code" = 200 ] || { bad_now+=" server 2 ready: $http_code;"; ready_dropped=yes; }
    if [ -z "$bad_now" ]; then
      capture hostctl --bootstrap "$host_bootstrap" describe "$pick1"
      [ "$rc" = 0 ] || bad_now+=" describe $pick1: exit $rc $err;"
      capture hostctl --bootstrap "$host_bootstrap" describe "$pick2"
      [ "$rc" = 0 ] || bad_now+=" describe $pick2: exit $rc $err;"
    fi
    if [ -z "$bad_now" ]; then
      for m in "${watched[@]}"; do owned_by "$m" || bad_now+=" partitions of $m not all owned;"; done
    fi
    if [ -z "$bad_now" ] && [ -n "$newleader" ]; then tok=$(since "$t0"); break; fi
    [ "$(date +%s)" -lt "$deadline" ] || break
    sleep 0.5
  done
  echo "figure zk-leader-stop: $leader stopped in $tstop s; new leader ${newleader:-(none)} after ${tlead:-(not within ${failover_timeout} s)} s; both servers ready, describe working and consumers owning after ${tok:-(not within ${failover_timeout} s)} s (readiness seen dropping: $ready_dropped)"
  local t1 tback=""
  t1=$(now)
  timeout 60 "${compose_cmd[@]}" start "$leader" >"$workdir/zk-start.log" 2>&1
  wait_healthy "$failover_timeout" "${services[@]}" && tback=$(since "$t1")
  zk_stop_until=$(($(date +%s) + 1))
  echo "figure zk-leader-stop: $leader started again, all five healthy after ${tback:-(not within ${failover_timeout} s)} s"
  local bad=""
  [ -n "$newleader" ] || bad+=" no new leader within ${failover_timeout} s;"
  [ -n "$tok" ] || bad+=" not recovered within ${failover_timeout} s:$bad_now"
  [ -n "$tback" ] || bad+=" not all healthy after $leader started again:$not_healthy;"
  [ -z "$bad" ] || { detail="${bad# }"; return 1; }
  detail="leader $leader stopped; new leader $newleader after $tlead s; servers ready, describe and consumers fine after $tok s; $leader back, all healthy after $tback s"
}

# k: what the logs say when things go wrong, said once, and the rough edges
# a user met before:
#   - while the ZooKeeper leader was stopped (step g), at most one
#     ZooKeeper client line per 5 s per server (the client retries a
#     stopped node every few hundred milliseconds, each time with an error);
#   - server 2's process killed from the host (a crash, which the restart
#     policy answers at once, while ZooKeeper still holds the old session's
#     registration): one "already registered" line, then one saying the id
#     was free again, and server 2 healthy;
#   - `groupctl topic create` against an ensemble that does not answer: a
#     clear error in a few lines, not a page of client errors;
#   - groupcoord-watch --group on a group that exists joins it.

# crash_lines_agree: reads server 2's log since $since_s into the caller's
# $lines, $taken and $free; 0 when as many "free again" lines as "already
# registered" ones are there.
crash_lines_agree() {
  lines=$(docker logs --since "$since_s" "${cids[groupcoordd-2]}" 2>&1)
  taken=$(grep -c 'is already registered' <<<"$lines" || true)
  free=$(grep -c 'was free again after' <<<"$lines" || true)
  [ "$taken" = "$free" ]
}

step_quiet_logs() {
  local bad="" c n allowed dur
  if [ -z "$zk_stop_from" ] || [ -z "$zk_stop_until" ]; then
    bad+=" step g did not run to its end (no window to read);"
  else
    dur=$((zk_stop_until - zk_stop_from))
    allowed=$((dur / 5 + 2))
    local counts=""
    for c in groupcoordd-1 groupcoordd-2; do
      n=$(docker logs --since "$zk_stop_from" --until "$zk_stop_until" "${cids[$c]}" 2>&1 |
        grep -c 'zookeeper client:' || true)
      counts+=" $c:$n"
      [ "$n" -le "$allowed" ] || bad+=" $c logged $n ZooKeeper client lines in the $dur s of step g (at most $allowed: one per 5 s);"
    done
    echo "figure quiet-logs: ZooKeeper client lines while the leader was away ($dur s):$counts"
  fi

  # A crash of server 2.
  local pid t0 since_s trestart="" thealthy="" restarts0 restarts lines taken free
  restarts0=$(docker inspect -f '{{.RestartCount}}' "${cids[groupcoordd-2]}")
  pid=$(docker inspect -f '{{.State.Pid}}' "${cids[groupcoordd-2]}")
  since_s=$(date +%s)
  t0=$(now)
  if [ -z "$pid" ] || [ "$pid" = 0 ] || ! kill -KILL "$pid" 2>/dev/null; then
    bad+=" could not kill server 2's process (pid '${pid}');"
  else
    local deadline=$(($(date +%s) + failover_timeout))
    while :; do
      restarts=$(docker inspect -f '{{.RestartCount}}' "${cids[groupcoordd-2]}" 2>/dev/null || echo "$restarts0")
      if [ -z "$trestart" ] && [ "$restarts" -gt "$restarts0" ]; then trestart=$(since "$t0"); fi
      if [ -n "$trestart" ] && [ "$(state_of groupcoordd-2)" = healthy ]; then
        http_get http://127.0.0.1:7411/health/ready
        if [ "$http_code" = 200 ]; then thealthy=$(since "$t0"); break; fi
      fi
      [ "$(date +%s)" -lt "$deadline" ] || break
      sleep 0.5
    done
    # Server 2 logs "was free again" when it registers, before it is ready;
    # Docker's log may show the line a moment later: read until the counts
    # agree, for at most the allowance once it is ready.
    if [ -n "$thealthy" ]; then
      until_within "$(design_bound 0)" crash_lines_agree || true
    else
      crash_lines_agree || true
    fi
    echo "figure quiet-logs: server 2 killed: restarted by Docker after ${trestart:-(never)} s, ready after ${thealthy:-(not within ${failover_timeout} s)} s; 'already registered' said $taken time(s), 'free again' $free time(s)"
    [ -n "$trestart" ] || bad+=" Docker did not restart the killed server 2 within ${failover_timeout} s;"
    [ -z "$trestart" ] || [ -n "$thealthy" ] || bad+=" server 2 not ready within ${failover_timeout} s of its crash;"
    [ "$taken" -le 1 ] || bad+=" 'already registered' said $taken times after one crash;"
    [ "$taken" = "$free" ] || bad+=" 'already registered' said $taken time(s) but 'was free again' $free;"
  fi

  # groupctl topic create where nothing answers (127.0.0.1:2181 inside a
  # server's container).
  capture cexec groupcoordd-1 sh -c 'groupctl topic create quiet --partitions 2 --zookeeper 127.0.0.1:2181 2>&1'
  n=$(grep -c . <<<"$out" || true)
  if [ "$rc" = 0 ]; then
    bad+=" groupctl topic create against no ensemble exited 0;"
  elif ! grep -q 'cannot reach ZooKeeper' <<<"$out"; then
    bad+=" groupctl topic create against no ensemble (exit $rc) never says it cannot reach ZooKeeper: $(oneline "$out");"
  elif [ "$n" -gt 5 ]; then
    bad+=" groupctl topic create against no ensemble wrote $n lines (at most 5), e.g. $(oneline "$(head -n 2 <<<"$out")");"
  fi
  local topic_lines=$n topic_rc=$rc

  # groupcoord-watch on a group that exists (created in step a) comes to own
  # partitions of it. Not within a fixed lifetime, a measure of speed: it
  # runs until it prints that it owns some (polled), then is stopped (at
  # SIGTERM its consumer leaves and it exits 0). The deadline: the group may
  # be moving while it joins (server 2 came back a moment ago, and is handed
  # groups once it has settled: a handover, then the claim), and a join waits
  # in the batch at most the join window's cap.
  local g=${groups_created[0]:-} join_s tjoin
  if [ -z "$g" ]; then
    bad+=" no group of step a to join;"
  else
    join_s=$(design_bound $((handover_settle_s + unanswered_s + join_window_max_s)))
    tjoin=$(now)
    capture timeout -k 5 $((join_s + 60)) "${compose_cmd[@]}" exec -T groupcoordd-1 sh -c "
      log=/tmp/watch-existing-$g.log
      groupcoord-watch --bootstrap \"\$GROUPCTL_BOOTSTRAP\" --group $g --topic $topic --consumers 1 \\
        --seconds $((join_s + 30)) >\$log 2>&1 &
      pid=\$!
      end=\$((\$(date +%s) + $join_s))
      while ! grep -q ' owns ' \$log && kill -0 \$pid 2>/dev/null && [ \$(date +%s) -lt \$end ]; do sleep 0.5; done
      kill -TERM \$pid 2>/dev/null
      wait \$pid
      rc=\$?
      cat \$log
      exit \$rc" </dev/null
    local owned="owned partitions"
    grep -q ' owns ' <<<"$out" || owned="owned none"
    echo "figure quiet-logs: groupcoord-watch on the existing group $g: $owned, stopped after $(since "$tjoin") s" \
      "(docker-compose exec included)"
    if [ "$rc" != 0 ] || ! grep -q ' owns ' <<<"$out"; then
      bad+=" groupcoord-watch --group $g (a group that exists; waited up to $join_s s): exit $rc: $(oneline "$(tail -n 3 <<<"$out")");"
    fi
  fi

  [ -z "$bad" ] || { detail="${bad# }"; return 1; }
  detail="ZooKeeper client lines within one per 5 s while the leader was away; a crash of server 2: restarted after $trestart s, ready after $thealthy s, 'already registered' said $taken time(s); topic create against no ensemble: exit $topic_rc in $topic_lines line(s); groupcoord-watch joined the existing group $g"
}

# h: `down` without -v, then `up -d` again.
step_down_keep() {
  stop_consumers
  local anon_before_down new_anon named t0 tup="" json kept=0 g bad=""
  anon_before_down=$(project_anonymous_volumes)
  named=$(docker volume ls -q --filter "label=com.docker.compose.project=$project" | grep -c . || true)
  timeout 60 "${compose_cmd[@]}" logs --no-color >"$workdir/compose.log" 2>&1
  timeout 180 "${compose_cmd[@]}" down --remove-orphans >"$workdir/down.log" 2>&1 ||
    { detail="docker-compose down failed: $(tail -n 2 "$workdir/down.log" | tr '\n' ' ')"; return 1; }
  new_anon=$(comm -13 <(sed '/^$/d' <<<"$dangling_before" | sort) <(dangling_anonymous | sort))
  # Ours for certain (our containers mounted them): removed at the end.
  local v
  for v in $anon_before_down; do leaked_volumes+=("$v"); done
  local n_new
  n_new=$(sed '/^$/d' <<<"$new_anon" | grep -c . || true)
  [ "$n_new" = 0 ] || bad+=" down left $n_new new anonymous volume(s) (the containers mounted $(wc -w <<<"$anon_before_down") anonymous volume(s));"
  t0=$(now)
  if timeout 300 "${compose_cmd[@]}" up -d --no-build >"$workdir/up2.log" 2>&1; then
    refresh_cids
    wait_healthy "$health_timeout" "${services[@]}" && tup=$(since "$t0")
  fi
  if [ -z "$tup" ]; then
    bad+=" up -d again: not healthy within ${health_timeout} s:$not_healthy;"
  else
    local dl=$(($(date +%s) + 30))
    while :; do
      kept=0
      if json=$(list_json 2>/dev/null); then
        for g in "${groups_created[@]}"; do [ "$(controller_in "$json" "$g")" != missing ] && kept=$((kept + 1)); done
      fi
      [ "$kept" = "${#groups_created[@]}" ] && break
      [ "$(date +%s)" -lt "$dl" ] || break
      sleep 1
    done
    [ "$kept" = "${#groups_created[@]}" ] || bad+=" after up again $kept of ${#groups_created[@]} groups are there (ZooKeeper's data did not persist);"
  fi
  echo "figure down-up: down kept $named named volume(s), left $n_new new anonymous volume(s); up again healthy after ${tup:-(never)} s, $kept of ${#groups_created[@]} groups kept"
  [ -z "$bad" ] || { detail="${bad# }"; return 1; }
  detail="down (no -v) kept $named named volume(s) and left no anonymous one; up -d again: healthy after $tup s, all ${#groups_created[@]} groups kept"
}

# What is left labelled with this project (" N container(s) left ..."), or
# nothing.
project_leftovers() {
  local kind n out=""
  for kind in container volume network; do
    case $kind in
      container) n=$(docker ps -aq --filter "label=com.docker.compose.project=$project" | grep -c . || true) ;;
      *) n=$(docker "$kind" ls -q --filter "label=com.docker.compose.project=$project" | grep -c . || true) ;;
    esac
    [ "$n" = 0 ] || out+=" $n $kind(s) left"
  done
  printf '%s' "$out"
}

# h: `down -v` leaves nothing of the project.
step_down_clean() {
  local n_anon bad=""
  timeout 60 "${compose_cmd[@]}" logs --no-color >"$workdir/compose.log" 2>&1
  timeout 180 "${compose_cmd[@]}" down -v --remove-orphans >>"$workdir/down.log" 2>&1 ||
    bad+=" docker-compose down -v failed;"
  compose_up=0
  local left
  left=$(project_leftovers)
  n_anon=$(dangling_anonymous | grep -c . || true)
  [ -z "$left" ] || bad+="$left;"
  if [ "$n_anon" -gt "$n_dangling_before" ]; then
    bad+=" $n_anon dangling anonymous volumes, $n_dangling_before before the run;"
  fi
  # Remove what the `down` without -v left (volumes our containers mounted).
  if [ "${#leaked_volumes[@]}" -gt 0 ]; then
    docker volume rm "${leaked_volumes[@]}" >/dev/null 2>&1 || true
    bad+="${bad:+ (the ${#leaked_volumes[@]} anonymous volumes the down without -v left are removed now)}"
    leaked_volumes=()
  fi
  [ -z "$bad" ] || { detail="${bad# }"; return 1; }
  detail="no container, volume or network labelled $project; $n_anon dangling anonymous volumes ($n_dangling_before before)"
}

# j: packaging/groupcoord-external/docker-compose.yml, after the main
# project is gone (both publish the same ports). A project of its own
# (its containers labelled groupcoord-external); ps and down work without
# GROUPCOORD_ZK_CONNECT; against an ensemble that does not answer, the
# servers keep running, say in their logs why they are not ready, and turn
# unhealthy instead of exiting and restarting.
ext_file=$root/packaging/groupcoord-external/docker-compose.yml
ext_project=groupcoord-external
ext_cmd() {
  local files=(-f "$ext_file")
  if [ -n "$extra_compose" ]; then files+=(-f "$extra_compose"); fi
  timeout -k 5 180 docker-compose "${files[@]}" "$@"
}
step_external() {
  local c st deadline t0 tunhealthy="" bad="" logs
  if [ -n "$(docker ps -aq --filter "label=com.docker.compose.project=$ext_project")" ]; then
    detail="containers of the project $ext_project exist already (a deployment of the external file?): not touched"
    return 1
  fi
  capture env -u GROUPCOORD_ZK_CONNECT docker-compose -f "$ext_file" ps
  [ "$rc" = 0 ] || { detail="ps without GROUPCOORD_ZK_CONNECT: exit $rc: $err"; return 1; }
  t0=$(now)
  # Nothing answers on 127.0.0.1:2181 inside a server's container.
  GROUPCOORD_ZK_CONNECT=127.0.0.1:2181 ext_cmd up -d --no-build >"$workdir/external-up.log" 2>&1 ||
    { detail="up with an ensemble that does not answer failed: $(oneline "$(tail -n 3 "$workdir/external-up.log")")"; return 1; }
  ext_up=1
  deadline=$(($(date +%s) + 120))
  while :; do
    st=""
    for c in $(docker ps -aq --filter "label=com.docker.compose.project=$ext_project"); do
      st+=" $(docker inspect -f '{{.State.Running}}/{{.RestartCount}}/{{if .State.Health}}{{.State.Health.Status}}{{end}}' "$c")"
    done
    if [ "$(grep -o 'true/0/unhealthy' <<<"$st" | grep -c .)" = 2 ]; then tunhealthy=$(since "$t0"); break; fi
    if grep -Eq 'false/|/[1-9][0-9]*/' <<<"$st"; then break; fi
    [ "$(date +%s)" -lt "$deadline" ] || break
    sleep 2
  done
  [ -n "$tunhealthy" ] || bad+=" not both running and unhealthy within 120 s (running/restarts/health:$st);"
  # Still waiting for ZooKeeper, the servers must stop at SIGTERM (they
  # exit 0), not at the SIGKILL 30 s later (stop_grace_period: exit 137).
  # Their exit codes tell which; how long the stop took is a figure.
  local tdown exits=""
  tdown=$(now)
  capture env -u GROUPCOORD_ZK_CONNECT docker-compose -f "$ext_file" ${extra_compose:+-f "$extra_compose"} stop
  tdown=$(since "$tdown")
  [ "$rc" = 0 ] || bad+=" stop without GROUPCOORD_ZK_CONNECT: exit $rc: $err;"
  for c in $(docker ps -aq --filter "label=com.docker.compose.project=$ext_project"); do
    exits+=" $(docker inspect -f '{{.State.Running}}/{{.State.ExitCode}}' "$c" 2>/dev/null || echo '?')"
  done
  [ "$exits" = " false/0 false/0" ] ||
    bad+=" after stop (running/exit code):$exits: the servers waiting for ZooKeeper did not stop at SIGTERM;"
  # Their logs to the end: they waited, and no session they never had
  # "closed" when they stopped.
  logs=$(ext_cmd logs --no-color 2>&1 || true)
  grep -q 'still no ZooKeeper session with 127.0.0.1:2181' <<<"$logs" ||
    bad+=" the logs never say they still wait for ZooKeeper;"
  if grep -Eq 'zk session 0x[0-9a-f]+ closed' <<<"$logs"; then
    bad+=" a server that never had a ZooKeeper session logged one closing: $(oneline "$(grep -Em 1 'zk session 0x[0-9a-f]+ closed' <<<"$logs")");"
  fi
  capture env -u GROUPCOORD_ZK_CONNECT docker-compose -f "$ext_file" ${extra_compose:+-f "$extra_compose"} down -v
  [ "$rc" = 0 ] || bad+=" down without GROUPCOORD_ZK_CONNECT: exit $rc: $err;"
  [ -z "$(docker ps -aq --filter "label=com.docker.compose.project=$ext_project")" ] && ext_up=0 ||
    bad+=" containers of $ext_project left after down;"
  [ -n "$(docker network ls -q --filter "label=com.docker.compose.project=$ext_project")" ] &&
    bad+=" a network of $ext_project left after down;"
  echo "figure external: both servers running and unhealthy after ${tunhealthy:-(never)} s without ZooKeeper, no restart; stopped in $tdown s"
  [ -z "$bad" ] || { detail="${bad# }"; return 1; }
  detail="project $ext_project; ps and down without GROUPCOORD_ZK_CONNECT; with no ensemble answering both servers stay up (no restart), log that they wait, and are unhealthy after $tunhealthy s; stopped (SIGTERM) in $tdown s, logging no session closed"
}

# j: the external file pointed at an ensemble in containers on this machine
# (the bundled one of docker-compose.yml, brought up alone as its header
# says) through network.yml: both servers healthy, a topic and a group made
# and controlled, then both projects taken down, the external file's without
# touching the network it joined, and nothing left of either.
ext_net_file=$root/packaging/groupcoord-external/network.yml
step_external_network() {
  local bad="" t0 tzk="" tup="" id net="${project}_default" c
  if [ -n "$(docker ps -aq --filter "label=com.docker.compose.project=$ext_project")" ]; then
    detail="containers of the project $ext_project exist already: not touched"
    return 1
  fi
  t0=$(now)
  compose_up=1
  timeout 300 "${compose_cmd[@]}" up -d --no-build zk1 zk2 zk3 >"$workdir/zk-alone-up.log" 2>&1 ||
    { detail="docker-compose up -d zk1 zk2 zk3 failed: $(oneline "$(tail -n 3 "$workdir/zk-alone-up.log")")"; return 1; }
  refresh_cids
  wait_healthy "$health_timeout" zk1 zk2 zk3 && tzk=$(since "$t0")
  [ -n "$tzk" ] || { detail="the bundled ensemble alone not healthy within $health_timeout s:$not_healthy"; return 1; }
  export GROUPCOORD_NETWORK=$net GROUPCOORD_ZK_CONNECT=$zk_internal
  t0=$(now)
  ext_net_up=1
  if ! ext_cmd -f "$ext_net_file" up -d --no-build >"$workdir/external-net-up.log" 2>&1; then
    bad+=" up with network.yml failed: $(oneline "$(tail -n 3 "$workdir/external-net-up.log")");"
  else
    local deadline=$(($(date +%s) + health_timeout)) st
    while :; do
      st=""
      for c in $(docker ps -aq --filter "label=com.docker.compose.project=$ext_project"); do
        st+=" $(docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}' "$c")"
      done
      if [ "$(grep -o healthy <<<"$st" | grep -c . || true)" = 2 ] && ! grep -q unhealthy <<<"$st"; then
        tup=$(since "$t0"); break
      fi
      [ "$(date +%s)" -lt "$deadline" ] || break
      sleep 1
    done
    [ -n "$tup" ] || bad+=" the external file's servers not both healthy within $health_timeout s:$st;"
  fi
  if [ -n "$tup" ]; then
    capture ext_cmd -f "$ext_net_file" exec -T groupcoordd-1 groupctl topic create ext --partitions 2 --zookeeper "$zk_internal"
    [ "$rc" = 0 ] || bad+=" topic create: exit $rc: $err;"
    capture ext_cmd -f "$ext_net_file" exec -T groupcoordd-2 groupctl create ext-group --topics ext --session-timeout 10s
    [ "$rc" = 0 ] || bad+=" groupctl create ext-group in groupcoordd-2: exit $rc: $err $(oneline "$out");"
    local dl=$(($(date +%s) + 30))
    while :; do
      capture ext_cmd -f "$ext_net_file" exec -T groupcoordd-1 groupctl --output json list
      id=""
      [ "$rc" = 0 ] && id=$(controller_in "$out" ext-group 2>/dev/null || true)
      case "$id" in 1|2) break ;; esac
      [ "$(date +%s)" -lt "$dl" ] || break
      sleep 1
    done
    case "$id" in 1|2) ;; *) bad+=" groupctl list in groupcoordd-1 does not show ext-group controlled (controller '${id}', exit $rc $err);" ;; esac
  fi
  local tdown
  tdown=$(now)
  ext_cmd -f "$ext_net_file" down -v >"$workdir/external-net-down.log" 2>&1 ||
    bad+=" down of the external file with network.yml failed: $(oneline "$(tail -n 3 "$workdir/external-net-down.log")");"
  tdown=$(since "$tdown")
  [ -z "$(docker ps -aq --filter "label=com.docker.compose.project=$ext_project")" ] && ext_net_up=0 ||
    bad+=" containers of $ext_project left after down;"
  docker network inspect "$net" >/dev/null 2>&1 ||
    bad+=" the external file's down removed the network it joined ($net);"
  unset GROUPCOORD_NETWORK GROUPCOORD_ZK_CONNECT
  timeout 180 "${compose_cmd[@]}" down -v --remove-orphans >>"$workdir/down.log" 2>&1 ||
    bad+=" docker-compose down -v of the ensemble failed;"
  compose_up=0
  local left
  left=$(project_leftovers)
  [ -z "$left" ] || bad+=" after both downs:$left;"
  echo "figure external-network: the ensemble alone healthy after $tzk s; the external file's servers on its network healthy after ${tup:-(never)} s; their down in $tdown s"
  [ -z "$bad" ] || { detail="${bad# }"; return 1; }
  detail="the bundled ensemble alone (zk1 zk2 zk3) healthy after $tzk s; the external file with network.yml (GROUPCOORD_NETWORK=$net) healthy after $tup s, made a topic and a group that server $id controls; down left the network to its project; nothing of either left"
}

t=$(now)
run_step a.create-groups step_create
run_step b.consumers step_consumers
run_step c.describe-host step_describe_host
run_step c.describe-containers step_describe_containers
run_step d.http-api step_http_api
run_step d.http-ready step_http_ready
run_step i.ports-loopback step_ports
run_step i.nofile-limit step_nofile
run_step i.nofile-logs step_nofile_logs
run_step e.stop-server2 step_stop_server2
run_step f.kill-server2 step_kill_server2
run_step g.zk-leader-stop step_zk_leader
run_step k.quiet-logs step_quiet_logs
phase steps "$t"
t=$(now)
run_step h.down-up-volumes step_down_keep
run_step h.down-v-clean step_down_clean
phase teardown "$t"
t=$(now)
run_step j.external-file step_external
run_step j.external-network step_external_network
phase external "$t"
phase total "$t_all"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ] || exit 1
