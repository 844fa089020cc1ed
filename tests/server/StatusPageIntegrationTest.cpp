// The status page and its JSON on groupcoordd processes against the live
// ensemble: in a real browser (headless chromium: the DOM and a
// screenshot), with authentication, through the proxy to a group's
// controller on another server, and over HTTPS.
//
// GROUPCOORD_STATUS_SCREENSHOT=PATH copies the browser test's screenshot
// there (docs/status-page.png is made so).

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/Admin.h"
#include "client/Consumer.h"
#include "common/Layout.h"
#include "server/Auth.h"
#include "support/ServerProcess.h"
#include "support/TestCertificates.h"
#include "support/TestEnv.h"
#include "support/TestSession.h"
#include "support/Timing.h"
#include "zk/Session.h"

namespace groupcoord::testing {
namespace {

using namespace std::chrono_literals;
using client::Admin;
using client::AdminOptions;
using client::Consumer;
using client::ConsumerConfig;
using client::Endpoint;
using client::SecurityOptions;
using protocol::TopicPartition;

constexpr const char* kAdminSecret = "status-ops-3e1f";
constexpr const char* kMemberSecret = "status-app-77a0";

// The longest the HTTP port takes to answer by design: a status page may
// wait for another server, 3 s in all (docs/design.md, "The HTTP side").
constexpr std::chrono::milliseconds kHttpAnswerBound{3000};

// The servers' ZooKeeper session timeout, as configured below.
constexpr std::chrono::milliseconds kZkSessionTimeout{4000};
// group.join.window.max.ms, the default: the longest a join waits in the
// group's batch.
constexpr std::chrono::milliseconds kJoinWindowMax{3000};
// Room, polled, for the group to settle after a change here: an eviction
// (after the group's 6 s session), a join window, a topic's resize, each
// written to ZooKeeper, and the members' own views catching up.
constexpr auto kStableWithin = 40s;
// Room, polled, for both servers to have read the group and its controller
// (a claim, then each server's watch).
constexpr auto kProxiedWithin = 20s;

// How long a request is waited for: a registration leaves the batch within
// the join window, and an answer that needs ZooKeeper comes within the
// server's ZooKeeper session (past it the server answers
// CONTROLLER_NOT_AVAILABLE); plus the scheduling allowance (tests/README.md,
// "Time in tests").
std::chrono::milliseconds answerWait() { return designBound(kJoinWindowMax + kZkSessionTimeout); }

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

// Runs argv[0] with its standard output in `stdoutFile`; its exit code, or
// -1 when it had to be killed after `timeout` (it runs in a process group
// of its own, so the helpers it started go with it).
int runBounded(const std::vector<std::string>& argv, const std::string& stdoutFile, std::chrono::seconds timeout) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    FILE* out = std::freopen(stdoutFile.c_str(), "w", stdout);
    FILE* err = std::freopen((stdoutFile + ".err").c_str(), "w", stderr);
    (void)out;
    (void)err;
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  if (pid < 0) return -1;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::this_thread::sleep_for(50ms);
  }
  ::kill(-pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return -1;
}

struct Fetched {
  int status = 0;  // 0: no HTTP answer
  std::string body;
};

// GET with curl (HTTPS with a CA, Basic credentials when given).
Fetched curl(const std::string& dir, const std::string& url, const std::string& user = "",
             const std::string& secret = "", const std::string& caFile = "") {
  // --max-time: the HTTP port's longest answer (3 s, for a page that asks
  // another server) plus the scheduling allowance, and 2 s for curl itself
  // (15 s by default).
  const auto maxTime = std::chrono::ceil<std::chrono::seconds>(designBound(kHttpAnswerBound)) + 2s;
  std::vector<std::string> argv{"/usr/bin/curl", "-s", "--max-time", std::to_string(maxTime.count()), "-o",
                                dir + "/curl.body", "-w", "%{http_code}"};
  if (!user.empty()) argv.insert(argv.end(), {"-u", user + ":" + secret});
  if (!caFile.empty()) argv.insert(argv.end(), {"--cacert", caFile});
  argv.push_back(url);
  std::filesystem::remove(dir + "/curl.body");
  runBounded(argv, dir + "/curl.code", maxTime + 5s);
  return Fetched{std::atoi(readFile(dir + "/curl.code").c_str()), readFile(dir + "/curl.body")};
}

// A member polling on a thread of its own; other work on its consumer runs
// on that thread too (a Consumer is used by one thread at a time).
class Member {
 public:
  explicit Member(ConsumerConfig config) : consumer_(std::move(config), {}), thread_([this] { loop(); }) {}
  ~Member() { stop(false); }

  // Stops polling; `leave`: LeaveGroup, else it just goes silent.
  void stop(bool leave) {
    if (!stopping_.exchange(true)) thread_.join();
    if (leave && !closed_.exchange(true)) consumer_.close();
  }
  std::string id() const {
    std::lock_guard<std::mutex> lock(mu_);
    return id_;
  }
  std::vector<TopicPartition> assignment() const {
    std::lock_guard<std::mutex> lock(mu_);
    return assignment_;
  }
  // Commits `base + partition` for every partition it holds. A commit the
  // library gave up on (its requests are capped at half the group's session)
  // is made again, as a client would, until answerWait() has passed.
  bool commitHeld(int64_t base) {
    const auto deadline = std::chrono::steady_clock::now() + answerWait();
    for (;;) {
      // Shared with the task, which may run after this returns.
      auto result = std::make_shared<std::atomic<int>>(-1);
      {
        std::lock_guard<std::mutex> lock(mu_);
        task_ = [this, base, result] {
          std::vector<protocol::PartitionOffset> offsets;
          for (const auto& tp : consumer_.assignment()) {
            offsets.push_back({tp.topic, tp.partition, base + tp.partition});
          }
          *result = consumer_.commitSync(offsets).ok() ? 1 : 0;
        };
      }
      while (*result < 0 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
      if (*result == 1) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
    }
  }

 private:
  void loop() {
    while (!stopping_) {
      consumer_.poll(50ms);
      std::function<void()> task;
      {
        std::lock_guard<std::mutex> lock(mu_);
        id_ = consumer_.memberId();
        assignment_ = consumer_.assignment();
        task.swap(task_);
      }
      if (task) task();
    }
  }

  Consumer consumer_;
  mutable std::mutex mu_;
  std::string id_;
  std::vector<TopicPartition> assignment_;
  std::function<void()> task_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> closed_{false};
  std::thread thread_;
};

struct Server {
  std::unique_ptr<ServerProcess> process;
  uint16_t httpPort = 0;
  uint16_t internalPort = 0;  // its internal listener's, when it has one
};

// A port of 127.0.0.1 that nothing listened on a moment ago.
uint16_t unusedPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

class StatusPageIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    requireEnsemble();
    root_ = "/" + uniqueName("statuspage");
    topicsPath_ = root_ + "-topics";
    char tmpl[] = "/tmp/groupcoord-status-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    zk_ = openTestSession();
    ASSERT_NE(zk_, nullptr);
    ASSERT_EQ(zk_->ensurePathSync(topicsPath_), zk::Error::Ok);
    setTopic("orders", 4, true);
    setTopic("payments", 2, true);
  }

  void TearDown() override {
    members_.clear();
    servers_.clear();
    std::error_code ignored;
    if (dir_.rfind("/tmp/groupcoord-status-", 0) == 0) std::filesystem::remove_all(dir_, ignored);
  }

  void setTopic(const std::string& topic, int partitions, bool create) {
    const std::string path = topicsPath_ + "/" + topic;
    if (create) {
      ASSERT_EQ(zk_->createSync(path, layout::encodeTopic(partitions), zk::CreateMode::Persistent).error,
                zk::Error::Ok);
    } else {
      ASSERT_EQ(zk_->setSync(path, layout::encodeTopic(partitions), -1).error, zk::Error::Ok);
    }
  }

  Server& startServer(int id, std::vector<std::string> extra = {}) {
    const std::string portFile = dir_ + "/http-" + std::to_string(id);
    std::vector<std::string> args{"--zk-root=" + root_,
                                  "--zk-topics-path=" + topicsPath_,
                                  "--server-id=" + std::to_string(id),
                                  "--zk-session-timeout-ms=" + std::to_string(kZkSessionTimeout.count()),
                                  "--io-threads=2",
                                  "--handover-settle-ms=0",
                                  "--http-port=0",
                                  "--http-port-file=" + portFile};
    args.insert(args.end(), extra.begin(), extra.end());
    Server s;
    s.process = std::make_unique<ServerProcess>(args);
    EXPECT_TRUE(s.process->start());
    // The HTTP port is written as the server starts: at once, so waited for
    // up to the scheduling allowance.
    eventuallyWithin(schedulingAllowance(), [&] {
      s.httpPort = static_cast<uint16_t>(std::atoi(readFile(portFile).c_str()));
      return s.httpPort != 0;
    });
    EXPECT_NE(s.httpPort, 0) << s.process->log();
    servers_.push_back(std::move(s));
    return servers_.back();
  }

  // Through the internal listeners when the servers have them.
  std::vector<Endpoint> bootstrap() const {
    std::vector<Endpoint> out;
    for (const auto& s : servers_) {
      out.push_back({"127.0.0.1", s.internalPort != 0 ? s.internalPort : s.process->port()});
    }
    return out;
  }

  // A server whose advertised address leads nowhere from here (a port
  // nothing listens on, as a published port seen from inside a container),
  // with an internal listener that works.
  Server& startServerBehindAddressThatLeadsNowhere(int id) {
    const uint16_t internal = unusedPort();
    Server& s = startServer(id, {"--advertised-host=127.0.0.1", "--advertised-port=" + std::to_string(unusedPort()),
                                 "--internal-listen-port=" + std::to_string(internal),
                                 "--internal-advertised-host=127.0.0.1"});
    s.internalPort = internal;
    return s;  // until the next start: servers_ may move it
  }

  AdminOptions adminOptions() const {
    AdminOptions o;
    o.requestTimeout = answerWait();
    o.security = security_;
    if (!security_.user.empty()) {
      o.security.user = "ops";
      o.security.secret = kAdminSecret;
    }
    return o;
  }

  Member& addMember(const std::string& clientId) {
    ConsumerConfig c;
    c.bootstrap = bootstrap();
    c.group = group_;
    c.clientId = clientId;
    c.security = security_;
    members_.push_back(std::make_unique<Member>(c));
    return *members_.back();
  }

  // Until the controller's answer and every member's own view agree: each
  // partition with one member, nothing waiting, the group stable.
  protocol::DescribeGroupResponse waitStable(size_t members, size_t partitions) {
    Admin admin(bootstrap(), adminOptions());
    protocol::DescribeGroupResponse last;
    const auto deadline = std::chrono::steady_clock::now() + designBound(kStableWithin);
    while (std::chrono::steady_clock::now() < deadline) {
      auto d = admin.describeGroup(group_);
      if (d.ok()) {
        last = d.value;
        size_t held = 0;
        bool agree = d.value.state == protocol::GroupState::STABLE && d.value.members.size() == members;
        for (const auto& m : d.value.members) {
          held += m.held.size();
          agree = agree && m.waiting.empty();
          bool found = false;
          for (const auto& mine : members_) {
            if (mine->id() != m.consumerId) continue;
            auto a = mine->assignment();
            std::sort(a.begin(), a.end());
            auto h = m.held;
            std::sort(h.begin(), h.end());
            found = a == h;
          }
          agree = agree && found;
        }
        if (agree && held == partitions) return last;
      }
      std::this_thread::sleep_for(100ms);
    }
    ADD_FAILURE() << "group " << group_ << " did not settle; last answer had " << last.members.size() << " members";
    return last;
  }

  void createGroup(const std::vector<std::string>& topics, std::chrono::milliseconds sessionTimeout = 6000ms) {
    Admin admin(bootstrap(), adminOptions());
    auto created = admin.createGroup(group_, sessionTimeout, topics, false);
    ASSERT_TRUE(created.ok()) << created.status.toString();
  }

  std::string credentialsFile() {
    std::string error;
    const std::string path = dir_ + "/credentials";
    writeFile(path, server::makeCredentialLine("ops", server::Role::Admin, kAdminSecret, 10000, &error) + "\n" +
                        server::makeCredentialLine("app", server::Role::Member, kMemberSecret, 10000, &error) + "\n");
    EXPECT_EQ(error, "");
    return path;
  }

  std::string chromium(const std::vector<std::string>& extra, const std::string& url, const std::string& out) {
    std::vector<std::string> argv{"/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu",
                                  "--disable-dev-shm-usage", "--no-first-run", "--hide-scrollbars",
                                  "--user-data-dir=" + dir_ + "/chromium-profile"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(url);
    const int rc = runBounded(argv, out, 90s);
    EXPECT_EQ(rc, 0) << "chromium failed or hung (killed after 90 s); its errors:\n" << readFile(out + ".err");
    return readFile(out);
  }

  std::string root_, topicsPath_, dir_;
  std::string group_ = "shop";
  SecurityOptions security_;
  std::unique_ptr<zk::Session> zk_;
  std::vector<Server> servers_;
  std::vector<std::unique_ptr<Member>> members_;
};

TEST_F(StatusPageIntegrationTest, ABrowserShowsTheMembersTheirPartitionsAndTheLatestReason) {
  Server& server = startServer(1);
  createGroup({"orders", "payments"});
  addMember("checkout-api");
  addMember("billing-worker");
  Member& audit = addMember("audit-log");
  waitStable(3, 6);
  // Some history: a join, a silent member evicted, a topic that grows.
  addMember("fulfilment");
  waitStable(4, 6);
  audit.stop(false);
  members_.erase(std::find_if(members_.begin(), members_.end(), [&](auto& m) { return m.get() == &audit; }));
  waitStable(3, 6);
  setTopic("payments", 3, false);
  const auto described = waitStable(3, 7);
  for (auto& m : members_) ASSERT_TRUE(m->commitHeld(1000));
  ASSERT_FALSE(described.history.empty());
  const std::string latest(protocol::rebalanceReasonName(described.history.back().reason));

  const std::string url = "http://127.0.0.1:" + std::to_string(server.httpPort) + "/groups/" + group_;
  const std::string dom = chromium({"--dump-dom"}, url, dir_ + "/dom.html");
  EXPECT_NE(dom.find("<table"), std::string::npos) << dom.substr(0, 2000);
  for (const auto& m : described.members) {
    EXPECT_NE(dom.find(m.consumerId), std::string::npos) << m.consumerId;
    EXPECT_NE(dom.find(m.clientId), std::string::npos) << m.clientId;
    for (const auto& tp : m.held) {
      EXPECT_NE(dom.find(tp.topic + "-" + std::to_string(tp.partition)), std::string::npos) << tp.topic;
    }
  }
  EXPECT_NE(dom.find(latest), std::string::npos) << latest;
  EXPECT_NE(dom.find("MEMBER_EVICTED"), std::string::npos);
  EXPECT_NE(dom.find(">1000<"), std::string::npos);  // a committed offset

  // The fleet page links the group.
  const std::string fleet = curl(dir_, "http://127.0.0.1:" + std::to_string(server.httpPort) + "/").body;
  EXPECT_NE(fleet.find("href=\"/groups/" + group_ + "\""), std::string::npos) << fleet.substr(0, 2000);

  const std::string png = dir_ + "/page.png";
  chromium({"--screenshot=" + png, "--window-size=1440,900"}, url, dir_ + "/screenshot.out");
  const std::string image = readFile(png);
  ASSERT_GT(image.size(), 1000u);
  EXPECT_EQ(image.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  if (const char* keep = std::getenv("GROUPCOORD_STATUS_SCREENSHOT")) std::filesystem::copy_file(
      png, keep, std::filesystem::copy_options::overwrite_existing);
}

TEST_F(StatusPageIntegrationTest, WithAuthenticationThePageAndTheApiNeedAnAdmin) {
  security_.user = "app";
  security_.secret = kMemberSecret;
  Server& server = startServer(1, {"--auth-credentials-file=" + credentialsFile()});
  createGroup({"orders"});
  addMember("checkout-api");
  waitStable(1, 4);
  const std::string base = "http://127.0.0.1:" + std::to_string(server.httpPort);
  for (const std::string path : {"/", "/groups/shop", "/api/fleet", "/api/groups", "/api/groups/shop", "/api/servers"}) {
    EXPECT_EQ(curl(dir_, base + path).status, 401) << path;
    EXPECT_EQ(curl(dir_, base + path, "app", kMemberSecret).status, 401) << path;
    EXPECT_EQ(curl(dir_, base + path, "ops", "not the secret").status, 401) << path;
    EXPECT_EQ(curl(dir_, base + path, "ops", kAdminSecret).status, 200) << path;
  }
  auto api = curl(dir_, base + "/api/groups/shop", "ops", kAdminSecret);
  EXPECT_EQ(nlohmann::json::parse(api.body)["members"].size(), 1u);
  EXPECT_EQ(curl(dir_, base + "/metrics").status, 200);
  EXPECT_EQ(curl(dir_, base + "/health/live").status, 200);
}

// Asks the server that does not control the group for it, until one
// answers through its proxy (a handover may move the group meanwhile).
void expectProxied(const std::vector<Server>& servers, const std::function<Fetched(const Server&, const std::string&)>& get,
                   const std::string& memberId) {
  bool proxied = false;
  const auto deadline = std::chrono::steady_clock::now() + designBound(kProxiedWithin);
  while (!proxied && std::chrono::steady_clock::now() < deadline) {
    auto listed = get(servers[0], "/api/groups");
    ASSERT_EQ(listed.status, 200) << listed.body;
    auto groups = nlohmann::json::parse(listed.body)["groups"];
    ASSERT_EQ(groups.size(), 1u);
    if (!groups[0]["controller"].is_object()) continue;
    const int controller = groups[0]["controller"]["id"];
    const Server& other = servers[controller == 1 ? 1 : 0];
    auto described = get(other, "/api/groups/shop");
    if (described.status != 200) {
      std::this_thread::sleep_for(200ms);
      continue;
    }
    auto g = nlohmann::json::parse(described.body);
    if (g["controller"]["id"] != controller) continue;  // it moved meanwhile: ask again
    ASSERT_EQ(g["members"].size(), 1u);
    EXPECT_EQ(g["members"][0]["id"], memberId);
    EXPECT_EQ(g["members"][0]["held"].size(), 4u);
    EXPECT_FALSE(g["history"].empty());
    auto fleet = nlohmann::json::parse(get(other, "/api/fleet").body);
    EXPECT_EQ(fleet["servers"].size(), 2u);
    EXPECT_NE(fleet["server"], controller);  // answered by the other server
    // The placement as the other server computes it (DescribeServers): both
    // servers live, the group counted on its controller.
    auto placed = get(other, "/api/servers");
    ASSERT_EQ(placed.status, 200) << placed.body;
    auto placement = nlohmann::json::parse(placed.body);
    EXPECT_EQ(placement["server"], fleet["server"]);
    ASSERT_EQ(placement["servers"].size(), 2u) << placed.body;
    for (const auto& s : placement["servers"]) {
      EXPECT_EQ(s["live"], true) << placed.body;
      EXPECT_TRUE(s.contains("load") && s.contains("bound") && s.contains("placed") && s.contains("state"));
    }
    EXPECT_TRUE(placement["moves"].is_array());
    EXPECT_EQ(placement["without_controller"], nlohmann::json::array());
    auto page = get(other, "/groups/shop");
    EXPECT_EQ(page.status, 200);
    EXPECT_NE(page.body.find(memberId), std::string::npos);
    proxied = true;
  }
  EXPECT_TRUE(proxied) << "no server answered for a group controlled by the other";
}

TEST_F(StatusPageIntegrationTest, AServerAnswersForAGroupControlledByAnother) {
  startServer(1);
  startServer(2);
  createGroup({"orders"});
  Member& m = addMember("checkout-api");
  waitStable(1, 4);
  expectProxied(servers_, [this](const Server& s, const std::string& path) {
    return curl(dir_, "http://127.0.0.1:" + std::to_string(s.httpPort) + path);
  }, m.id());
}

// As in a compose deployment: each server advertises the address clients
// outside reach it at, which leads nowhere from where the servers run; the
// servers dial each other at their internal addresses, and a client that
// came through an internal listener is told internal addresses.
TEST_F(StatusPageIntegrationTest, ServersWhoseAdvertisedAddressesLeadNowhereReachEachOtherInternally) {
  startServerBehindAddressThatLeadsNowhere(1);
  startServerBehindAddressThatLeadsNowhere(2);
  const Server& one = servers_[0];
  createGroup({"orders"});
  Member& m = addMember("checkout-api");  // through the internal listeners
  waitStable(1, 4);
  expectProxied(servers_, [this](const Server& s, const std::string& path) {
    return curl(dir_, "http://127.0.0.1:" + std::to_string(s.httpPort) + path);
  }, m.id());
  // The page names the controller by the address clients are told.
  for (const Server& s : servers_) {
    auto g = nlohmann::json::parse(curl(dir_, "http://127.0.0.1:" + std::to_string(s.httpPort) + "/api/groups/shop").body);
    ASSERT_TRUE(g["controller"].is_object()) << g.dump();
    const Server& controller = servers_[g["controller"]["id"] == 1 ? 0 : 1];
    EXPECT_NE(g["controller"]["port"], controller.internalPort) << g.dump();
  }

  // The same question through either port of server 1: the answer names
  // the controller's address for where the question came from.
  Admin inside({{"127.0.0.1", one.internalPort}}, adminOptions());
  Admin outside({{"127.0.0.1", one.process->port()}}, adminOptions());
  auto viaInternal = inside.listGroups({group_});
  auto viaClientPort = outside.listGroups({group_});
  ASSERT_TRUE(viaInternal.ok()) << viaInternal.status.toString();
  ASSERT_TRUE(viaClientPort.ok()) << viaClientPort.status.toString();
  ASSERT_EQ(viaInternal.value.size(), 1u);
  ASSERT_EQ(viaClientPort.value.size(), 1u);
  const protocol::Broker internal = viaInternal.value[0].controller;
  const protocol::Broker advertised = viaClientPort.value[0].controller;
  ASSERT_FALSE(internal.isNone());
  EXPECT_EQ(internal.brokerId, advertised.brokerId);
  const Server& controller = servers_[internal.brokerId == 1 ? 0 : 1];
  EXPECT_EQ(internal.port, controller.internalPort);
  EXPECT_NE(advertised.port, controller.internalPort);
  EXPECT_NE(advertised.port, controller.process->port());

  // Followed from inside, the controller's address works.
  auto described = inside.describeGroup(group_);
  ASSERT_TRUE(described.ok()) << described.status.toString();
  EXPECT_EQ(described.value.controller.port, controller.internalPort);
  ASSERT_EQ(described.value.members.size(), 1u);
  EXPECT_EQ(described.value.members[0].consumerId, m.id());
}

TEST_F(StatusPageIntegrationTest, WithTlsAndAuthenticationTheHttpsPortProxiesAsTheAdmin) {
  ASSERT_EQ(makeTestCertificates(dir_), "") << "could not make the test certificates";
  security_.user = "app";
  security_.secret = kMemberSecret;
  security_.tlsCaFile = dir_ + "/ca.pem";
  const std::vector<std::string> secured{"--auth-credentials-file=" + credentialsFile(),
                                         "--tls-certificate-file=" + dir_ + "/server.pem",
                                         "--tls-key-file=" + dir_ + "/server.key",
                                         "--peer-tls-ca-file=" + dir_ + "/ca.pem"};
  startServer(1, secured);
  startServer(2, secured);
  createGroup({"orders"});
  Member& m = addMember("checkout-api");
  waitStable(1, 4);
  const std::string ca = dir_ + "/ca.pem";
  expectProxied(servers_, [&](const Server& s, const std::string& path) {
    return curl(dir_, "https://127.0.0.1:" + std::to_string(s.httpPort) + path, "ops", kAdminSecret, ca);
  }, m.id());
  const std::string https = "https://127.0.0.1:" + std::to_string(servers_[0].httpPort);
  EXPECT_EQ(curl(dir_, https + "/api/groups", "", "", ca).status, 401);
  EXPECT_EQ(curl(dir_, https + "/metrics", "", "", ca).status, 200);
  // Plain HTTP on the HTTPS port gets no answer.
  EXPECT_NE(curl(dir_, "http://127.0.0.1:" + std::to_string(servers_[0].httpPort) + "/metrics").status, 200);
}

}  // namespace
}  // namespace groupcoord::testing
