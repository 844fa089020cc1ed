#include "server/TcpOptions.h"

namespace groupcoord::server {

std::string_view closeReasonName(CloseReason reason) {
  switch (reason) {
    case CloseReason::PeerClosed: return "peer closed";
    case CloseReason::FrameTooSmall: return "frame too small";
    case CloseReason::FrameTooLarge: return "frame too large";
    case CloseReason::IdleTimeout: return "idle timeout";
    case CloseReason::OutputOverflow: return "output overflow";
    case CloseReason::IoError: return "I/O error";
    case CloseReason::Shutdown: return "shutdown";
    case CloseReason::Refused: return "request refused";
  }
  return "unknown";
}

}  // namespace groupcoord::server
