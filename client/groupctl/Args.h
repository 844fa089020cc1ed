#pragma once

// groupctl's command line split into positionals and --options, and the
// parsing of option values. Every mistake is a UsageError: groupctl prints
// it with the command's help and exits with 2.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "client/Admin.h"

namespace groupcoord::groupctl {

struct UsageError {
  std::string message;
};

// Arguments split into positionals and --options. Options take their value
// from "--name=value" or from the next argument, which may itself begin
// with '-' (so "--shift-by -3" works).
struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;
  std::set<std::string> flags;
};

Args parseArgs(int argc, char** argv);

// Refuses options the command does not know, so that a typo is not ignored.
// The global options are always allowed.
void allowOnly(const Args& args, const std::string& command, std::set<std::string> allowed);
// Exactly n positionals (the command's name included); `what` names the missing one.
void expectPositionals(const Args& args, size_t n, const std::string& what);

int64_t parseInt(const std::string& text, const std::string& what);
// 500ms, 10s, 2m, or plain milliseconds.
std::chrono::milliseconds parseDuration(const std::string& text);
// "a,b,,c" -> {a, b, c}
std::vector<std::string> splitList(const std::string& text);
// HOST:PORT[,HOST:PORT...]
std::vector<client::Endpoint> parseBootstrap(const std::string& text);
// {a, b} -> "a,b"
std::string joinList(const std::vector<std::string>& items);

}  // namespace groupcoord::groupctl
