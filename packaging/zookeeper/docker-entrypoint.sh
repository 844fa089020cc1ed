#!/bin/bash
# Entrypoint of the ZooKeeper stand-in image (packaging/zookeeper/Dockerfile),
# which scripts/compose-test.sh uses in place of the official `zookeeper:3.8`
# image on machines that reach no registry. It reads the official image's
# variables and starts ZooKeeper the way that image does:
#
#   ZOO_MY_ID                   this node's id, written to $ZOO_DATA_DIR/myid
#                               unless that file exists (default 1)
#   ZOO_SERVERS                 space-separated `server.N=host:2888:3888;2181`
#                               entries, each a zoo.cfg line (default: a
#                               single server.1 on localhost)
#   ZOO_4LW_COMMANDS_WHITELIST  -> 4lw.commands.whitelist (ZooKeeper's own
#                               default, `srvr` only, when unset)
#   ZOO_STANDALONE_ENABLED      -> standaloneEnabled (default true)
#   ZOO_ADMINSERVER_ENABLED     -> admin.enableServer (default true)
#   ZOO_TICK_TIME, ZOO_INIT_LIMIT, ZOO_SYNC_LIMIT (2000 ms, 5, 2),
#   ZOO_MAX_CLIENT_CNXNS (60), ZOO_AUTOPURGE_PURGEINTERVAL (0),
#   ZOO_AUTOPURGE_SNAPRETAINCOUNT (3), and ZOO_CFG_EXTRA (more zoo.cfg
#   lines, space-separated key=value)
#   ZOO_CONF_DIR, ZOO_DATA_DIR, ZOO_DATA_LOG_DIR, ZOO_LOG_DIR
#                               /conf, /data (dataDir), /datalog
#                               (dataLogDir), /logs
#   ZK_SERVER_HEAP, SERVER_JVMFLAGS, JVMFLAGS
#                               the JVM's heap in MB (default 256) and more
#                               JVM options
#
# As the official image does, it writes $ZOO_CONF_DIR/zoo.cfg only when the
# file does not exist yet (a restarted container keeps its configuration).
# Started as root, it hands the data and log directories to the user
# `zookeeper` and runs as that user. ZooKeeper runs in the foreground as
# process 1 (SIGTERM stops it) and logs to standard output.
#
# The command `zkServer.sh start-foreground` (the image's CMD) starts
# ZooKeeper; any other command is run as given (`docker run ... IMAGE sh`).
set -euo pipefail

: "${ZOO_CONF_DIR:=/conf}" "${ZOO_DATA_DIR:=/data}" "${ZOO_DATA_LOG_DIR:=/datalog}" "${ZOO_LOG_DIR:=/logs}"
: "${ZOO_TICK_TIME:=2000}" "${ZOO_INIT_LIMIT:=5}" "${ZOO_SYNC_LIMIT:=2}"
: "${ZOO_AUTOPURGE_PURGEINTERVAL:=0}" "${ZOO_AUTOPURGE_SNAPRETAINCOUNT:=3}" "${ZOO_MAX_CLIENT_CNXNS:=60}"
: "${ZOO_STANDALONE_ENABLED:=true}" "${ZOO_ADMINSERVER_ENABLED:=true}"

zk_user=zookeeper

if [ "${1:-}" != zkServer.sh ]; then
  exec "$@"
fi
if [ "${2:-start-foreground}" != start-foreground ]; then
  echo "docker-entrypoint.sh: only \`zkServer.sh start-foreground\` is supported, not \`$*\`" >&2
  exit 2
fi

# As root: make the (possibly fresh or bind-mounted) directories the
# user's, then come back as that user.
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$ZOO_CONF_DIR" "$ZOO_DATA_DIR" "$ZOO_DATA_LOG_DIR" "$ZOO_LOG_DIR"
  chown -R "$zk_user:$zk_user" "$ZOO_CONF_DIR" "$ZOO_DATA_DIR" "$ZOO_DATA_LOG_DIR" "$ZOO_LOG_DIR"
  exec setpriv --reuid="$zk_user" --regid="$zk_user" --init-groups --inh-caps=-all "$0" "$@"
fi

config="$ZOO_CONF_DIR/zoo.cfg"
if [ ! -f "$config" ]; then
  {
    echo "dataDir=$ZOO_DATA_DIR"
    echo "dataLogDir=$ZOO_DATA_LOG_DIR"
    echo "tickTime=$ZOO_TICK_TIME"
    echo "initLimit=$ZOO_INIT_LIMIT"
    echo "syncLimit=$ZOO_SYNC_LIMIT"
    echo "autopurge.snapRetainCount=$ZOO_AUTOPURGE_SNAPRETAINCOUNT"
    echo "autopurge.purgeInterval=$ZOO_AUTOPURGE_PURGEINTERVAL"
    echo "maxClientCnxns=$ZOO_MAX_CLIENT_CNXNS"
    echo "standaloneEnabled=$ZOO_STANDALONE_ENABLED"
    echo "admin.enableServer=$ZOO_ADMINSERVER_ENABLED"
    if [ -z "${ZOO_SERVERS:-}" ]; then
      echo "server.1=localhost:2888:3888;2181"
    else
      # Word splitting on purpose: one entry per word.
      for server in $ZOO_SERVERS; do echo "$server"; done
    fi
    if [ -n "${ZOO_4LW_COMMANDS_WHITELIST:-}" ]; then
      echo "4lw.commands.whitelist=$ZOO_4LW_COMMANDS_WHITELIST"
    fi
    for line in ${ZOO_CFG_EXTRA:-}; do echo "$line"; done
  } >"$config"
fi

# Logging to standard output (Debian's ZooKeeper logs through log4j 1.2).
log4j="$ZOO_CONF_DIR/log4j.properties"
if [ ! -f "$log4j" ]; then
  cat >"$log4j" <<'EOF'
log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.Target=System.out
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} [myid:%X{myid}] - %-5p [%t:%C{1}@%L] - %m%n
EOF
fi

if [ ! -f "$ZOO_DATA_DIR/myid" ]; then
  echo "${ZOO_MY_ID:-1}" >"$ZOO_DATA_DIR/myid"
fi

# zookeeper.jar's manifest names the rest of its class path; the log4j
# binding for slf4j is added here.
classpath=/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar
# shellcheck disable=SC2086  # the JVM flags are word lists on purpose
exec java "-Xmx${ZK_SERVER_HEAP:-256}m" ${SERVER_JVMFLAGS:-} ${JVMFLAGS:-} \
  -Dzookeeper.log.dir="$ZOO_LOG_DIR" \
  -Dlog4j.configuration="file:$log4j" \
  -Dzookeeper.jmx.log4j.disable=true \
  -cp "$classpath" \
  org.apache.zookeeper.server.quorum.QuorumPeerMain "$config"
