#include "client/groupctl/Commands.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <iostream>
#include <optional>
#include <thread>

namespace groupcoord::groupctl {

using client::Status;
using nlohmann::json;
using protocol::ErrorCode;

namespace {

// hintFor, for a call about a server rather than a group.
std::string serverHint(ErrorCode code, int32_t serverId) {
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

// "a, b, c" for at most `shown` names, then how many more.
std::string someNames(const std::vector<std::string>& names, size_t shown = 10) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < shown; ++i) out += (i == 0 ? "" : ", ") + names[i];
  if (names.size() > shown) out += ", and " + std::to_string(names.size() - shown) + " more";
  return out;
}

// Groups a ListGroups answer names `serverId` as the controller of, sorted.
std::vector<std::string> controlledBy(const std::vector<protocol::GroupInfo>& groups, int32_t serverId) {
  std::vector<std::string> out;
  for (auto& g : groups)
    if (!g.controller.isNone() && g.controller.brokerId == serverId) out.push_back(g.name);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

DrainCommand::DrainCommand(Context& context, bool mark) : Command(context), mark_(mark) {}

int32_t DrainCommand::serverIdArg(const std::string& command) {
  expectPositionals(args_, 2, "SERVER_ID (`groupctl " + command + " SERVER_ID`)");
  const int64_t id = parseInt(args_.positional[1], "SERVER_ID");
  if (id < 0 || id > INT32_MAX)
    throw UsageError{"SERVER_ID must be a groupcoordd --server-id, 0 to " + std::to_string(INT32_MAX)};
  return static_cast<int32_t>(id);
}

int DrainCommand::run() {
  const bool mark = mark_;
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
int DrainCommand::awaitDrained(int32_t id, std::chrono::milliseconds wait, const std::string& waitText) {
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

}  // namespace groupcoord::groupctl
