#pragma once

// What the scenarios of groupcoord-bench share: their arguments, progress
// lines, the table's rows and number formats, topics written in ZooKeeper,
// and callgrind's windows (instructions per request of a server).

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "bench/Ensemble.h"

namespace groupcoord::bench {

inline constexpr uint64_t kMs = 1'000'000;
inline constexpr uint64_t kSec = 1'000'000'000;

// --key=value or --key value, as parsed by main().
struct Args {
  std::map<std::string, std::string> values;
  std::string get(const std::string& key, const std::string& def = "") const;
  long num(const std::string& key, long def) const;
  // A comma-separated list of numbers.
  std::vector<long> list(const std::string& key) const;
};

// A progress line on standard error.
void log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Says why on standard error and exits 1: the scenario could not complete.
[[noreturn]] void fail(const std::string& why);
// One row of the Markdown table on standard output.
void row(const std::string& scenario, const std::string& figure, const std::string& value,
         const std::string& target = "");

std::string fmt(double v, int decimals = 0);
// Thousands separated, for counts and rates.
std::string count(double v);
// A short number from the clock, to name this run's groups and topics.
std::string stamp();

// Writes a Kafka-layout topic with `partitions` partitions directly in
// ZooKeeper, as a broker would.
void createTopic(const EnsembleProbe& zk, const std::string& topicsPath, const std::string& topic,
                 int32_t partitions);
// Sets the topic znode at `path` to `partitions` partitions (a growth).
void growTopic(const EnsembleProbe& zk, const std::string& path, int32_t partitions);

// The Ir total of the newest callgrind dump `BASE.<pid>.<k>`; -1 if none.
double newestDump(const std::string& base, int pid);
// callgrind_control COMMAND PID; whether it succeeded.
bool callgrind(const std::string& command, int pid);
// Instructions per request of the server `pid`, running under callgrind
// with instrumentation off and dumping to BASE.<pid>.<k>: `drive(k)` sends
// k requests and returns once all are answered. After a warm-up of 2,000,
// a window of n requests and one of 2n are counted (callgrind_control -z,
// -i on, drive, -i off, -d); the difference over n is one request's
// instructions, whatever a window costs besides its requests.
double perRequestInstructions(int pid, const std::string& base, size_t n, const std::function<void(size_t)>& drive);

}  // namespace groupcoord::bench
