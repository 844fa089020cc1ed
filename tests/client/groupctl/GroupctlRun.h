#pragma once

// Runs the built groupctl binary, as an operator would, for the tests.

#include <string>
#include <vector>

namespace groupcoord::testing {

struct CtlRun {
  int exit = -1;
  std::string out;
  std::string err;
};

// groupctl with the arguments (GROUPCTL_BOOTSTRAP unset); stdout and stderr
// kept apart, because the tool promises data on one and errors on the other.
CtlRun groupctl(const std::vector<std::string>& args);

}  // namespace groupcoord::testing
