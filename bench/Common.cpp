#include "bench/Common.h"

#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#include "common/Layout.h"
#include "zk/Session.h"

namespace groupcoord::bench {

std::string Args::get(const std::string& key, const std::string& def) const {
  auto it = values.find(key);
  return it == values.end() ? def : it->second;
}

long Args::num(const std::string& key, long def) const {
  auto it = values.find(key);
  return it == values.end() ? def : std::stol(it->second);
}

std::vector<long> Args::list(const std::string& key) const {
  std::vector<long> out;
  std::stringstream in(get(key));
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(std::stol(item));
  }
  return out;
}

void log(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fputs("[bench] ", stderr);
  std::vfprintf(stderr, fmt, ap);
  std::fputc('\n', stderr);
  va_end(ap);
}

void fail(const std::string& why) {
  std::fprintf(stderr, "[bench] FAILED: %s\n", why.c_str());
  std::exit(1);
}

void row(const std::string& scenario, const std::string& figure, const std::string& value,
         const std::string& target) {
  std::printf("| %s | %s | %s | %s |\n", scenario.c_str(), figure.c_str(), value.c_str(), target.c_str());
  std::fflush(stdout);
}

std::string fmt(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string count(double v) {
  std::string digits = fmt(std::round(v));
  std::string out;
  int n = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (n && n % 3 == 0 && *it != '-') out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++n;
  }
  return out;
}

std::string stamp() {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count() %
                        100000000);
}

namespace {
// A ZooKeeper session of its own for `write`, closed after it; the run
// fails when the ensemble cannot be reached.
void withSession(const EnsembleProbe& zk, const std::function<void(zk::Session&)>& write) {
  zk::SessionConfig cfg;
  cfg.connect = zk.connectString();
  zk::Session s(cfg);
  s.start();
  if (s.waitConnected(std::chrono::seconds(15)) != zk::Error::Ok) fail("cannot connect to ZooKeeper at " + cfg.connect);
  write(s);
  s.close();
}
}  // namespace

void createTopic(const EnsembleProbe& zk, const std::string& topicsPath, const std::string& topic,
                 int32_t partitions) {
  withSession(zk, [&](zk::Session& s) {
    if (s.ensurePathSync(topicsPath) != zk::Error::Ok) fail("cannot create " + topicsPath);
    auto r = s.createSync(topicsPath + "/" + topic, layout::encodeTopic(partitions), zk::CreateMode::Persistent);
    if (r.error != zk::Error::Ok) fail("cannot create topic " + topic);
  });
}

void growTopic(const EnsembleProbe& zk, const std::string& path, int32_t partitions) {
  withSession(zk, [&](zk::Session& s) {
    if (s.setSync(path, layout::encodeTopic(partitions)).error != zk::Error::Ok) fail("cannot grow " + path);
  });
}

double newestDump(const std::string& base, int pid) {
  double ir = -1;
  for (int k = 1; k < 1000; ++k) {
    std::ifstream in(base + "." + std::to_string(pid) + "." + std::to_string(k));
    if (!in) {
      if (k > 1) break;
      continue;
    }
    std::string line;
    while (std::getline(in, line)) {
      // "totals:" sums every cost line of the dump ("summary:" reads 0 in
      // dumps taken with the instrumentation switched on and off).
      if (line.rfind("totals:", 0) == 0) ir = std::strtod(line.c_str() + 7, nullptr);
    }
  }
  return ir;
}

bool callgrind(const std::string& command, int pid) {
  const std::string cmd = "callgrind_control " + command + " " + std::to_string(pid) + " > /dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

double perRequestInstructions(int pid, const std::string& base, size_t n, const std::function<void(size_t)>& drive) {
  drive(2000);  // warm: caches, the connection's buffers
  double windows[2] = {0, 0};
  for (int w = 0; w < 2; ++w) {
    if (!callgrind("-z", pid) || !callgrind("-i on", pid)) fail("callgrind_control cannot reach pid " + std::to_string(pid));
    drive(n * static_cast<size_t>(w + 1));
    callgrind("-i off", pid);
    callgrind("-d", pid);
    windows[w] = newestDump(base, pid);
    if (windows[w] < 0) fail("no callgrind dump under " + base);
  }
  return (windows[1] - windows[0]) / static_cast<double>(n);
}

}  // namespace groupcoord::bench
