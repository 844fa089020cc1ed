// groupcoord-shard: share a set of keys among the members of a client-mode
// (membership-only) group with rendezvous hashing, live.
//
// Starts a few members of one client-mode group in this process. Each one,
// once a generation is agreed (every member has the same member list),
// computes with client::KeyOwners which keys are its own and prints what it
// takes; before it registers at a later generation, it prints what it gives
// up. Every few seconds one member leaves and a new one joins, so the
// hand-offs show: only the keys of the member that came or went move. Run it
// right after `scripts/dev.sh run`; no topic is needed.

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/Admin.h"
#include "client/Consumer.h"
#include "client/examples/ExampleSupport.h"
#include "client/KeyOwners.h"

namespace {

using namespace std::chrono_literals;
using groupcoord::client::Endpoint;
using groupcoord::examples::say;

std::atomic<bool> stopping{false};

std::string joined(const std::set<std::string>& keys) {
  if (keys.empty()) return "(none)";
  std::ostringstream out;
  bool first = true;
  for (auto& k : keys) {
    out << (first ? "" : " ") << k;
    first = false;
  }
  return out.str();
}

// One member on its own thread, polling until told to leave.
class ShardMember {
 public:
  ShardMember(std::string name, const std::vector<Endpoint>& bootstrap, const std::string& group,
              const std::vector<std::string>& keys)
      : name_(std::move(name)), keys_(keys) {
    groupcoord::client::ConsumerConfig c;
    c.bootstrap = bootstrap;
    c.group = group;
    c.clientId = name_;
    c.metadata = "started by groupcoord-shard";
    groupcoord::client::ConsumerCallbacks cb;
    cb.onMembers = [this](int64_t generation, const std::vector<groupcoord::protocol::MemberMetadata>& members) {
      groupcoord::client::KeyOwners owners(members);
      mine_.clear();
      for (auto& k : keys_)
        if (owners.owner(k) == consumer_->memberId()) mine_.insert(k);
      say(name_, "generation " + std::to_string(generation) + " (" + std::to_string(members.size()) +
                     " members): takes " + joined(mine_));
    };
    cb.onStop = [this](int64_t generation) {
      say(name_, "generation " + std::to_string(generation) + " over: gives up " + joined(mine_));
      mine_.clear();
    };
    consumer_ = std::make_unique<groupcoord::client::Consumer>(std::move(c), std::move(cb));
    thread_ = std::thread([this] { run(); });
  }
  ~ShardMember() { leave(); }

  void leave() {
    leave_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    while (!leave_ && !stopping) {
      auto status = consumer_->poll(200ms);
      using groupcoord::protocol::ErrorCode;
      if (!status.ok() && status.code != ErrorCode::CONTROLLER_NOT_AVAILABLE &&
          status.code != ErrorCode::NOT_CONTROLLER) {
        say(name_, "error    " + status.toString());
        std::this_thread::sleep_for(1s);
      }
    }
    consumer_->close();
    say(name_, "left the group");
  }

  std::string name_;
  std::vector<std::string> keys_;
  std::set<std::string> mine_;  // touched only by this member's thread (inside poll)
  std::unique_ptr<groupcoord::client::Consumer> consumer_;
  std::atomic<bool> leave_{false};
  std::thread thread_;
};

void usage() {
  std::cout << "usage: groupcoord-shard [--bootstrap HOST:PORT[,HOST:PORT]] [--group NAME] [--keys N]\n"
               "                        [--members N] [--seconds S]\n\n"
               "Starts N members of the client-mode group GROUP (created if missing) that share the\n"
               "keys tenant-00 .. tenant-(N-1) by rendezvous hashing over the member list, and every\n"
               "few seconds has one leave and a new one join, printing what each member takes and\n"
               "gives up. Defaults: 127.0.0.1:7400, group shards, 12 keys, 3 members, 60 seconds.\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::string bootstrapText = "127.0.0.1:7400", group = "shards";
  int members = 3, seconds = 60, keyCount = 12;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      usage();
      return 0;
    } else if (a == "--bootstrap") {
      bootstrapText = value();
    } else if (a == "--group") {
      group = value();
    } else if (a == "--members") {
      members = std::atoi(value().c_str());
    } else if (a == "--keys") {
      keyCount = std::atoi(value().c_str());
    } else if (a == "--seconds") {
      seconds = std::atoi(value().c_str());
    } else {
      std::cerr << "unknown option " << a << "\n";
      usage();
      return 2;
    }
  }
  if (members < 1 || members > 50 || seconds < 1 || keyCount < 1 || keyCount > 1000) {
    std::cerr << "--members must be 1..50, --keys 1..1000 and --seconds at least 1\n";
    return 2;
  }
  std::vector<Endpoint> bootstrap;
  if (!groupcoord::examples::parseBootstrap(bootstrapText, &bootstrap)) return 2;
  std::vector<std::string> keys;
  for (int k = 0; k < keyCount; ++k) {
    char name[32];
    std::snprintf(name, sizeof name, "tenant-%02d", k);
    keys.push_back(name);
  }
  std::signal(SIGINT, [](int) { stopping = true; });
  std::signal(SIGTERM, [](int) { stopping = true; });

  groupcoord::client::Admin admin(bootstrap);
  auto created = admin.createGroup(group, 6s, {}, /*ephemeral=*/true, groupcoord::protocol::AssignmentMode::CLIENT);
  if (!created.ok()) {
    std::cerr << "cannot create group " << group << ": " << created.status.toString() << "\n";
    return 1;
  }
  say("shard", "client-mode group " + group + " (session timeout 6 s), " + std::to_string(keys.size()) + " keys");

  std::vector<std::unique_ptr<ShardMember>> running;
  int next = 1;
  for (; next <= members; ++next)
    running.push_back(std::make_unique<ShardMember>("member-" + std::to_string(next), bootstrap, group, keys));
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  auto nextChange = std::chrono::steady_clock::now() + 8s;
  while (!stopping && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(100ms);
    if (std::chrono::steady_clock::now() < nextChange) continue;
    nextChange += 8s;
    say("shard", "the oldest member leaves; a new one joins");
    running.front()->leave();
    running.erase(running.begin());
    running.push_back(std::make_unique<ShardMember>("member-" + std::to_string(next++), bootstrap, group, keys));
  }
  stopping = true;
  running.clear();
  say("shard", "done; the group was ephemeral and is gone with its last member");
  return 0;
}
