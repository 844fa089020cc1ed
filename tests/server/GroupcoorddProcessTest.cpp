// The groupcoordd process before it serves: --help, --version, and the
// configuration errors that stop it at start-up (no ZooKeeper needed: it
// exits before it connects). Serving and SIGTERM are in
// GroupcoorddServeTest.cpp. Only processes started here are signalled, by
// their pid.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "server/Config.h"
#include "server/OptionDocs.h"
#include "tests/server/ServerTestUtil.h"

extern char** environ;

namespace groupcoord::servertest {
namespace {

// --help, --version and a bad configuration end the process at once (before
// any ZooKeeper): waited for up to the scheduling allowance
// (tests/README.md, "Time in tests").
std::chrono::milliseconds exitWait() { return groupcoord::testing::schedulingAllowance(); }

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class TempDir {
 public:
  TempDir() {
    char name[] = "/tmp/groupcoordd-test-XXXXXX";
    const char* made = ::mkdtemp(name);
    EXPECT_NE(made, nullptr);
    path_ = made ? made : "/tmp";
  }
  ~TempDir() {
    const std::string cmd = "rm -rf '" + path_ + "'";
    [[maybe_unused]] int rc = std::system(cmd.c_str());
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// groupcoordd run as a child, its stdout and stderr in files.
class Daemon {
 public:
  Daemon(const TempDir& dir, std::vector<std::string> args, std::vector<std::string> extraEnv = {})
      : stdoutPath_(dir.file("stdout")), stderrPath_(dir.file("stderr")) {
    std::vector<std::string> argv = {GROUPCOORDD_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      // Keep the child's configuration to what the test says.
      if (std::string_view(*e).rfind("GROUPCOORDD_", 0) != 0) env.emplace_back(*e);
    }
    env.insert(env.end(), extraEnv.begin(), extraEnv.end());
    std::vector<char*> argp, envp;
    for (auto& a : argv) argp.push_back(a.data());
    argp.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, stdoutPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, stderrPath_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int rc = ::posix_spawn(&pid_, argp[0], &actions, nullptr, argp.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    EXPECT_EQ(rc, 0) << "cannot start " << argp[0];
    if (rc != 0) pid_ = -1;
  }

  ~Daemon() {
    if (pid_ > 0 && !exitStatus_) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }

  pid_t pid() const { return pid_; }
  void signal(int sig) const {
    if (pid_ > 0 && !exitStatus_) ::kill(pid_, sig);
  }

  // The exit code when the process ended normally within `timeout`; -1 when it
  // ended by a signal; nullopt when it is still running (it is then killed).
  std::optional<int> waitExit(std::chrono::milliseconds timeout) {
    if (pid_ <= 0) return std::nullopt;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!exitStatus_) {
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exitStatus_ = status;
        break;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        exitStatus_ = status;
        return std::nullopt;
      }
      std::this_thread::sleep_for(10ms);
    }
    if (WIFEXITED(*exitStatus_)) return WEXITSTATUS(*exitStatus_);
    return -1;
  }

  std::string out() const { return readFile(stdoutPath_); }
  std::string err() const { return readFile(stderrPath_); }

 private:
  std::string stdoutPath_;
  std::string stderrPath_;
  pid_t pid_ = -1;
  std::optional<int> exitStatus_;
};

TEST(GroupcoorddProcessTest, PrintPropertiesPrintsEveryOptionAtItsDefaultAndExits) {
  TempDir dir;
  Daemon d(dir, {"--print-properties"});
  ASSERT_EQ(d.waitExit(exitWait()), 0) << d.err();
  EXPECT_EQ(d.out(), server::propertiesFile());
  EXPECT_NE(d.out().find("\n#listen.port=7400\n"), std::string::npos);
}

TEST(GroupcoorddProcessTest, HelpMentionsEveryOptionWithItsEnvironmentVariableAndKey) {
  TempDir dir;
  Daemon d(dir, {"--help"});
  ASSERT_EQ(d.waitExit(exitWait()), 0) << d.err();
  const std::string help = d.out();
  for (const auto& spec : server::optionSpecs()) {
    EXPECT_NE(help.find("--" + server::cliName(spec.key) + "="), std::string::npos) << spec.key;
    EXPECT_NE(help.find(server::envName(spec.key)), std::string::npos) << spec.key;
    EXPECT_NE(help.find("key: " + spec.key + "\n"), std::string::npos) << spec.key;
    EXPECT_NE(help.find(spec.description), std::string::npos) << spec.key;
  }
  EXPECT_NE(help.find("--config=FILE"), std::string::npos);
  EXPECT_NE(help.find("default: 7400 "), std::string::npos);
  EXPECT_NE(help.find("default: /groupcoord "), std::string::npos);
}

TEST(GroupcoorddProcessTest, VersionPrintsAndExits) {
  TempDir dir;
  Daemon d(dir, {"--version"});
  ASSERT_EQ(d.waitExit(exitWait()), 0) << d.err();
  EXPECT_NE(d.out().find("groupcoordd "), std::string::npos);
}

TEST(GroupcoorddProcessTest, ABadOptionValueExitsNonZeroNamingIt) {
  TempDir dir;
  {
    Daemon d(dir, {"--listen-port=70000"});
    const auto rc = d.waitExit(exitWait());
    ASSERT_TRUE(rc.has_value());
    EXPECT_GT(*rc, 0);
    EXPECT_NE(d.err().find("listen.port"), std::string::npos) << d.err();
    EXPECT_NE(d.err().find("70000"), std::string::npos) << d.err();
  }
  {
    Daemon d(dir, {"--listen-port=0"}, {"GROUPCOORDD_ZK_ROOT=relative/path"});
    const auto rc = d.waitExit(exitWait());
    ASSERT_TRUE(rc.has_value());
    EXPECT_GT(*rc, 0);
    EXPECT_NE(d.err().find("GROUPCOORDD_ZK_ROOT"), std::string::npos) << d.err();
    EXPECT_NE(d.err().find("relative/path"), std::string::npos) << d.err();
  }
  {
    std::ofstream(dir.file("bad.properties")) << "group.min.session.timeout.ms=5000\n"
                                                  "group.max.session.timeout.ms=4000\n";
    Daemon d(dir, {"--config=" + dir.file("bad.properties")});
    const auto rc = d.waitExit(exitWait());
    ASSERT_TRUE(rc.has_value());
    EXPECT_GT(*rc, 0);
    EXPECT_NE(d.err().find("group.max.session.timeout.ms"), std::string::npos) << d.err();
  }
  {
    Daemon d(dir, {"--no-such-option"});
    const auto rc = d.waitExit(exitWait());
    ASSERT_TRUE(rc.has_value());
    EXPECT_GT(*rc, 0);
  }
}

}  // namespace
}  // namespace groupcoord::servertest
