#pragma once

// groupcoordd's logging: spdlog's default logger, to standard error or a
// file, with time, level and thread on every line. Start-up code.

#include <string>

#include "server/Config.h"

namespace groupcoord::server {

// Replaces spdlog's default logger as the configuration says. Returns "" or
// why it could not (a log file that cannot be opened).
std::string setupLogging(const ServerConfig& config);

}  // namespace groupcoord::server
