// groupcoord_consumer_probe: one C++ Consumer in a group, for the Python
// client's mixed-language tests. It prints every grant and release on
// standard output, one line each, stamped with the steady clock
// (CLOCK_MONOTONIC, the clock Python's time.monotonic_ns() reads):
//
//   <ns> grant <topic> <partition>
//   <ns> release <topic> <partition> revoked|lost
//   <ns> member <id> generation <n>
//
// It runs until SIGTERM (then closes: revokes, leaves) or --seconds pass.
//
//   groupcoord_consumer_probe --bootstrap HOST:PORT[,HOST:PORT] --group G [--client-id C] [--seconds S]

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "client/Consumer.h"

namespace {

std::atomic<bool> stopping{false};

long long nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void line(const std::string& text) {
  std::printf("%lld %s\n", nowNs(), text.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string bootstrapText, group, clientId = "cpp-probe";
  int seconds = 120;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--bootstrap") bootstrapText = v;
    else if (a == "--group") group = v;
    else if (a == "--client-id") clientId = v;
    else if (a == "--seconds") seconds = std::atoi(v.c_str());
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (bootstrapText.empty() || group.empty()) {
    std::fprintf(stderr, "usage: groupcoord_consumer_probe --bootstrap HOST:PORT --group G [--seconds S]\n");
    return 2;
  }
  groupcoord::client::ConsumerConfig config;
  std::stringstream list(bootstrapText);
  for (std::string hp; std::getline(list, hp, ',');) {
    const auto colon = hp.rfind(':');
    if (colon == std::string::npos) return 2;
    config.bootstrap.emplace_back(hp.substr(0, colon), static_cast<uint16_t>(std::atoi(hp.c_str() + colon + 1)));
  }
  config.group = group;
  config.clientId = clientId;
  groupcoord::client::ConsumerCallbacks callbacks;
  callbacks.onAssigned = [](const std::vector<groupcoord::protocol::PartitionOffset>& ps) {
    for (const auto& p : ps) line("grant " + p.topic + " " + std::to_string(p.partition));
  };
  callbacks.onRevoked = [](const std::vector<groupcoord::protocol::TopicPartition>& ps) {
    for (const auto& p : ps) line("release " + p.topic + " " + std::to_string(p.partition) + " revoked");
  };
  callbacks.onLost = [](const std::vector<groupcoord::protocol::TopicPartition>& ps) {
    for (const auto& p : ps) line("release " + p.topic + " " + std::to_string(p.partition) + " lost");
  };
  std::signal(SIGTERM, [](int) { stopping = true; });
  std::signal(SIGINT, [](int) { stopping = true; });

  groupcoord::client::Consumer consumer(config, callbacks);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int64_t shown = -1;
  while (!stopping && std::chrono::steady_clock::now() < end) {
    const auto status = consumer.poll(std::chrono::milliseconds(100));
    if (!status.ok() && status.code != groupcoord::protocol::ErrorCode::CONTROLLER_NOT_AVAILABLE &&
        status.code != groupcoord::protocol::ErrorCode::NOT_CONTROLLER) {
      std::fprintf(stderr, "poll: %s\n", status.toString().c_str());
    }
    if (consumer.generation() != shown && consumer.generation() >= 0) {
      shown = consumer.generation();
      line("member " + consumer.memberId() + " generation " + std::to_string(shown));
    }
  }
  consumer.close();
  line("closed");
  return 0;
}
