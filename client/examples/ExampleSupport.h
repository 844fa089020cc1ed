#pragma once

// What the example programs share: a time-stamped line on standard output
// from any thread, and the --bootstrap list.

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "client/Admin.h"

namespace groupcoord::examples {

// "07:16:46  who  what", one whole line at a time.
inline void say(const std::string& who, const std::string& what) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char ts[16];
  std::strftime(ts, sizeof ts, "%H:%M:%S", std::localtime(&now));
  std::cout << ts << "  " << who << "  " << what << std::endl;
}

// "HOST:PORT[,HOST:PORT]"; false (and a line on standard error) for an entry
// that is not HOST:PORT.
inline bool parseBootstrap(const std::string& text, std::vector<client::Endpoint>* out) {
  std::stringstream list(text);
  for (std::string hp; std::getline(list, hp, ',');) {
    auto colon = hp.rfind(':');
    const long port = colon == std::string::npos ? 0 : std::atol(hp.c_str() + colon + 1);
    if (colon == std::string::npos || port <= 0 || port > 65535) {
      std::cerr << "bootstrap server '" << hp << "' is not HOST:PORT\n";
      return false;
    }
    out->emplace_back(hp.substr(0, colon), static_cast<uint16_t>(port));
  }
  return !out->empty();
}

}  // namespace groupcoord::examples
