#pragma once

// Plain request and result structs for zk/ operations.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "zk/Error.h"

namespace groupcoord::zk {

// Matches ZooKeeper's Stat; version is a znode's data version.
struct Stat {
  int64_t czxid = 0;
  int64_t mzxid = 0;
  int64_t ctime = 0;
  int64_t mtime = 0;
  int32_t version = -1;
  int32_t cversion = -1;
  int32_t aversion = -1;
  int64_t ephemeralOwner = 0;  // session id of the owner, 0 for persistent znodes
  int32_t dataLength = 0;
  int32_t numChildren = 0;
  int64_t pzxid = 0;
};

enum class CreateMode { Persistent, Ephemeral, PersistentSequential, EphemeralSequential, Container };

// Any version: delete / setData / check without a version condition.
inline constexpr int32_t kAnyVersion = -1;

// Largest data a create or setData (or all of a multi's together) may carry.
// ZooKeeper drops the connection of a request above its jute.maxbuffer
// (1 MiB by default), failing every other pending call of the session, so
// both implementations refuse bigger data up front with BadArguments.
inline constexpr size_t kMaxDataSize = 1024 * 1024 - 4096;

enum class SessionState {
  Connecting,    // first connection of this session not yet made
  Connected,
  Reconnecting,  // connection lost; the same session may still come back
  Expired,       // the session is gone with its ephemerals; renew() to start over
  AuthFailed,
  Closed,        // closed by its owner
};
std::string_view toString(SessionState s);

struct WatchEvent {
  enum class Type { Created, Deleted, Changed, Child, Session, NotWatching };
  Type type = Type::Session;
  SessionState state = SessionState::Connected;
  std::string path;  // relative to the chroot, if any
};
std::string_view toString(WatchEvent::Type t);

// A one-shot watch. Runs on the client's completion thread: it must be cheap
// and must not block (hand the event to a queue or an executor).
using WatchCallback = std::function<void(const WatchEvent&)>;

struct CreateResult {
  Error error = Error::Ok;
  std::string path;  // the created path (with the sequence suffix, if any)
};

struct GetResult {
  Error error = Error::Ok;
  std::string data;
  Stat stat;
};

struct ExistsResult {
  Error error = Error::Ok;  // Ok when it exists, NoNode when it does not
  Stat stat;
};

struct ChildrenResult {
  Error error = Error::Ok;
  std::vector<std::string> children;  // names, not paths; unsorted
  Stat stat;                          // of the parent
};

struct SetResult {
  Error error = Error::Ok;
  Stat stat;
};

// Operations of a multi-op transaction.
struct CreateOp {
  std::string path;
  std::string data;
  CreateMode mode = CreateMode::Persistent;
};
struct RemoveOp {
  std::string path;
  int32_t version = kAnyVersion;
};
struct SetDataOp {
  std::string path;
  std::string data;
  int32_t version = kAnyVersion;
};
struct CheckOp {
  std::string path;
  int32_t version = kAnyVersion;
};
using Op = std::variant<CreateOp, RemoveOp, SetDataOp, CheckOp>;

inline Op makeCreate(std::string path, std::string data, CreateMode mode = CreateMode::Persistent) {
  return CreateOp{std::move(path), std::move(data), mode};
}
inline Op makeRemove(std::string path, int32_t version = kAnyVersion) {
  return RemoveOp{std::move(path), version};
}
inline Op makeSetData(std::string path, std::string data, int32_t version = kAnyVersion) {
  return SetDataOp{std::move(path), std::move(data), version};
}
inline Op makeCheck(std::string path, int32_t version) { return CheckOp{std::move(path), version}; }

struct OpResult {
  Error error = Error::Ok;
  std::string path;  // CreateOp: the created path
  Stat stat;         // SetDataOp: the new stat
};

struct MultiResult {
  Error error = Error::Ok;  // the overall result: trust this, not the per-op codes
  int failedOp = -1;        // index of the op that failed when error is a data error, else -1
  std::vector<OpResult> results;
};

template <typename R>
using Callback = std::function<void(R)>;

}  // namespace groupcoord::zk
