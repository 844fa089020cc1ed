#pragma once

// What every groupctl command shares: its arguments, the servers and how
// to reach them (bootstrap list, credentials, TLS), the one Admin client,
// the way a failure is reported and mapped to an exit code, and the table
// and text helpers of the output.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "client/Admin.h"
#include "client/groupctl/Args.h"
#include "protocol/Messages.h"

namespace groupcoord::groupctl {

// Exit codes: 0 success, 1 the server refused the operation, 2 usage
// error, 3 no server could be reached.
constexpr int kExitOk = 0;
constexpr int kExitServer = 1;
constexpr int kExitUsage = 2;
constexpr int kExitUnreachable = 3;

class Context {
 public:
  Context(Args args, std::vector<client::Endpoint> bootstrap, std::string bootstrapText, bool jsonOutput);

  Args& args() { return args_; }
  // --output json
  bool json() const { return json_; }

  // Made on first use from the global options: --user, --secret-file and
  // the --tls-* options (a UsageError when they do not go together).
  client::Admin& admin();

  // Prints the failure and maps it to an exit code. Admin marks a failure
  // to connect to any server as Status::unreachable().
  int fail(const client::Status& status, const std::string& group);
  int failWith(const client::Status& status, const std::string& hint);

 private:
  client::SecurityOptions security() const;

  Args args_;
  std::vector<client::Endpoint> bootstrap_;
  std::string bootstrapText_;
  bool json_;
  std::optional<client::Admin> admin_;
};

// What to do next, per error, so that a refusal is actionable.
std::string hintFor(protocol::ErrorCode code, const std::string& group);

// "3 (host:port)"; "-" for no broker.
std::string brokerText(const protocol::Broker& b);
// By topic, then partition.
void sortOffsets(std::vector<protocol::PartitionOffset>& offsets);
// Left-aligned columns wide enough for every cell, on standard output.
void printTable(const std::vector<std::vector<std::string>>& rows);

}  // namespace groupcoord::groupctl
