#pragma once

// groupctl's --help texts: the overall one and one per command.

#include <map>
#include <string>

namespace groupcoord::groupctl {

extern const char* const kOverallHelp;
// By command name ("topic" for `topic create`, "auth" for `auth hash`).
extern const std::map<std::string, std::string> kCommandHelp;

}  // namespace groupcoord::groupctl
