#include "client/groupctl/Context.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <tuple>

namespace groupcoord::groupctl {

using client::Status;
using protocol::ErrorCode;

namespace {

// The first line of `path`, without its line end.
std::string readSecretFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError{"cannot read the secret file '" + path + "'"};
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty()) throw UsageError{"the secret file '" + path + "' holds no secret on its first line"};
  return line;
}

}  // namespace

Context::Context(Args args, std::vector<client::Endpoint> bootstrap, std::string bootstrapText, bool jsonOutput)
    : args_(std::move(args)), bootstrap_(std::move(bootstrap)), bootstrapText_(std::move(bootstrapText)),
      json_(jsonOutput) {}

client::SecurityOptions Context::security() const {
  client::SecurityOptions sec;
  auto opt = [this](const char* name) {
    auto it = args_.options.find(name);
    return it == args_.options.end() ? std::string() : it->second;
  };
  sec.user = opt("--user");
  const std::string secretFile = opt("--secret-file");
  if (sec.user.empty() != secretFile.empty()) throw UsageError{"--user and --secret-file go together"};
  if (!secretFile.empty()) sec.secret = readSecretFile(secretFile);
  sec.plainAuth = args_.flags.count("--plain-auth") > 0;
  if (sec.plainAuth && sec.user.empty()) throw UsageError{"--plain-auth needs --user and --secret-file"};
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

client::Admin& Context::admin() {
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

int Context::fail(const Status& status, const std::string& group) { return failWith(status, hintFor(status.code, group)); }

int Context::failWith(const Status& status, const std::string& hint) {
  if (status.unreachable()) {
    std::cerr << "groupctl: cannot reach any server; is groupcoordd running? tried " << bootstrapText_ << "\n"
              << "  (" << status.message << ")\n";
    return kExitUnreachable;
  }
  std::cerr << "groupctl: " << status.name() << ": " << hint << "\n";
  if (!status.message.empty()) std::cerr << "  (" << status.message << ")\n";
  return kExitServer;
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

std::string brokerText(const protocol::Broker& b) {
  if (b.isNone()) return "-";
  return std::to_string(b.brokerId) + " (" + b.host + ":" + std::to_string(b.port) + ")";
}

void sortOffsets(std::vector<protocol::PartitionOffset>& offsets) {
  std::sort(offsets.begin(), offsets.end(), [](auto& a, auto& b) {
    return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
  });
}

// Left-aligned columns wide enough for every cell.
void printTable(const std::vector<std::vector<std::string>>& rows) {
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

}  // namespace groupcoord::groupctl
