#include "server/Logging.h"

#include <chrono>
#include <memory>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace groupcoord::server {

std::string setupLogging(const ServerConfig& config) {
  std::shared_ptr<spdlog::logger> logger;
  try {
    if (config.logFile.empty()) {
      logger = std::make_shared<spdlog::logger>("groupcoordd", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    } else {
      logger = std::make_shared<spdlog::logger>(
          "groupcoordd", std::make_shared<spdlog::sinks::basic_file_sink_mt>(config.logFile, /*truncate=*/false));
    }
  } catch (const spdlog::spdlog_ex& e) {
    return "cannot log to '" + config.logFile + "': " + e.what();
  }
  logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%-5l%$ [%t] %v");
  logger->set_level(spdlog::level::from_str(config.logLevel));
  // Warnings and errors reach the file at once; the rest within a second.
  logger->flush_on(spdlog::level::warn);
  spdlog::set_default_logger(logger);
  spdlog::flush_every(std::chrono::seconds(1));
  return "";
}

}  // namespace groupcoord::server
