#include "tests/client/groupctl/GroupctlRun.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "support/TestEnv.h"

namespace groupcoord::testing {

namespace {

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

CtlRun groupctl(const std::vector<std::string>& args) {
  std::string errFile = "/tmp/" + uniqueName("groupctl-err");
  std::string cmd = "env -u GROUPCTL_BOOTSTRAP " + quote(binaryPath("client/groupctl"));
  for (auto& a : args) cmd += " " + quote(a);
  cmd += " 2>" + quote(errFile);
  CtlRun r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = ::pclose(p);
  r.exit = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(errFile);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  ::unlink(errFile.c_str());
  return r;
}

}  // namespace groupcoord::testing
