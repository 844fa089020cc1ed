#include "client/groupctl/Help.h"

namespace groupcoord::groupctl {

const char* const kOverallHelp =
    "usage: groupctl [--bootstrap HOST:PORT[,HOST:PORT]] [--output table|json] COMMAND ...\n"
    "\n"
    "commands:\n"
    "  list                          all groups\n"
    "  describe GROUP [--history N]  who owns which partition, the members, and why the group rebalanced\n"
    "  create GROUP --topics a,b --session-timeout 10s [--ephemeral]\n"
    "  delete GROUP\n"
    "  offsets GROUP                 committed offsets\n"
    "  rewind GROUP --topic T [--partition P] (--to-offset N | --shift-by N | --to-earliest)\n"
    "         [--dry-run | --execute]\n"
    "  topic create T --partitions N --zookeeper CONNECT [--topics-path /brokers/topics]\n"
    "  topic grow T --partitions N --zookeeper CONNECT [--topics-path /brokers/topics]\n"
    "  config GROUP --zookeeper CONNECT [--session-timeout D] [--heartbeat-interval D] [--reset]\n"
    "                                a group's own settings (Kafka consumer protocol)\n"
    "  servers                       the servers, their load and bound, and the groups that should move\n"
    "  drain SERVER_ID [--wait DURATION]   move every group off a server before maintenance\n"
    "  undrain SERVER_ID             let a drained server take groups again\n"
    "  auth hash --user U --role member|admin [--iterations N]   (secret on standard input)\n"
    "  acl list|add|remove --file PATH ...   the per-group rules of auth.permissions.file\n"
    "\n"
    "global options:\n"
    "  --bootstrap LIST   groupcoordd servers (default $GROUPCTL_BOOTSTRAP, else 127.0.0.1:7400)\n"
    "  --output FORMAT    table (default) or json\n"
    "  --user U           authenticate as U (servers with auth.credentials.file set)\n"
    "  --secret-file F    U's secret: the first line of F (never on the command line); proven with\n"
    "                     SCRAM-SHA-256, never sent\n"
    "  --plain-auth       send the secret itself (Authenticate version 0), for servers without SCRAM\n"
    "  --tls-ca-file F    speak TLS; trust servers whose certificate chains to the CAs in F (PEM)\n"
    "  --tls-server-name N  the name the server certificate must carry (default: the bootstrap host)\n"
    "  --tls-no-verify-hostname  accept any certificate of a trusted CA, whatever name it carries\n"
    "  --tls-certificate-file F, --tls-key-file K  a client certificate, for servers that ask for one\n"
    "  --help             this text; `groupctl COMMAND --help` for one command\n"
    "\n"
    "exit codes: 0 success, 1 the server refused, 2 usage error, 3 no server reachable\n";

const std::map<std::string, std::string> kCommandHelp = {
    {"list", "usage: groupctl list\n  Lists every group with its controller, generation and member count.\n"},
    {"describe",
     "usage: groupctl describe GROUP [--history N]\n"
     "  Asks the group's controller everything it knows (DescribeGroup) and shows:\n"
     "  the group (generation, state, controller, session timeout, topics); one row\n"
     "  per partition with its committed offset, the member holding it, that\n"
     "  member's address and client id, and the member it is waiting to move to;\n"
     "  one row per member with its counts; and the last N rebalance reasons\n"
     "  (default 10, 0 for none), newest last. --output json carries all of it,\n"
     "  the whole history included.\n"},
    {"create",
     "usage: groupctl create GROUP --topics a,b --session-timeout DURATION [--ephemeral]\n"
     "                      [--assignment server|client]\n"
     "  DURATION: 500ms, 10s, 2m, or plain milliseconds.\n"
     "  --ephemeral: the group goes away when its last member leaves.\n"
     "  --assignment: server (the default) assigns the topics' partitions; client makes a\n"
     "  membership-only group whose members share out work themselves from the member\n"
     "  list (--topics is then optional: offsets may still be committed for them).\n"},
    {"delete", "usage: groupctl delete GROUP\n  Deletes a group that has no members.\n"},
    {"offsets", "usage: groupctl offsets GROUP\n  Shows the group's committed offsets.\n"},
    {"rewind",
     "usage: groupctl rewind GROUP --topic T [--partition P]\n"
     "                      (--to-offset N | --shift-by N | --to-earliest) [--dry-run | --execute]\n"
     "  Moves committed offsets. Without --execute only the plan (current -> new per\n"
     "  partition) is printed and nothing changes. Without --partition every partition\n"
     "  of T with a committed offset is moved. --shift-by takes a signed count; results\n"
     "  below 0 become 0. --to-earliest means offset 0.\n"},
    {"topic",
     "usage: groupctl topic create T --partitions N --zookeeper CONNECT [--topics-path PATH]\n"
     "       groupctl topic grow T --partitions N --zookeeper CONNECT [--topics-path PATH]\n"
     "  create writes topic metadata (Kafka's JSON layout, with a new topic id) under PATH\n"
     "  (default /brokers/topics), creating missing parents. Fails if the topic already exists.\n"
     "  grow raises topic T's partition count to N: the topic keeps its id and the existing\n"
     "  partitions their replicas; new partition p gets the replicas of partition p % (the old\n"
     "  count). The znode is written only if nobody changed it since it was read (else it fails\n"
     "  and writes nothing: run it again). Fails if T does not exist or N is not more than its\n"
     "  partitions (they cannot be removed, as in Kafka). Consumers of T see the new partitions\n"
     "  at once: its groups rebalance onto them.\n"},
    {"config",
     "usage: groupctl config GROUP --zookeeper CONNECT [--zk-root PATH]\n"
     "                      [--session-timeout DURATION] [--heartbeat-interval DURATION] | [--reset]\n"
     "  A group's own settings, over the server's options for it. Today they are those of Kafka's\n"
     "  consumer protocol (group.protocol=consumer): --session-timeout (as\n"
     "  kafka.group.consumer.session.timeout.ms) and --heartbeat-interval (as\n"
     "  kafka.group.consumer.heartbeat.interval.ms), each within that option's bounds; the interval\n"
     "  is at most half the session. Settings not given keep their value; --reset removes them all\n"
     "  (the server's options apply again). Without a setting, shows them. Written to\n"
     "  PATH/config/groups/GROUP (PATH: the servers' zk.root, default /groupcoord) only if nobody\n"
     "  changed it since it was read. The group's controller applies a change at once: members\n"
     "  hear the new interval in their next heartbeat's answer, and sessions are judged by the new\n"
     "  timeout from then on. Nothing is reassigned.\n"},
    {"servers",
     "usage: groupctl servers\n"
     "  How groups are placed on the servers, as the bootstrap server sees it\n"
     "  (DescribeServers). One row per live server, and per server ListGroups names\n"
     "  as a controller:\n"
     "    SERVER   its id\n"
     "    ADDRESS  where clients reach it\n"
     "    STATE    candidate (groups are placed on it), drained (it hands its groups\n"
     "             over), settling (just started: it takes groups once settled), or\n"
     "             not live\n"
     "    GROUPS   how many groups it controls\n"
     "    LOAD     the weight of the groups it controls (by default a group weighs\n"
     "             its member count plus a fixed weight, so that empty groups\n"
     "             count; the rule line below says which)\n"
     "    BOUND    B, the most a candidate should carry: ceil((1+eps) x total /\n"
     "             candidates); a candidate over B by more than the margin gives\n"
     "             groups up, heaviest first\n"
     "    AFTER    its load once the groups that should move have moved\n"
     "  and a row \"-\" for the groups that have no controller at the moment. Then the\n"
     "  rule with its figures (eps, margin, weight), the groups that should move\n"
     "  (GROUP, WEIGHT, FROM, TO; FROM \"-\": it has no controller now), and which\n"
     "  server's view this is, with the total weight and the number of candidates;\n"
     "  \"still reading the fleet\" means that server has not read every group's\n"
     "  controller yet, and moves no group for load until it has. A server older\n"
     "  than DescribeServers gives the SERVER, ADDRESS and\n"
     "  GROUPS of the servers that control groups only (a note says so on standard\n"
     "  error). --output json: docs/protocol.md, \"DescribeServers as JSON\".\n"},
    {"drain",
     "usage: groupctl drain SERVER_ID [--wait DURATION]\n"
     "  Marks server SERVER_ID drained: it hands every group it controls over to the\n"
     "  other servers and takes no new group until `groupctl undrain SERVER_ID`.\n"
     "  Without --wait it returns once the mark is written; the groups move over the\n"
     "  next seconds. With --wait (DURATION: 500ms, 60s, 2m, or plain milliseconds)\n"
     "  it asks every 500 ms which groups still name SERVER_ID as their controller,\n"
     "  printing them on standard error as they change, until none does; exit code 1\n"
     "  if some still do when DURATION ends (the drain stays in effect). Draining a\n"
     "  drained server succeeds. Needs an admin on servers that authenticate.\n"},
    {"undrain",
     "usage: groupctl undrain SERVER_ID\n"
     "  Removes the drain mark of server SERVER_ID: it takes groups again.\n"
     "  Undraining a server that is not drained succeeds. Needs an admin on servers\n"
     "  that authenticate.\n"},
    {"acl",
     "usage: groupctl acl list --file PATH [--principal P] [--group NAME]\n"
     "       groupctl acl add|remove --file PATH --allow|--deny --principal P --operation OPS\n"
     "                               --group NAME|'*' | --prefix TEXT\n"
     "  Lists, adds or removes rules of groupcoordd's permissions file\n"
     "  (auth.permissions.file). P is user:NAME, role:member, role:admin or '*' (any\n"
     "  user); OPS is a comma-separated list of join (also heartbeat and leave),\n"
     "  commit, fetch, describe (also ListGroups), create, delete, rewind, or all.\n"
     "  --group names one group ('*': every group); --prefix every group whose name\n"
     "  starts with TEXT. A call on a group needs a rule allowing it and none denying\n"
     "  it. The file is checked first (a bad line is named, nothing changes) and\n"
     "  replaced whole; servers apply it on SIGHUP. `list --group NAME` shows the\n"
     "  rules that apply to that group. remove exits 1 when no rule matched.\n"
     "  Contacts no server.\n"
     "  Example: groupctl acl add --file /etc/groupcoord/permissions --allow \\\n"
     "             --principal user:orders-svc --operation join,commit,fetch,describe --prefix orders.\n"},
    {"auth",
     "usage: groupctl auth hash --user U --role member|admin [--iterations N] < secret\n"
     "  Reads U's secret from the first line of standard input and prints a line for\n"
     "  groupcoordd's credentials file (auth.credentials.file): user, role, a random salt\n"
     "  and the PBKDF2-HMAC-SHA256 hash (N iterations, default 200000). Contacts no server.\n"
     "  Example: printf '%s\\n' \"$SECRET\" | groupctl auth hash --user ops --role admin >> credentials\n"},
};

}  // namespace groupcoord::groupctl
