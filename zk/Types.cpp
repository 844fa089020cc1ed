#include "zk/Types.h"

namespace groupcoord::zk {

std::string_view toString(SessionState s) {
  switch (s) {
    case SessionState::Connecting: return "Connecting";
    case SessionState::Connected: return "Connected";
    case SessionState::Reconnecting: return "Reconnecting";
    case SessionState::Expired: return "Expired";
    case SessionState::AuthFailed: return "AuthFailed";
    case SessionState::Closed: return "Closed";
  }
  return "Unknown";
}

std::string_view toString(WatchEvent::Type t) {
  switch (t) {
    case WatchEvent::Type::Created: return "Created";
    case WatchEvent::Type::Deleted: return "Deleted";
    case WatchEvent::Type::Changed: return "Changed";
    case WatchEvent::Type::Child: return "Child";
    case WatchEvent::Type::Session: return "Session";
    case WatchEvent::Type::NotWatching: return "NotWatching";
  }
  return "Unknown";
}

}  // namespace groupcoord::zk
