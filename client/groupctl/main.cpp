// groupctl: the operator's command line for groupcoord, in the manner of
// kafka-consumer-groups.sh. Tables for people by default, --output json for
// scripts. Exit codes: 0 success, 1 the server refused the operation,
// 2 usage error, 3 no server could be reached.
//
// JSON shapes (stable; fields are only ever added):
//   list          {"groups":[GroupInfo...]}
//   describe      the DescribeGroup answer as JSON, the same document as the status page's
//                 /api/groups/NAME (docs/protocol.md, "DescribeGroup as JSON")
//   create        {"group":NAME,"controller":Broker|null}
//   delete        {"group":NAME,"deleted":true}
//   offsets       {"group":NAME,"offsets":[Offset...]}
//   rewind        {"group":NAME,"topic":T,"executed":BOOL,
//                  "partitions":[{"topic","partition","current","new","error"}]}
//                 ("error" is the protocol error name, "NONE" when applied, null in a dry run)
//   topic create  {"topic":T,"partitions":N,"path":ZNODE}
//   drain         {"server":ID,"draining":true,"waited":BOOL}
//                 ("waited": --wait was given and no group names ID as its controller any more)
//   undrain       {"server":ID,"draining":false}
//   servers       {"servers":[{"id","host","port","groups":[NAME...]}],"without_controller":[NAME...]}
//   GroupInfo, Broker, Offset: as in docs/protocol.md, "DescribeGroup as JSON"

#include <algorithm>
#include <cctype>
#include <climits>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/Admin.h"
#include "common/Credentials.h"
#include "common/TopicWriter.h"
#include "protocol/DescribeJson.h"
#include "protocol/PartitionRows.h"

namespace {

using namespace groupcoord;
using client::Admin;
using client::Endpoint;
using client::Status;
using protocol::ErrorCode;
using nlohmann::json;

constexpr int kExitOk = 0;
constexpr int kExitServer = 1;
constexpr int kExitUsage = 2;
constexpr int kExitUnreachable = 3;

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
    "  servers                       the servers controlling groups, and how many each controls\n"
    "  drain SERVER_ID [--wait DURATION]   move every group off a server before maintenance\n"
    "  undrain SERVER_ID             let a drained server take groups again\n"
    "  auth hash --user U --role member|admin [--iterations N]   (secret on standard input)\n"
    "\n"
    "global options:\n"
    "  --bootstrap LIST   groupcoordd servers (default $GROUPCTL_BOOTSTRAP, else 127.0.0.1:7400)\n"
    "  --output FORMAT    table (default) or json\n"
    "  --user U           authenticate as U (servers with auth.credentials.file set)\n"
    "  --secret-file F    U's secret: the first line of F (never on the command line)\n"
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
     "  Writes topic metadata (Kafka's JSON layout) under PATH (default /brokers/topics),\n"
     "  creating missing parents. Fails if the topic already exists.\n"},
    {"servers",
     "usage: groupctl servers\n"
     "  One row per server that controls groups (as ListGroups names them): its id,\n"
     "  address and the number of groups it controls, and a row \"-\" for the groups\n"
     "  that have no controller at the moment. A server that controls no group does\n"
     "  not appear.\n"},
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
    {"auth",
     "usage: groupctl auth hash --user U --role member|admin [--iterations N] < secret\n"
     "  Reads U's secret from the first line of standard input and prints a line for\n"
     "  groupcoordd's credentials file (auth.credentials.file): user, role, a random salt\n"
     "  and the PBKDF2-HMAC-SHA256 hash (N iterations, default 200000). Contacts no server.\n"
     "  Example: printf '%s\\n' \"$SECRET\" | groupctl auth hash --user ops --role admin >> credentials\n"},
};

struct UsageError {
  std::string message;
};

// Arguments split into positionals and --options. Options take their value
// from "--name=value" or from the next argument, which may itself begin
// with '-' (so "--shift-by -3" works).
struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;
  std::set<std::string> flags;
};

const std::set<std::string> kValueOptions = {"--bootstrap", "--output",      "--topics",     "--session-timeout",
                                             "--topic",     "--partition",   "--to-offset",  "--shift-by",
                                             "--partitions", "--zookeeper",  "--topics-path",
                                             "--user",      "--secret-file", "--tls-ca-file", "--tls-server-name",
                                             "--role",      "--iterations",  "--tls-certificate-file", "--tls-key-file",
                                             "--wait"};
const std::set<std::string> kFlagOptions = {"--ephemeral",   "--dry-run", "--execute", "--to-earliest",
                                            "--help",        "--tls-no-verify-hostname"};

Args parseArgs(int argc, char** argv) {
  Args out;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h") a = "--help";
    if (a.size() > 2 && a.rfind("--", 0) == 0) {
      std::string name = a, value;
      bool inlineValue = false;
      if (auto eq = a.find('='); eq != std::string::npos) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
        inlineValue = true;
      }
      if (kValueOptions.count(name)) {
        if (!inlineValue) {
          if (i + 1 >= argc) throw UsageError{name + " needs a value"};
          value = argv[++i];
        }
        if (out.options.count(name)) throw UsageError{name + " given twice"};
        out.options[name] = value;
      } else if (kFlagOptions.count(name)) {
        if (inlineValue) throw UsageError{name + " takes no value"};
        out.flags.insert(name);
      } else {
        throw UsageError{"unknown option " + name};
      }
    } else {
      out.positional.push_back(a);
    }
  }
  return out;
}

// Refuses options the command does not know, so that a typo is not ignored.
void allowOnly(const Args& args, const std::string& command, std::set<std::string> allowed) {
  allowed.insert({"--bootstrap", "--output", "--help", "--user", "--secret-file", "--tls-ca-file", "--tls-server-name",
                  "--tls-no-verify-hostname", "--tls-certificate-file", "--tls-key-file"});
  for (auto& [name, value] : args.options)
    if (!allowed.count(name)) throw UsageError{name + " does not apply to `" + command + "`"};
  for (auto& name : args.flags)
    if (!allowed.count(name)) throw UsageError{name + " does not apply to `" + command + "`"};
}

void expectPositionals(const Args& args, size_t n, const std::string& what) {
  if (args.positional.size() < n) throw UsageError{"missing " + what};
  if (args.positional.size() > n) throw UsageError{"unexpected argument '" + args.positional[n] + "'"};
}

int64_t parseInt(const std::string& text, const std::string& what) {
  try {
    size_t used = 0;
    long long v = std::stoll(text, &used);
    if (used != text.size()) throw std::invalid_argument(text);
    return v;
  } catch (const std::exception&) {
    throw UsageError{what + " must be an integer, got '" + text + "'"};
  }
}

std::chrono::milliseconds parseDuration(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  const std::string unit = text.substr(digits);
  if (digits == 0) throw UsageError{"bad duration '" + text + "' (use 500ms, 10s, 2m or milliseconds)"};
  int64_t n = parseInt(text.substr(0, digits), "duration");
  if (unit.empty() || unit == "ms") return std::chrono::milliseconds(n);
  if (unit == "s") return std::chrono::seconds(n);
  if (unit == "m") return std::chrono::minutes(n);
  throw UsageError{"bad duration '" + text + "' (use 500ms, 10s, 2m or milliseconds)"};
}

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<Endpoint> parseBootstrap(const std::string& text) {
  std::vector<Endpoint> out;
  for (auto& item : splitList(text)) {
    auto colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0) throw UsageError{"bad bootstrap server '" + item + "' (HOST:PORT)"};
    int64_t port = parseInt(item.substr(colon + 1), "bootstrap port");
    if (port <= 0 || port > 65535) throw UsageError{"bad port in bootstrap server '" + item + "'"};
    out.push_back({item.substr(0, colon), static_cast<uint16_t>(port)});
  }
  if (out.empty()) throw UsageError{"--bootstrap names no server"};
  return out;
}

std::string joinList(const std::vector<std::string>& items) {
  std::string out;
  for (auto& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

// What to do next, per error, so that a refusal is actionable.
std::string hintFor(ErrorCode code, const std::string& group) {
  switch (code) {
    case ErrorCode::UNKNOWN_GROUP:
      return "group '" + group + "' does not exist; `groupctl list` shows the groups";
    case ErrorCode::GROUP_ALREADY_EXISTS:
      return "group '" + group + "' exists already; `groupctl describe " + group + "` shows it";
    case ErrorCode::GROUP_NOT_EMPTY:
      return "group '" + group + "' still has members; stop its consumers first (`groupctl describe " + group +
             "` lists them)";
    case ErrorCode::INVALID_GROUP_NAME:
      return "'" + group + "' is not a valid group name; use letters, digits, '.', '_' and '-'";
    case ErrorCode::INVALID_SESSION_TIMEOUT:
      return "the session timeout is outside what the servers allow; try a value such as 10s";
    case ErrorCode::UNKNOWN_TOPIC_OR_PARTITION:
      return "a topic or partition is not known to the cluster; create it with `groupctl topic create`";
    case ErrorCode::INVALID_OFFSET:
      return "the offset was refused; offsets must be 0 or more";
    case ErrorCode::CONTROLLER_NOT_AVAILABLE:
    case ErrorCode::NOT_CONTROLLER:
      return "no server controls group '" + group + "' right now; retry in a few seconds";
    case ErrorCode::NOT_AUTHORIZED:
      return "refused: authenticate with --user and --secret-file, as a user whose role allows this call "
             "(deleting groups, rewinding offsets and draining servers need an admin)";
    default:
      return std::string(protocol::errorMessage(code));
  }
}

class Command {
 public:
  Command(Args args, std::vector<Endpoint> bootstrap, std::string bootstrapText, bool jsonOutput)
      : args_(std::move(args)), bootstrap_(std::move(bootstrap)), bootstrapText_(std::move(bootstrapText)),
        json_(jsonOutput) {}

  int run() {
    const std::string& name = args_.positional[0];
    if (name == "list") return list();
    if (name == "describe") return describe();
    if (name == "create") return create();
    if (name == "delete") return remove();
    if (name == "offsets") return offsets();
    if (name == "rewind") return rewind();
    if (name == "topic") return topic();
    if (name == "servers") return servers();
    if (name == "drain") return drain(true);
    if (name == "undrain") return drain(false);
    if (name == "auth") return auth();
    throw UsageError{"unknown command '" + name + "'"};
  }

 private:
  // The first line of `path`, without its line end.
  static std::string readSecretFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw UsageError{"cannot read the secret file '" + path + "'"};
    std::string line;
    std::getline(in, line);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) throw UsageError{"the secret file '" + path + "' holds no secret on its first line"};
    return line;
  }

  client::SecurityOptions security() const {
    client::SecurityOptions sec;
    auto opt = [this](const char* name) {
      auto it = args_.options.find(name);
      return it == args_.options.end() ? std::string() : it->second;
    };
    sec.user = opt("--user");
    const std::string secretFile = opt("--secret-file");
    if (sec.user.empty() != secretFile.empty()) throw UsageError{"--user and --secret-file go together"};
    if (!secretFile.empty()) sec.secret = readSecretFile(secretFile);
    sec.tlsCaFile = opt("--tls-ca-file");
    sec.tlsServerName = opt("--tls-server-name");
    sec.tlsVerifyHostname = !args_.flags.count("--tls-no-verify-hostname");
    sec.tlsCertificateFile = opt("--tls-certificate-file");
    sec.tlsKeyFile = opt("--tls-key-file");
    if (sec.tlsCertificateFile.empty() != sec.tlsKeyFile.empty())
      throw UsageError{"--tls-certificate-file and --tls-key-file go together"};
    if (sec.tlsCaFile.empty() &&
        (!sec.tlsServerName.empty() || !sec.tlsVerifyHostname || !sec.tlsCertificateFile.empty()))
      throw UsageError{"--tls-server-name, --tls-no-verify-hostname and a client certificate need --tls-ca-file"};
    return sec;
  }

  // `auth hash`: a credentials-file line from a secret on standard input.
  int auth() {
    allowOnly(args_, "auth hash", {"--user", "--role", "--iterations"});
    expectPositionals(args_, 2, "the auth subcommand (hash)");
    if (args_.positional[1] != "hash") throw UsageError{"unknown auth subcommand '" + args_.positional[1] + "'"};
    if (!args_.options.count("--user")) throw UsageError{"auth hash needs --user U"};
    if (!args_.options.count("--role")) throw UsageError{"auth hash needs --role member|admin"};
    const auto role = credentials::roleFromName(args_.options["--role"]);
    if (!role) throw UsageError{"--role must be member or admin"};
    int64_t iterations = credentials::kDefaultIterations;
    if (args_.options.count("--iterations")) iterations = parseInt(args_.options["--iterations"], "--iterations");
    if (iterations < credentials::kMinIterations || iterations > credentials::kMaxIterations)
      throw UsageError{"--iterations must be " + std::to_string(credentials::kMinIterations) + ".." +
                       std::to_string(credentials::kMaxIterations)};
    std::string secret;
    std::getline(std::cin, secret);
    if (!secret.empty() && secret.back() == '\r') secret.pop_back();
    if (secret.empty()) throw UsageError{"no secret on standard input (its first line is the secret)"};
    std::string error;
    const std::string line = credentials::makeCredentialLine(args_.options["--user"], *role, secret,
                                                             static_cast<uint32_t>(iterations), &error);
    if (line.empty()) throw UsageError{error};
    std::cout << line << "\n";
    return kExitOk;
  }

  Admin& admin() {
    if (!admin_) {
      client::AdminOptions options;
      options.clientId = "groupctl";
      // A person waits at the prompt: give up on dead servers sooner than a library would.
      options.requestTimeout = std::chrono::milliseconds(3000);
      options.retryBudget = std::chrono::milliseconds(3000);
      options.security = security();
      admin_.emplace(bootstrap_, options);
    }
    return *admin_;
  }

  // Prints the failure and maps it to an exit code. Admin marks a failure
  // to connect to any server as Status::unreachable().
  int fail(const Status& status, const std::string& group) { return failWith(status, hintFor(status.code, group)); }

  int failWith(const Status& status, const std::string& hint) {
    if (status.unreachable()) {
      std::cerr << "groupctl: cannot reach any server; is groupcoordd running? tried " << bootstrapText_ << "\n"
                << "  (" << status.message << ")\n";
      return kExitUnreachable;
    }
    std::cerr << "groupctl: " << status.name() << ": " << hint << "\n";
    if (!status.message.empty()) std::cerr << "  (" << status.message << ")\n";
    return kExitServer;
  }

  // hintFor, for a call about a server rather than a group.
  static std::string serverHint(ErrorCode code, int32_t serverId) {
    switch (code) {
      case ErrorCode::NOT_AUTHORIZED:
        return "refused: draining and undraining servers needs an admin; authenticate with --user and "
               "--secret-file as one";
      case ErrorCode::CONTROLLER_NOT_AVAILABLE:
        return "the servers could not write the drain mark of server " + std::to_string(serverId) +
               " to ZooKeeper; retry in a few seconds";
      case ErrorCode::INVALID_REQUEST:
        return "server ids are 0 or more";
      default:
        return std::string(protocol::errorMessage(code));
    }
  }

  static std::string brokerText(const protocol::Broker& b) {
    if (b.isNone()) return "-";
    return std::to_string(b.brokerId) + " (" + b.host + ":" + std::to_string(b.port) + ")";
  }
  static json brokerJson(const protocol::Broker& b) { return protocol::brokerJson(b); }
  static json offsetsJson(const std::vector<protocol::PartitionOffset>& offsets) {
    return protocol::offsetsJson(offsets);
  }

  static void sortOffsets(std::vector<protocol::PartitionOffset>& offsets) {
    std::sort(offsets.begin(), offsets.end(), [](auto& a, auto& b) {
      return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
    });
  }

  // Left-aligned columns wide enough for every cell.
  static void printTable(const std::vector<std::vector<std::string>>& rows) {
    std::vector<size_t> width;
    for (auto& row : rows)
      for (size_t c = 0; c < row.size(); ++c) {
        if (width.size() <= c) width.push_back(0);
        width[c] = std::max(width[c], row[c].size());
      }
    for (auto& row : rows) {
      std::string line;
      for (size_t c = 0; c < row.size(); ++c) {
        line += row[c];
        if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
      }
      // An empty last column (the dry run's RESULT) must not leave trailing blanks.
      while (!line.empty() && line.back() == ' ') line.pop_back();
      std::cout << line << "\n";
    }
  }

  static void printOffsetsTable(const std::vector<protocol::PartitionOffset>& offsets) {
    if (offsets.empty()) {
      std::cout << "(no committed offsets)\n";
      return;
    }
    std::vector<std::vector<std::string>> rows{{"TOPIC", "PARTITION", "OFFSET"}};
    for (auto& o : offsets) rows.push_back({o.topic, std::to_string(o.partition), std::to_string(o.offset)});
    printTable(rows);
  }

  const std::string& groupArg(const std::string& command) {
    expectPositionals(args_, 2, "GROUP (`groupctl " + command + " GROUP`)");
    return args_.positional[1];
  }

  int list() {
    allowOnly(args_, "list", {});
    expectPositionals(args_, 1, "");
    auto r = admin().listGroups();
    if (!r.ok()) return fail(r.status, "");
    auto groups = r.value;
    std::sort(groups.begin(), groups.end(), [](auto& a, auto& b) { return a.name < b.name; });
    if (json_) {
      json out = {{"groups", json::array()}};
      for (auto& g : groups) out["groups"].push_back(protocol::groupInfoJson(g));
      std::cout << out.dump(2) << "\n";
      return kExitOk;
    }
    if (groups.empty()) {
      std::cout << "(no groups)\n";
      return kExitOk;
    }
    std::vector<std::vector<std::string>> rows{{"GROUP", "CONTROLLER", "GENERATION", "MEMBERS", "TOPICS"}};
    for (auto& g : groups)
      rows.push_back({g.name, brokerText(g.controller), std::to_string(g.generation), std::to_string(g.members.size()),
                      joinList(g.topics)});
    printTable(rows);
    return kExitOk;
  }

  // "2026-12-02T14:40:01.123Z"; "-" for -1.
  static std::string isoTime(int64_t ms) {
    if (ms < 0) return "-";
    const std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[32];
    std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
    char out[40];
    std::snprintf(out, sizeof(out), "%s.%03dZ", buf, static_cast<int>(ms % 1000));
    return out;
  }

  static std::string address(const protocol::MemberState& m) {
    const std::string text = protocol::hostPort(m.host, m.port);
    return text.empty() ? "-" : text;
  }

  int describe() {
    allowOnly(args_, "describe", {"--history"});
    const std::string group = groupArg("describe");
    int64_t historyRows = 10;
    if (args_.options.count("--history")) {
      historyRows = parseInt(args_.options["--history"], "--history");
      if (historyRows < 0) throw UsageError{"--history must be 0 or more"};
    }
    auto described = admin().describeGroup(group);
    if (!described.ok()) return fail(described.status, group);
    auto& d = described.value;
    sortOffsets(d.offsets);
    if (json_) {
      std::cout << protocol::dumpJson(protocol::describeGroupJson(d));
      return kExitOk;
    }
    std::vector<std::string> topics;
    for (auto& t : d.topics)
      topics.push_back(t.topic + " (" + (t.partitions < 0 ? "not found" : std::to_string(t.partitions)) + ")");
    std::cout << "group:           " << d.group << "\n"
              << "state:           " << protocol::groupStateName(d.state) << "\n"
              << "generation:      " << d.generation << "\n"
              << "controller:      " << brokerText(d.controller) << "\n"
              << "session timeout: " << d.sessionTimeoutMs << " ms" << (d.ephemeral ? " (ephemeral)" : "") << "\n"
              << "assignment:      " << protocol::assignmentModeName(d.mode)
              << (d.mode == protocol::AssignmentMode::CLIENT ? " (the members assign)" : "") << "\n"
              << "topics:          " << (topics.empty() ? "-" : joinList(topics)) << "\n\n";
    auto rows = protocol::partitionRows(d);
    if (rows.empty()) {
      std::cout << "(no partitions)\n";
    } else {
      std::vector<std::vector<std::string>> table{
          {"TOPIC", "PARTITION", "COMMITTED-OFFSET", "OWNER", "HOST", "CLIENT-ID", "WAITING-FOR-IT"}};
      for (auto& r : rows) {
        table.push_back({r.partition.topic, std::to_string(r.partition.partition),
                         r.committed < 0 ? "-" : std::to_string(r.committed), r.owner ? r.owner->consumerId : "-",
                         r.owner ? address(*r.owner) : "-", r.owner ? r.owner->clientId : "-",
                         r.waiting ? r.waiting->consumerId : ""});
      }
      printTable(table);
    }
    std::cout << "\n";
    if (d.members.empty()) {
      std::cout << "(no members)\n";
    } else {
      std::vector<std::vector<std::string>> table{
          {"MEMBER", "CLIENT-ID", "HOST", "PARTITIONS", "WAITING", "JOINED", "LAST-HEARD"}};
      for (auto& m : d.members) {
        table.push_back({m.consumerId, m.clientId.empty() ? "-" : m.clientId, address(m),
                         std::to_string(m.held.size()), std::to_string(m.waiting.size()), isoTime(m.joinedAtMs),
                         isoTime(m.lastHeardMs)});
      }
      printTable(table);
    }
    if (historyRows == 0) return kExitOk;
    std::cout << "\n";
    if (d.history.empty()) {
      std::cout << "(no rebalance recorded)\n";
      return kExitOk;
    }
    const size_t shown = std::min(d.history.size(), static_cast<size_t>(historyRows));
    std::cout << "history (the last " << shown << " of " << d.history.size() << "):\n";
    std::vector<std::vector<std::string>> table{{"TIME", "GENERATION", "REASON", "DETAIL"}};
    for (size_t i = d.history.size() - shown; i < d.history.size(); ++i) {
      auto& e = d.history[i];
      table.push_back({isoTime(e.timeMs), std::to_string(e.generation), std::string(protocol::rebalanceReasonName(e.reason)),
                       e.detail});
    }
    printTable(table);
    return kExitOk;
  }

  int create() {
    allowOnly(args_, "create", {"--topics", "--session-timeout", "--ephemeral", "--assignment"});
    const std::string group = groupArg("create");
    auto mode = protocol::AssignmentMode::SERVER;
    if (args_.options.count("--assignment")) {
      const std::string& m = args_.options["--assignment"];
      if (m == "client") {
        mode = protocol::AssignmentMode::CLIENT;
      } else if (m != "server") {
        throw UsageError{"--assignment must be server or client, not '" + m + "'"};
      }
    }
    const bool client = mode == protocol::AssignmentMode::CLIENT;
    if (!client && !args_.options.count("--topics")) throw UsageError{"create needs --topics a,b"};
    if (!args_.options.count("--session-timeout")) throw UsageError{"create needs --session-timeout (e.g. 10s)"};
    auto topics = args_.options.count("--topics") ? splitList(args_.options["--topics"]) : std::vector<std::string>{};
    if (!client && topics.empty()) throw UsageError{"--topics names no topic"};
    auto timeout = parseDuration(args_.options["--session-timeout"]);
    bool ephemeral = args_.flags.count("--ephemeral") > 0;
    auto r = admin().createGroup(group, timeout, topics, ephemeral, mode);
    if (!r.ok()) return fail(r.status, group);
    if (json_) {
      std::cout << json{{"group", group}, {"controller", brokerJson(r.value)}}.dump(2) << "\n";
    } else {
      std::cout << "created group " << group << " (topics " << joinList(topics) << ", session timeout "
                << timeout.count() << " ms" << (ephemeral ? ", ephemeral" : "") << "); controller "
                << brokerText(r.value) << "\n";
    }
    return kExitOk;
  }

  int remove() {
    allowOnly(args_, "delete", {});
    const std::string group = groupArg("delete");
    auto s = admin().deleteGroup(group);
    if (!s.ok()) return fail(s, group);
    if (json_)
      std::cout << json{{"group", group}, {"deleted", true}}.dump(2) << "\n";
    else
      std::cout << "deleted group " << group << "\n";
    return kExitOk;
  }

  int offsets() {
    allowOnly(args_, "offsets", {});
    const std::string group = groupArg("offsets");
    auto r = admin().fetchOffsets(group);
    if (!r.ok()) return fail(r.status, group);
    sortOffsets(r.value);
    if (json_)
      std::cout << json{{"group", group}, {"offsets", offsetsJson(r.value)}}.dump(2) << "\n";
    else
      printOffsetsTable(r.value);
    return kExitOk;
  }

  int rewind() {
    allowOnly(args_, "rewind",
              {"--topic", "--partition", "--to-offset", "--shift-by", "--to-earliest", "--dry-run", "--execute"});
    const std::string group = groupArg("rewind");
    if (!args_.options.count("--topic")) throw UsageError{"rewind needs --topic T"};
    const std::string topic = args_.options["--topic"];
    int targets = static_cast<int>(args_.options.count("--to-offset") + args_.options.count("--shift-by") +
                                   args_.flags.count("--to-earliest"));
    if (targets != 1) throw UsageError{"rewind needs exactly one of --to-offset N, --shift-by N, --to-earliest"};
    if (args_.flags.count("--dry-run") && args_.flags.count("--execute"))
      throw UsageError{"--dry-run and --execute exclude each other"};
    const bool execute = args_.flags.count("--execute") > 0;
    std::optional<int32_t> partition;
    if (args_.options.count("--partition")) {
      int64_t p = parseInt(args_.options["--partition"], "--partition");
      if (p < 0 || p > INT32_MAX) throw UsageError{"--partition must be 0 or more"};
      partition = static_cast<int32_t>(p);
    }
    std::optional<int64_t> toOffset, shiftBy;
    if (args_.options.count("--to-offset")) {
      toOffset = parseInt(args_.options["--to-offset"], "--to-offset");
      if (*toOffset < 0) throw UsageError{"--to-offset must be 0 or more"};
    }
    if (args_.options.count("--shift-by")) shiftBy = parseInt(args_.options["--shift-by"], "--shift-by");
    if (args_.flags.count("--to-earliest")) toOffset = 0;

    auto current = admin().fetchOffsets(group, {topic});
    if (!current.ok()) return fail(current.status, group);
    std::vector<protocol::PartitionOffset> now;
    for (auto& o : current.value)
      if (o.topic == topic && (!partition || o.partition == *partition)) now.push_back(o);
    // A named partition without a commit yet can still be set.
    if (partition && now.empty()) now.push_back({topic, *partition, -1});
    sortOffsets(now);

    std::vector<protocol::PartitionOffset> plan;
    for (auto& o : now) {
      int64_t next = toOffset ? *toOffset : std::max<int64_t>(0, std::max<int64_t>(0, o.offset) + *shiftBy);
      plan.push_back({o.topic, o.partition, next});
    }

    std::vector<ErrorCode> results(plan.size(), ErrorCode::NONE);
    bool anyFailed = false;
    if (execute && !plan.empty()) {
      auto r = admin().rewind(group, plan);
      if (!r.ok()) return fail(r.status, group);
      for (size_t i = 0; i < plan.size(); ++i)
        for (auto& e : r.value)
          if (e.topic == plan[i].topic && e.partition == plan[i].partition) results[i] = e.error;
      anyFailed = std::any_of(results.begin(), results.end(), [](ErrorCode c) { return c != ErrorCode::NONE; });
    }

    if (json_) {
      json rows = json::array();
      for (size_t i = 0; i < plan.size(); ++i)
        rows.push_back({{"topic", plan[i].topic},
                        {"partition", plan[i].partition},
                        {"current", now[i].offset},
                        {"new", plan[i].offset},
                        {"error", execute ? json(std::string(protocol::errorName(results[i]))) : json(nullptr)}});
      std::cout << json{{"group", group}, {"topic", topic}, {"executed", execute}, {"partitions", rows}}.dump(2)
                << "\n";
    } else {
      if (plan.empty()) {
        std::cout << "(group " << group << " has no committed offsets for topic " << topic
                  << "; name a partition with --partition to set one)\n";
      } else {
        std::vector<std::vector<std::string>> rows{{"TOPIC", "PARTITION", "CURRENT", "NEW", execute ? "RESULT" : ""}};
        for (size_t i = 0; i < plan.size(); ++i)
          rows.push_back({plan[i].topic, std::to_string(plan[i].partition),
                          now[i].offset < 0 ? "-" : std::to_string(now[i].offset), std::to_string(plan[i].offset),
                          execute ? std::string(protocol::errorName(results[i])) : ""});
        printTable(rows);
      }
      if (!execute) std::cout << "dry run: nothing changed; add --execute to apply\n";
    }
    if (anyFailed) {
      for (size_t i = 0; i < plan.size(); ++i)
        if (results[i] != ErrorCode::NONE)
          std::cerr << "groupctl: " << protocol::errorName(results[i]) << ": " << topic << "/" << plan[i].partition
                    << ": " << hintFor(results[i], group) << "\n";
      return kExitServer;
    }
    return kExitOk;
  }

  int32_t serverIdArg(const std::string& command) {
    expectPositionals(args_, 2, "SERVER_ID (`groupctl " + command + " SERVER_ID`)");
    const int64_t id = parseInt(args_.positional[1], "SERVER_ID");
    if (id < 0 || id > INT32_MAX)
      throw UsageError{"SERVER_ID must be a groupcoordd --server-id, 0 to " + std::to_string(INT32_MAX)};
    return static_cast<int32_t>(id);
  }

  // "a, b, c" for at most `shown` names, then how many more.
  static std::string someNames(const std::vector<std::string>& names, size_t shown = 10) {
    std::string out;
    for (size_t i = 0; i < names.size() && i < shown; ++i) out += (i == 0 ? "" : ", ") + names[i];
    if (names.size() > shown) out += ", and " + std::to_string(names.size() - shown) + " more";
    return out;
  }

  // Groups a ListGroups answer names `serverId` as the controller of, sorted.
  static std::vector<std::string> controlledBy(const std::vector<protocol::GroupInfo>& groups, int32_t serverId) {
    std::vector<std::string> out;
    for (auto& g : groups)
      if (!g.controller.isNone() && g.controller.brokerId == serverId) out.push_back(g.name);
    std::sort(out.begin(), out.end());
    return out;
  }

  int servers() {
    allowOnly(args_, "servers", {});
    expectPositionals(args_, 1, "");
    auto r = admin().listGroups();
    if (!r.ok()) return fail(r.status, "");
    struct Server {
      protocol::Broker broker;
      std::vector<std::string> groups;
    };
    std::map<int32_t, Server> byId;
    std::vector<std::string> without;
    for (auto& g : r.value) {
      // Listed, then deleted before it could be read: it is nowhere now.
      if (g.error == ErrorCode::UNKNOWN_GROUP) continue;
      if (g.controller.isNone()) {
        without.push_back(g.name);
        continue;
      }
      auto& s = byId[g.controller.brokerId];
      if (s.groups.empty()) s.broker = g.controller;
      s.groups.push_back(g.name);
    }
    std::sort(without.begin(), without.end());
    for (auto& [id, s] : byId) std::sort(s.groups.begin(), s.groups.end());
    if (json_) {
      json out = {{"servers", json::array()}, {"without_controller", without}};
      for (auto& [id, s] : byId)
        out["servers"].push_back({{"id", id}, {"host", s.broker.host}, {"port", s.broker.port}, {"groups", s.groups}});
      std::cout << out.dump(2) << "\n";
      return kExitOk;
    }
    std::vector<std::vector<std::string>> rows{{"SERVER", "ADDRESS", "GROUPS"}};
    for (auto& [id, s] : byId)
      rows.push_back({std::to_string(id), s.broker.host + ":" + std::to_string(s.broker.port),
                      std::to_string(s.groups.size())});
    rows.push_back({"-", "(no controller)", std::to_string(without.size())});
    printTable(rows);
    return kExitOk;
  }

  // `drain` (mark true) and `undrain`.
  int drain(bool mark) {
    const std::string command = mark ? "drain" : "undrain";
    allowOnly(args_, command, mark ? std::set<std::string>{"--wait"} : std::set<std::string>{});
    const int32_t id = serverIdArg(command);
    std::optional<std::chrono::milliseconds> wait;
    if (args_.options.count("--wait")) wait = parseDuration(args_.options["--wait"]);

    const Status s = admin().drainServer(id, mark);
    if (!s.ok()) return failWith(s, serverHint(s.code, id));
    if (!mark) {
      if (json_)
        std::cout << json{{"server", id}, {"draining", false}}.dump(2) << "\n";
      else
        std::cout << "server " << id << " is no longer drained: it takes groups again\n";
      return kExitOk;
    }
    if (!wait) {
      if (json_)
        std::cout << json{{"server", id}, {"draining", true}, {"waited", false}}.dump(2) << "\n";
      else
        std::cout << "server " << id << " is marked drained: its groups move to the other servers over the next "
                  << "seconds (`groupctl servers` shows where they are)\n";
      return kExitOk;
    }
    return awaitDrained(id, *wait, args_.options["--wait"]);
  }

  // Polls ListGroups every 500 ms until no group names `id` as its
  // controller. Progress goes to standard error, so that standard output
  // holds only the result.
  int awaitDrained(int32_t id, std::chrono::milliseconds wait, const std::string& waitText) {
    using Clock = std::chrono::steady_clock;
    constexpr auto kPoll = std::chrono::milliseconds(500);
    const auto deadline = Clock::now() + wait;
    std::optional<std::vector<std::string>> shown;  // what the last progress line said
    Status lastFailure;
    std::vector<std::string> still;
    for (;;) {
      const auto polled = Clock::now();
      auto r = admin().listGroups();
      if (r.ok()) {
        lastFailure = Status::success();
        still = controlledBy(r.value, id);
        if (still.empty()) break;
        if (shown != still) {
          std::cerr << "server " << id << " still controls " << still.size() << " group(s): " << someNames(still)
                    << "\n";
          shown = still;
        }
      } else {
        if (lastFailure.ok())
          std::cerr << "groupctl: listing the groups failed (" << r.status.toString() << "); trying again\n";
        lastFailure = r.status;
      }
      const auto now = Clock::now();
      if (now >= deadline) {
        if (!lastFailure.ok())
          return failWith(lastFailure, "server " + std::to_string(id) +
                                           " is marked drained, but the groups could not be listed to follow it; "
                                           "`groupctl servers` shows where they are");
        std::cerr << "groupctl: server " << id << " still controls " << still.size() << " group(s) after " << waitText
                  << ": " << someNames(still) << "\n"
                  << "  (the drain stays in effect; `groupctl servers` shows where the groups are, `groupctl undrain "
                  << id << "` ends the drain)\n";
        return kExitServer;
      }
      std::this_thread::sleep_until(std::min(polled + kPoll, deadline));
    }
    if (json_)
      std::cout << json{{"server", id}, {"draining", true}, {"waited", true}}.dump(2) << "\n";
    else
      std::cout << "server " << id << " is drained: no group names it as its controller\n";
    return kExitOk;
  }

  int topic() {
    if (args_.positional.size() < 2 || args_.positional[1] != "create")
      throw UsageError{"`groupctl topic` knows one subcommand: create"};
    allowOnly(args_, "topic create", {"--partitions", "--zookeeper", "--topics-path"});
    expectPositionals(args_, 3, "topic name (`groupctl topic create T ...`)");
    const std::string name = args_.positional[2];
    if (name.find('/') != std::string::npos || name == "." || name == "..")
      throw UsageError{"'" + name + "' is not a valid topic name"};
    if (!args_.options.count("--partitions")) throw UsageError{"topic create needs --partitions N"};
    if (!args_.options.count("--zookeeper")) throw UsageError{"topic create needs --zookeeper HOST:PORT[,..]"};
    int64_t partitions = parseInt(args_.options["--partitions"], "--partitions");
    if (partitions < 1 || partitions > INT32_MAX) throw UsageError{"--partitions must be 1 or more"};
    std::string topicsPath = args_.options.count("--topics-path") ? args_.options["--topics-path"] : "/brokers/topics";
    if (topicsPath.empty() || topicsPath[0] != '/') throw UsageError{"--topics-path must be an absolute znode path"};
    while (topicsPath.size() > 1 && topicsPath.back() == '/') topicsPath.pop_back();
    const std::string path = (topicsPath == "/" ? "" : topicsPath) + "/" + name;
    const std::string connect = args_.options["--zookeeper"];

    topics::TopicWriter writer(connect, std::chrono::milliseconds(10000));
    if (!writer.start().ok()) throw UsageError{"bad --zookeeper connect string '" + connect + "'"};
    if (!writer.waitConnected(std::chrono::milliseconds(10000)).ok()) {
      std::cerr << "groupctl: cannot reach ZooKeeper; is the ensemble running? tried " << connect << "\n";
      return kExitUnreachable;
    }
    if (auto e = writer.ensurePath(topicsPath); !e.ok()) {
      std::cerr << "groupctl: " << e.name() << ": could not create " << topicsPath
                << "; check the path and the ensemble's health\n";
      return kExitServer;
    }
    auto created = writer.createTopic(path, static_cast<int32_t>(partitions));
    if (created.nodeExists()) {
      std::cerr << "groupctl: TOPIC_ALREADY_EXISTS: topic '" << name << "' already exists at " << path
                << "; choose another name or use the existing topic\n";
      return kExitServer;
    }
    if (!created.ok()) {
      std::cerr << "groupctl: " << created.name() << ": could not create " << path
                << "; check the path and the ensemble's health\n";
      return kExitServer;
    }
    if (json_)
      std::cout << json{{"topic", name}, {"partitions", partitions}, {"path", path}}.dump(2) << "\n";
    else
      std::cout << "created topic " << name << " with " << partitions << " partitions at " << path << "\n";
    return kExitOk;
  }

  Args args_;
  std::vector<Endpoint> bootstrap_;
  std::string bootstrapText_;
  bool json_;
  std::optional<Admin> admin_;
};

}  // namespace

int main(int argc, char** argv) {
  // stdout is for data (scripts parse it). The libraries groupctl links do
  // not log; the ZooKeeper C client (topic create) writes its error lines to
  // stderr.
  Args args;
  try {
    args = parseArgs(argc, argv);
    if (args.positional.empty()) {
      if (args.flags.count("--help")) {
        std::cout << kOverallHelp;
        return kExitOk;
      }
      throw UsageError{"no command given"};
    }
    if (args.flags.count("--help")) {
      auto it = kCommandHelp.find(args.positional[0]);
      if (it == kCommandHelp.end()) throw UsageError{"unknown command '" + args.positional[0] + "'"};
      std::cout << it->second;
      return kExitOk;
    }
    std::string output = args.options.count("--output") ? args.options["--output"] : "table";
    if (output != "table" && output != "json") throw UsageError{"--output must be table or json"};
    std::string bootstrapText = "127.0.0.1:7400";
    if (const char* env = std::getenv("GROUPCTL_BOOTSTRAP"); env && *env) bootstrapText = env;
    if (args.options.count("--bootstrap")) bootstrapText = args.options["--bootstrap"];
    auto bootstrap = parseBootstrap(bootstrapText);
    Command command(args, std::move(bootstrap), bootstrapText, output == "json");
    return command.run();
  } catch (const UsageError& e) {
    std::cerr << "groupctl: " << e.message << "\n";
    std::string command = args.positional.empty() ? "" : args.positional[0];
    if (kCommandHelp.count(command))
      std::cerr << kCommandHelp.at(command);
    else
      std::cerr << "run `groupctl --help` for the commands\n";
    return kExitUsage;
  }
}
