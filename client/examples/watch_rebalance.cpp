// groupcoord-watch: watch a consumer group rebalance, live.
//
// Starts a few consumers of one group in this process. Every few seconds one
// of them leaves and a new one joins; each prints its generation and the
// partitions it owns whenever they change. Run it right after
// `scripts/dev.sh run`, with a topic created by
// `groupctl topic create demo --partitions 6 --zookeeper 127.0.0.1:2181`.

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/Admin.h"
#include "client/Consumer.h"
#include "client/examples/ExampleSupport.h"

namespace {

using namespace std::chrono_literals;
using groupcoord::client::Endpoint;
using groupcoord::examples::say;

std::atomic<bool> stopping{false};

std::string describe(const std::vector<groupcoord::protocol::TopicPartition>& ps) {
  if (ps.empty()) return "(nothing)";
  std::ostringstream out;
  for (size_t i = 0; i < ps.size(); ++i) out << (i ? " " : "") << ps[i].topic << "-" << ps[i].partition;
  return out.str();
}

// One consumer on its own thread, polling until told to leave.
class DemoConsumer {
 public:
  DemoConsumer(std::string name, const std::vector<Endpoint>& bootstrap, const std::string& group)
      : name_(std::move(name)) {
    groupcoord::client::ConsumerConfig c;
    c.bootstrap = bootstrap;
    c.group = group;
    c.clientId = name_;
    groupcoord::client::ConsumerCallbacks cb;
    cb.onRevoked = [this](const auto& ps) { say(name_, "revoked  " + describe(ps)); };
    cb.onLost = [this](const auto& ps) { say(name_, "LOST     " + describe(ps) + " (no heartbeat for the session timeout)"); };
    consumer_ = std::make_unique<groupcoord::client::Consumer>(std::move(c), std::move(cb));
    thread_ = std::thread([this] { run(); });
  }
  ~DemoConsumer() { leave(); }

  void leave() {
    leave_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    int64_t shownGeneration = -2;
    std::string shown;
    while (!leave_ && !stopping) {
      auto status = consumer_->poll(200ms);
      if (!status.ok() && status.code != groupcoord::protocol::ErrorCode::CONTROLLER_NOT_AVAILABLE &&
          status.code != groupcoord::protocol::ErrorCode::NOT_CONTROLLER &&
          status.code != groupcoord::protocol::ErrorCode::UNKNOWN_CONSUMER &&
          status.code != groupcoord::protocol::ErrorCode::REBALANCE_NEEDED) {
        say(name_, "error    " + status.toString());
        std::this_thread::sleep_for(1s);
      }
      std::string now = describe(consumer_->assignment());
      if (consumer_->generation() != shownGeneration || now != shown) {
        shownGeneration = consumer_->generation();
        shown = now;
        if (shownGeneration >= 0)
          say(name_, "generation " + std::to_string(shownGeneration) + "  owns " + shown + "  (member " +
                         consumer_->memberId() + ")");
      }
    }
    consumer_->close();
    say(name_, "left the group");
  }

  std::string name_;
  std::unique_ptr<groupcoord::client::Consumer> consumer_;
  std::atomic<bool> leave_{false};
  std::thread thread_;
};

void usage() {
  std::cout << "usage: groupcoord-watch [--bootstrap HOST:PORT[,HOST:PORT]] [--group NAME] [--topic NAME]\n"
               "                        [--consumers N] [--seconds S]\n\n"
               "Starts N consumers of GROUP (created if missing, subscribed to TOPIC) and, every few\n"
               "seconds, has one leave and a new one join, printing each consumer's generation and\n"
               "partitions as they change. Defaults: $GROUPCTL_BOOTSTRAP (as groupctl), else\n"
               "127.0.0.1:7400; group demo, topic demo, 3 consumers, 60 seconds. A group that\n"
               "exists already is joined as it is. Create the topic first, for example:\n"
               "  groupctl topic create demo --partitions 6 --zookeeper 127.0.0.1:2181\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::string bootstrapText = "127.0.0.1:7400", group = "demo", topic = "demo";
  if (const char* env = std::getenv("GROUPCTL_BOOTSTRAP"); env != nullptr && *env != '\0') bootstrapText = env;
  int consumers = 3, seconds = 60;
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
    } else if (a == "--topic") {
      topic = value();
    } else if (a == "--consumers") {
      consumers = std::atoi(value().c_str());
    } else if (a == "--seconds") {
      seconds = std::atoi(value().c_str());
    } else {
      std::cerr << "unknown option " << a << "\n";
      usage();
      return 2;
    }
  }
  if (consumers < 1 || consumers > 50 || seconds < 1) {
    std::cerr << "--consumers must be 1..50 and --seconds at least 1\n";
    return 2;
  }
  std::vector<Endpoint> bootstrap;
  if (!groupcoord::examples::parseBootstrap(bootstrapText, &bootstrap)) return 2;
  std::signal(SIGINT, [](int) { stopping = true; });
  std::signal(SIGTERM, [](int) { stopping = true; });

  groupcoord::client::Admin admin(bootstrap);
  auto created = admin.createGroup(group, 6s, {topic}, /*ephemeral=*/true);
  if (created.ok()) {
    say("watch", "group " + group + " (topic " + topic + ", session timeout 6 s) is controlled by " +
                     created.value.host + ":" + std::to_string(created.value.port));
  } else if (created.status.code == groupcoord::protocol::ErrorCode::GROUP_ALREADY_EXISTS) {
    // Joined as it is: its own topics and session timeout, not these.
    auto listed = admin.listGroups({group});
    std::string topics;
    if (listed.ok() && listed.value.size() == 1) {
      for (const auto& t : listed.value[0].topics) topics += (topics.empty() ? "" : ",") + t;
    }
    say("watch", "group " + group + " exists already (topics " + (topics.empty() ? "?" : topics) +
                     "): joining it as it is; --topic applies only to a group this creates");
  } else {
    std::cerr << "cannot create group " << group << ": " << created.status.toString() << "\n";
    return 1;
  }

  std::vector<std::unique_ptr<DemoConsumer>> running;
  int next = 1;
  for (; next <= consumers; ++next)
    running.push_back(std::make_unique<DemoConsumer>("consumer-" + std::to_string(next), bootstrap, group));
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  auto nextChange = std::chrono::steady_clock::now() + 8s;
  while (!stopping && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(100ms);
    if (std::chrono::steady_clock::now() < nextChange) continue;
    nextChange += 8s;
    say("watch", "consumer " + std::to_string(next - consumers) + " of the oldest leaves; a new one joins");
    running.front()->leave();
    running.erase(running.begin());
    running.push_back(std::make_unique<DemoConsumer>("consumer-" + std::to_string(next++), bootstrap, group));
  }
  stopping = true;
  running.clear();
  say("watch", "done; the group was ephemeral and is gone with its last member");
  return 0;
}
