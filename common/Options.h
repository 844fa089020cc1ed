#pragma once

// groupcoordd's options, each declared once: key, kind, default, bounds and
// help. Everything else follows from this table:
//   - the fields of server::ServerConfig start at these defaults, and so do
//     the parts' own configurations wherever they stand for an option
//     (options::defaultInt / defaultText, evaluated at compile time: a key
//     not in the table does not compile);
//   - loading checks an integer against its bounds and a choice against its
//     choices (server/Config.cpp);
//   - `groupcoordd --help`, packaging/groupcoordd.properties, docs/options.md
//     and the README's table of first options are printed from it
//     (server/OptionDocs.h); tests/server/OptionDocsTest.cpp fails when a
//     file in the repository is not what the table prints.
//
// Adding an option: a row here, a field in server::ServerConfig bound to its
// key in server/Config.cpp, and the code that uses it; then
// `scripts/dev.sh generate` writes the files above anew.

#include <cstdint>
#include <limits>
#include <string_view>

namespace groupcoord::options {

enum class Kind : uint8_t {
  Integer,  // a whole number within [min, max]
  Text,     // any text (a path, a host, a list)
  Choice,   // one of the '|'-separated words of valueName
  Secret,   // text masked wherever the configuration is shown
};

struct Option {
  std::string_view key;        // the properties key, "listen.port"
  Kind kind = Kind::Text;
  std::string_view valueName;  // "PORT"; for a Choice its words, "allow|tls|never"
  std::string_view section;    // heading in the properties file and docs/options.md
  int64_t intDefault = 0;      // Integer
  std::string_view textDefault;  // Text, Choice, Secret
  int64_t min = std::numeric_limits<int64_t>::min();
  int64_t max = std::numeric_limits<int64_t>::max();
  std::string_view help;       // sentences; printers wrap them
  // What a value may be, in words, where [min, max] alone does not say it
  // ("-1 (none), 0 (any free port) or a port"); empty: the bounds.
  std::string_view allowed;
  bool first = false;          // one of the README's "ones that matter first"
  bool setInExample = false;   // set (not commented out) in the example properties file
};

namespace detail {
constexpr Option integer(std::string_view section, std::string_view key, std::string_view valueName, int64_t def,
                         int64_t min, int64_t max, std::string_view help, bool first = false) {
  Option o;
  o.key = key;
  o.kind = Kind::Integer;
  o.valueName = valueName;
  o.section = section;
  o.intDefault = def;
  o.min = min;
  o.max = max;
  o.help = help;
  o.first = first;
  return o;
}
constexpr Option text(std::string_view section, std::string_view key, std::string_view valueName,
                      std::string_view def, std::string_view help, bool first = false, Kind kind = Kind::Text) {
  Option o;
  o.key = key;
  o.kind = kind;
  o.valueName = valueName;
  o.section = section;
  o.textDefault = def;
  o.help = help;
  o.first = first;
  return o;
}
constexpr Option choice(std::string_view section, std::string_view key, std::string_view words,
                        std::string_view def, std::string_view help, bool first = false) {
  return text(section, key, words, def, help, first, Kind::Choice);
}
constexpr Option secret(std::string_view section, std::string_view key, std::string_view valueName,
                        std::string_view help) {
  return text(section, key, valueName, "", help, false, Kind::Secret);
}
constexpr Option allowing(std::string_view words, Option o) {
  o.allowed = words;
  return o;
}
constexpr Option inExample(Option o) {
  o.setInExample = true;
  return o;
}
constexpr int64_t kNoMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kPortMax = 65535;

constexpr std::string_view kNetwork = "Network";
constexpr std::string_view kHttp = "HTTP: /metrics (Prometheus text format), /health/live, /health/ready";
constexpr std::string_view kClients = "Clients: authentication and TLS (each off while its files are unset)";
constexpr std::string_view kIdentity = "Identity";
constexpr std::string_view kZooKeeper = "ZooKeeper";
constexpr std::string_view kGroups = "Groups";
constexpr std::string_view kPlacement = "Placement of groups across servers";
constexpr std::string_view kKafka = "Kafka port: Kafka clients join groupcoord groups (docs/kafka.md)";
constexpr std::string_view kLimits = "Limits";
constexpr std::string_view kLogging = "Logging";
}  // namespace detail

// Every option, in the order --help, the properties file and the docs list
// them.
inline constexpr Option kOptions[] = {
    // Network.
    detail::text(detail::kNetwork, "listen.address", "ADDRESS", "0.0.0.0",
                 "Address to listen on for clients (an IPv4 or IPv6 literal, or a name).", true),
    detail::integer(detail::kNetwork, "listen.port", "PORT", 7400, 0, detail::kPortMax,
                    "TCP port to listen on for clients; 0 takes any free port (see port.file).", true),
    detail::text(detail::kNetwork, "advertised.host", "HOST", "",
                 "Host clients are told to reach this server at (ListGroups, CreateGroup name each group's "
                 "controller). Empty: the listen address, or this machine's hostname when listening on every "
                 "address. Set it whenever clients reach this server through another name or address (NAT, a "
                 "container's published port, a load balancer in front of one server).",
                 true),
    detail::integer(detail::kNetwork, "advertised.port", "PORT", 0, 0, detail::kPortMax,
                    "Port clients are told to reach this server at; 0: the bound port.", true),
    detail::allowing("-1 (none), 0 (any free port) or a port up to 65535",
    detail::integer(detail::kNetwork, "internal.listen.port", "PORT", -1, -1, detail::kPortMax,
                    "A second protocol port on listen.address, for peers and for clients inside this server's own "
                    "network (a container network), where the advertised address may lead elsewhere. Answers given "
                    "through it name the servers' internal addresses, and the other servers dial this one there "
                    "(the status page asking a group's controller). -1: none; 0: any free port.")),
    detail::text(detail::kNetwork, "internal.advertised.host", "HOST", "",
                 "Host the internal port is reached at (in a compose file, the service name). Empty: as "
                 "advertised.host defaults."),
    detail::integer(detail::kNetwork, "internal.advertised.port", "PORT", 0, 0, detail::kPortMax,
                    "Port the internal port is reached at; 0: the bound internal port."),
    detail::text(detail::kNetwork, "port.file", "PATH", "",
                 "Once listening, write the bound port to this file. Empty: none."),

    // Kafka port.
    detail::allowing("-1 (no Kafka port), 0 (any free port) or a port up to 65535",
    detail::integer(detail::kKafka, "kafka.listen.port", "PORT", -1, -1, detail::kPortMax,
                    "A port on listen.address speaking Kafka's group protocol, so that Kafka consumers (librdkafka, "
                    "kafka-python, KafkaJS, the Java client) join groupcoord groups and commit offsets there. TLS "
                    "and the client options as on listen.port. -1: none; 0: any free port (see kafka.port.file).")),
    detail::integer(detail::kKafka, "kafka.advertised.port", "PORT", 0, 0, detail::kPortMax,
                    "Port Kafka clients are told to reach this server's Kafka port at (Metadata, FindCoordinator), "
                    "at advertised.host; 0: the bound Kafka port."),
    detail::text(detail::kKafka, "kafka.port.file", "PATH", "",
                 "Once listening, write the bound Kafka port to this file. Empty: none."),
    detail::integer(detail::kKafka, "kafka.group.initial.rebalance.delay.ms", "MS", 3000, 0, 300'000,
                    "A Kafka group with no member waits this long after its first join for more, extended by each "
                    "join up to the rebalance timeout, so that consumers starting together form one generation, in "
                    "milliseconds; 0: no wait."),
    detail::integer(detail::kKafka, "kafka.group.min.session.timeout.ms", "MS", 6000, 1, detail::kNoMax,
                    "Smallest session timeout a Kafka consumer may ask for, in milliseconds."),
    detail::integer(detail::kKafka, "kafka.group.max.session.timeout.ms", "MS", 1800000, 1, detail::kNoMax,
                    "Largest session timeout a Kafka consumer may ask for, in milliseconds; at least "
                    "kafka.group.min.session.timeout.ms."),
    detail::integer(detail::kKafka, "kafka.group.consumer.session.timeout.ms", "MS", 45000, 1000, 1'800'000,
                    "A member of a group under Kafka's consumer protocol (group.protocol=consumer, KIP-848) silent "
                    "this long is removed and its partitions move, in milliseconds. Set by the group: such a "
                    "client does not choose it."),
    detail::integer(detail::kKafka, "kafka.group.consumer.heartbeat.interval.ms", "MS", 5000, 100, 900'000,
                    "How often members of a group under Kafka's consumer protocol heartbeat, in milliseconds, told "
                    "to them in every answer; at most half of kafka.group.consumer.session.timeout.ms. A member "
                    "learns of a new assignment at its next heartbeat, so this bounds how quickly partitions move."),
    detail::integer(detail::kKafka, "kafka.group.consumer.waiting.heartbeat.interval.ms", "MS", 100, 10, 900'000,
                    "The heartbeat interval told to a member of a group under Kafka's consumer protocol while it "
                    "waits for partitions of its target that other members still hold (at most "
                    "kafka.group.consumer.heartbeat.interval.ms), in milliseconds: it asks again this soon, so a "
                    "partition is given to it soon after its holder lets it go. Back to the group's interval once "
                    "it holds its target."),

    // HTTP.
    detail::text(detail::kHttp, "http.address", "ADDRESS", "",
                 "Address of the HTTP server for /metrics, /health/* and the status page. Empty: the listen "
                 "address."),
    detail::allowing("-1 (no HTTP server), 0 (any free port) or a port up to 65535",
    detail::integer(detail::kHttp, "http.port", "PORT", 7401, -1, detail::kPortMax,
                    "Port of the HTTP server; 0 takes any free port (see http.port.file); -1 turns the HTTP server "
                    "off.")),
    detail::text(detail::kHttp, "http.port.file", "PATH", "",
                 "Once the HTTP server listens, write its bound port to this file. Empty: none."),
    detail::integer(detail::kHttp, "http.max.connections", "N", 1024, 1, 100'000,
                    "Open HTTP connections, all addresses together; past it a new connection takes the place of the "
                    "one that has waited longest for a request, or is refused when every one is busy."),
    detail::integer(detail::kHttp, "http.max.connections.per.source", "N", 64, 1, 100'000,
                    "Open HTTP connections from one source address, at most http.max.connections; past it a new "
                    "one takes the place of that address's connection that has waited longest for a request."),
    detail::integer(detail::kHttp, "http.head.timeout.ms", "MS", 5000, 100, 600'000,
                    "A whole request head must arrive within this long of its first byte (for HTTPS, of the "
                    "accept: the handshake counts), else the connection is closed."),
    detail::integer(detail::kHttp, "http.idle.timeout.ms", "MS", 5000, 100, 600'000,
                    "An HTTP connection with no request under way is closed after this long."),
    detail::integer(detail::kHttp, "http.write.timeout.ms", "MS", 10000, 100, 600'000,
                    "An answer that makes no progress for this long (the client does not read it) closes its "
                    "connection."),
    detail::integer(detail::kHttp, "http.status.threads", "N", 4, 1, 64,
                    "Threads answering the status page and /api/ (each may wait for another server). /health/* and "
                    "/metrics never wait for them."),
    detail::integer(detail::kHttp, "http.status.queue", "N", 32, 1, 10'000,
                    "Status page and /api/ requests waiting for a thread; past it they are answered 503 with "
                    "Retry-After."),

    // Clients: authentication and TLS.
    detail::text(detail::kClients, "auth.credentials.file", "PATH", "",
                 "File of users, roles and salted secret hashes (make its lines with `groupctl auth hash`). Set: "
                 "clients must Authenticate. Empty: no authentication."),
    detail::choice(detail::kClients, "auth.plain", "allow|tls|never", "allow",
                   "Authenticate version 0 sends the secret as it is; version 1 (SCRAM-SHA-256, what the clients "
                   "speak by default) never does. allow: both; tls: version 0 only on TLS connections (needs "
                   "tls.certificate.file); never: version 1 only."),
    detail::text(detail::kClients, "auth.permissions.file", "PATH", "",
                 "File of per-group rules, one per line, such as `allow user:orders-svc join,commit,fetch,describe "
                 "prefix:orders.` or `deny role:member delete,rewind group:*` (manage it with `groupctl acl`). "
                 "Read again on SIGHUP, without a restart and without dropping a connection; a bad file is refused "
                 "and the rules in force stay. Set: a call on a group needs a rule allowing it. Empty: members may "
                 "use every group and admins may do everything. Needs auth.credentials.file."),
    detail::text(detail::kClients, "tls.certificate.file", "PATH", "",
                 "PEM certificate chain of this server. Set, with tls.key.file: clients speak TLS 1.2 or later."),
    detail::text(detail::kClients, "tls.key.file", "PATH", "", "PEM private key of tls.certificate.file."),
    detail::text(detail::kClients, "tls.ca.file", "PATH", "",
                 "PEM CA certificates. Set: clients must present a certificate signed by one of them (needs "
                 "tls.certificate.file and tls.key.file)."),
    detail::text(detail::kClients, "peer.tls.ca.file", "PATH", "",
                 "PEM CA certificates the status page trusts for other servers' certificates when it asks a "
                 "group's controller for the group (TLS on; needs tls.certificate.file and tls.key.file). Empty: "
                 "tls.ca.file."),

    // Identity.
    detail::inExample(detail::integer(detail::kIdentity, "server.id", "ID", 1, 0, std::numeric_limits<int32_t>::max(),
                                      "This server's id, >= 0. Every server in front of one ZooKeeper ensemble "
                                      "needs a distinct id.",
                                      true)),

    // ZooKeeper.
    detail::inExample(detail::text(detail::kZooKeeper, "zk.connect", "HOSTS", "127.0.0.1:2181",
                                   "The ensemble: host:port[,host:port...], every node of it.", true)),
    detail::text(detail::kZooKeeper, "zk.root", "PATH", "/groupcoord",
                 "ZooKeeper path below which groupcoord keeps everything. Servers that should share groups share "
                 "this root.",
                 true),
    detail::text(detail::kZooKeeper, "zk.topics.path", "PATH", "/brokers/topics",
                 "ZooKeeper path of topic metadata, in Kafka's layout; in front of a Kafka cluster's ensemble the "
                 "partition counts are found there with no set-up.",
                 true),
    detail::text(detail::kZooKeeper, "zk.brokers.path", "PATH", "/brokers/ids",
                 "ZooKeeper path of broker registrations, in Kafka's layout: each broker's \"rack\" field places "
                 "partitions with members in the same rack (rack-aware assignment). A broker without a rack, or a "
                 "path that does not exist, leaves assignment as without racks."),
    detail::integer(detail::kZooKeeper, "zk.session.timeout.ms", "MS", 10000, 1, 3'600'000,
                    "ZooKeeper session timeout asked for, in milliseconds (the ensemble bounds it to 2..20 of its "
                    "ticks). When this server dies, its groups move to another server after this long.",
                    true),
    detail::allowing("0 (no limit) .. 86400000",
    detail::integer(detail::kZooKeeper, "zk.connect.wait.ms", "MS", 30000, 0, 86'400'000,
                    "At start, how long to wait for a first ZooKeeper session before exiting non-zero. 0: as long "
                    "as it takes (a line every 10 s says so, and /health/ready answers 503 with the reason "
                    "meanwhile).")),
    detail::integer(detail::kZooKeeper, "zk.lease.margin.ms", "MS", 0, 0, 3'600'000,
                    "Heartbeats and registrations stop being answered from memory this long before ZooKeeper could "
                    "expire this server's session, so that a server cut off from ZooKeeper stops renewing its "
                    "members before another server can take its groups (docs/design.md, \"The session lease\"). 0: "
                    "a fifth of the granted session timeout, at least 200 ms; else less than "
                    "zk.session.timeout.ms."),
    detail::text(detail::kZooKeeper, "zk.digest.user", "USER", "",
                 "ZooKeeper digest authentication user, without ':'. Empty: no authentication. Set together with "
                 "zk.digest.password."),
    detail::secret(detail::kZooKeeper, "zk.digest.password", "PASSWORD",
                   "ZooKeeper digest authentication password; never logged."),

    // Groups.
    detail::integer(detail::kGroups, "group.min.session.timeout.ms", "MS", 1000, 1, detail::kNoMax,
                    "Smallest session timeout a group may ask for, in milliseconds.", true),
    detail::integer(detail::kGroups, "group.max.session.timeout.ms", "MS", 300000, 1, detail::kNoMax,
                    "Largest session timeout a group may ask for, in milliseconds; at least "
                    "group.min.session.timeout.ms.",
                    true),
    detail::integer(detail::kGroups, "group.join.window.ms", "MS", 100, 0, 60'000,
                    "While a group forms (nobody in it yet) or its membership is moving, its new members wait this "
                    "long after the latest join for more, so that joins arriving together move the generation "
                    "once, in milliseconds; 0: no wait.",
                    true),
    detail::integer(detail::kGroups, "group.join.window.max.ms", "MS", 3000, 0, 300'000,
                    "The longest a join waits for others: group.join.window.ms restarts with every join, and this "
                    "caps it (at least group.join.window.ms), so a steady trickle of joins still moves the "
                    "generation, in milliseconds.",
                    true),
    detail::integer(detail::kGroups, "protocol.register.max.version", "V", 2, 1, 2,
                    "The newest RegisterConsumer version this server answers. A newer one is answered "
                    "UNSUPPORTED_VERSION, as a server of an older release answers it, and clients then speak the "
                    "one before: for a fleet rolled back to a release that speaks 1, or to try clients against "
                    "one."),
    detail::integer(detail::kGroups, "heartbeat.max.wait.ms", "MS", 30'000, 0, 600'000,
                    "Longest a member's heartbeat (version 1, with a wait) is held at its controller while nothing "
                    "changes for the member, in milliseconds; it is answered the moment something does, so members "
                    "learn of a rebalance at once. Also at most a third of the group's session timeout. 0: every "
                    "heartbeat is answered at once and members fall back to beating at their interval."),
    detail::integer(detail::kGroups, "group.max.metadata.bytes", "BYTES", 4096, 0, 65'536,
                    "Largest member metadata a registration may carry (RegisterConsumer version 1); a larger one is "
                    "answered INVALID_REQUEST."),

    // Placement.
    detail::integer(detail::kPlacement, "handover.settle.ms", "MS", 10000, 0, 3'600'000,
                    "A server is given groups (it becomes their preferred controller, and their current "
                    "controllers hand them over) only once it has been live this long, in milliseconds: a server "
                    "that comes and goes draws no group.",
                    true),
    detail::integer(detail::kPlacement, "handover.max.in.flight", "N", 8, 1, 10'000,
                    "Groups this server hands over to other servers at once (after a server joins, or while this "
                    "one is drained).",
                    true),
    detail::integer(detail::kPlacement, "placement.epsilon.percent", "PCT", 10, 1, 1000,
                    "Groups are placed by load (docs/design.md, \"Placement\"): no server is given "
                    "more than ceil((1 + PCT/100) x total weight / servers); a group whose preferred server is full "
                    "goes to the next in its own hash order."),
    detail::integer(detail::kPlacement, "placement.margin.percent", "PCT", 5, 0, 1000,
                    "A server hands groups over for load only when it is over its bound by more than this (percent "
                    "of the bound), so small changes of weight move nothing."),
    detail::integer(detail::kPlacement, "placement.interval.ms", "MS", 30000, 0, 86'400'000,
                    "A server over its bound starts handing groups over for load at most this often, in "
                    "milliseconds."),
    detail::choice(detail::kPlacement, "placement.weight", "members|groups", "members",
                   "What a group weighs: members (its member count plus placement.group.weight) or groups "
                   "(placement.group.weight alone, so that servers count groups)."),
    detail::integer(detail::kPlacement, "placement.group.weight", "N", 10, 1, 1'000'000,
                    "The weight every group has besides its members, so that empty groups count."),

    // Limits.
    detail::integer(detail::kLimits, "max.frame.bytes", "BYTES", 1 << 20, 64, int64_t{1} << 30,
                    "Largest request frame, in bytes; a larger one closes its connection.", true),
    detail::integer(detail::kLimits, "max.connections", "N", 20000, 1, 10'000'000,
                    "Most client connections; past it, new ones are closed at once. The open-file limit must be "
                    "above it (the systemd unit sets LimitNOFILE).",
                    true),
    detail::integer(detail::kLimits, "max.inflight.per.connection", "N", 1024, 1, 1'000'000,
                    "Most requests in flight on one connection; past it the server stops reading that connection "
                    "until responses drain."),
    detail::integer(detail::kLimits, "idle.timeout.ms", "MS", 30000, 1, detail::kNoMax,
                    "A frame must arrive whole within this long (milliseconds) of its first byte, else its "
                    "connection is closed. A connection with nothing pending is never closed for idleness.",
                    true),
    detail::integer(detail::kLimits, "max.output.buffer.bytes", "BYTES", 4 << 20, 1024, detail::kNoMax,
                    "A connection whose unread responses pass this many bytes is closed.", true),
    detail::allowing("0 (one per core the process may run on) .. 1024",
    detail::integer(detail::kLimits, "io.threads", "N", 0, 0, 1024,
                    "I/O threads; 0: one per core the process may run on (its CPU affinity).")),
    detail::integer(detail::kLimits, "shutdown.grace.ms", "MS", 5000, 0, 3'600'000,
                    "On SIGTERM or SIGINT, how long in-flight requests may take to be answered, in milliseconds."),

    // Logging.
    detail::choice(detail::kLogging, "log.level", "trace|debug|info|warn|error|critical|off", "info",
                   "How much is logged: trace, debug, info, warn, error, critical or off.", true),
    detail::text(detail::kLogging, "log.file", "PATH", "",
                 "Log to this file. Empty: standard error (under systemd: the journal).", true),
};

// The row of `key`; at compile time, a key not in the table is an error.
constexpr const Option& find(std::string_view key) {
  for (const Option& o : kOptions) {
    if (o.key == key) return o;
  }
  throw "no such option in common/Options.h";
}

// An option's default, for the fields that stand for it.
consteval int64_t defaultInt(std::string_view key) {
  const Option& o = find(key);
  if (o.kind != Kind::Integer) throw "not an integer option";
  return o.intDefault;
}
consteval std::string_view defaultText(std::string_view key) {
  const Option& o = find(key);
  if (o.kind == Kind::Integer) throw "not a text option";
  return o.textDefault;
}

}  // namespace groupcoord::options
