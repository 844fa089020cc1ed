#include "common/TopicWriter.h"

#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <condition_variable>
#include <mutex>

#include "common/Layout.h"
#include "common/LogRateLimiter.h"
#include "common/Sync.h"

namespace groupcoord::topics {

namespace {

using Clock = std::chrono::steady_clock;

// The C client's names of its return codes (the enum ZOO_ERRORS).
const char* codeName(int rc) {
  switch (rc) {
    case ZOK: return "ZOK";
    case ZSYSTEMERROR: return "ZSYSTEMERROR";
    case ZRUNTIMEINCONSISTENCY: return "ZRUNTIMEINCONSISTENCY";
    case ZDATAINCONSISTENCY: return "ZDATAINCONSISTENCY";
    case ZCONNECTIONLOSS: return "ZCONNECTIONLOSS";
    case ZMARSHALLINGERROR: return "ZMARSHALLINGERROR";
    case ZUNIMPLEMENTED: return "ZUNIMPLEMENTED";
    case ZOPERATIONTIMEOUT: return "ZOPERATIONTIMEOUT";
    case ZBADARGUMENTS: return "ZBADARGUMENTS";
    case ZINVALIDSTATE: return "ZINVALIDSTATE";
    case ZNEWCONFIGNOQUORUM: return "ZNEWCONFIGNOQUORUM";
    case ZRECONFIGINPROGRESS: return "ZRECONFIGINPROGRESS";
    case ZSSLCONNECTIONERROR: return "ZSSLCONNECTIONERROR";
    case ZAPIERROR: return "ZAPIERROR";
    case ZNONODE: return "ZNONODE";
    case ZNOAUTH: return "ZNOAUTH";
    case ZBADVERSION: return "ZBADVERSION";
    case ZNOCHILDRENFOREPHEMERALS: return "ZNOCHILDRENFOREPHEMERALS";
    case ZNODEEXISTS: return "ZNODEEXISTS";
    case ZNOTEMPTY: return "ZNOTEMPTY";
    case ZSESSIONEXPIRED: return "ZSESSIONEXPIRED";
    case ZINVALIDCALLBACK: return "ZINVALIDCALLBACK";
    case ZINVALIDACL: return "ZINVALIDACL";
    case ZAUTHFAILED: return "ZAUTHFAILED";
    case ZCLOSING: return "ZCLOSING";
    case ZNOTHING: return "ZNOTHING";
    case ZSESSIONMOVED: return "ZSESSIONMOVED";
    case ZNOTREADONLY: return "ZNOTREADONLY";
    case ZEPHEMERALONLOCALSESSION: return "ZEPHEMERALONLOCALSESSION";
    case ZNOWATCHER: return "ZNOWATCHER";
    case ZRECONFIGDISABLED: return "ZRECONFIGDISABLED";
    case ZSESSIONCLOSEDREQUIRESASLAUTH: return "ZSESSIONCLOSEDREQUIRESASLAUTH";
    case ZTHROTTLEDOP: return "ZTHROTTLEDOP";
    default: return nullptr;
  }
}

// The C client's log lines of this handle: its errors go to stderr, the rest
// (connection progress, warnings on every retry) nowhere. Per handle, so
// that the process's global log level stays what it was. An unreachable
// node makes an error line every few hundred milliseconds: one per 5 s is
// shown, and the caller says in its own words what failed.
void logErrorsOnly(const char* message) {
  std::string_view text(message != nullptr ? message : "");
  if (text.find("ZOO_ERROR@") == std::string_view::npos) return;
  static LogRateLimiter limit{std::chrono::seconds(5)};
  uint64_t held = 0;
  if (!limit.allow(&held)) return;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  std::fprintf(stderr, "%.*s\n", static_cast<int>(text.size()), text.data());
}

}  // namespace

bool ZkCode::nodeExists() const { return value == ZNODEEXISTS; }
bool ZkCode::noNode() const { return value == ZNONODE; }
bool ZkCode::badVersion() const { return value == ZBADVERSION; }

std::string ZkCode::name() const {
  if (const char* known = codeName(value)) return known;
  return "ZERROR(" + std::to_string(value) + ")";
}

// The handle and the session state its watcher reports, from the C
// client's completion thread.
struct TopicWriter::Session {
  zhandle_t* zh = nullptr;
  Mutex mutex;
  std::condition_variable changed;
  int state GUARDED_BY(mutex) = 0;  // the last ZOO_*_STATE seen; 0: none yet

  static void watcher(zhandle_t* /*zh*/, int type, int state, const char* /*path*/, void* context) {
    if (type != ZOO_SESSION_EVENT || context == nullptr) return;
    auto* self = static_cast<Session*>(context);
    {
      MutexLock lock(self->mutex);
      self->state = state;
    }
    self->changed.notify_all();
  }
};

TopicWriter::TopicWriter(std::string connect, std::chrono::milliseconds sessionTimeout)
    : connect_(std::move(connect)), sessionTimeout_(sessionTimeout) {}

TopicWriter::~TopicWriter() {
  // Waits for the C client's threads: no watcher runs after it returns.
  if (session_ && session_->zh != nullptr) zookeeper_close(session_->zh);
}

ZkCode TopicWriter::start() {
  if (session_) return {ZOK};
  auto session = std::make_unique<Session>();
  const int timeoutMs = static_cast<int>(std::min<int64_t>(sessionTimeout_.count(), INT_MAX));
  errno = 0;
  session->zh = zookeeper_init2(connect_.c_str(), &Session::watcher, timeoutMs, nullptr, session.get(),
                                ZOO_NO_LOG_CLIENTENV, &logErrorsOnly);
  if (session->zh == nullptr) return {errno == EINVAL ? ZBADARGUMENTS : ZSYSTEMERROR};
  session_ = std::move(session);
  return {ZOK};
}

ZkCode TopicWriter::waitConnected(std::chrono::milliseconds wait) {
  if (!session_) return {ZINVALIDSTATE};
  Session& s = *session_;
  const auto deadline = Clock::now() + wait;
  MutexLock lock(s.mutex);
  for (;;) {
    if (s.state == ZOO_CONNECTED_STATE) return {ZOK};
    if (s.state == ZOO_EXPIRED_SESSION_STATE) return {ZSESSIONEXPIRED};
    if (s.state == ZOO_AUTH_FAILED_STATE) return {ZAUTHFAILED};
    if (Clock::now() >= deadline) return {ZOPERATIONTIMEOUT};
    waitLockedUntil(s.changed, s.mutex, deadline);
  }
}

ZkCode TopicWriter::ensurePath(const std::string& path) {
  if (!session_) return {ZINVALIDSTATE};
  zhandle_t* zh = session_->zh;
  if (path == "/") return {ZOK};
  // The common case is a path that is already there: one read.
  Stat stat{};
  const int present = zoo_exists(zh, path.c_str(), 0, &stat);
  if (present == ZOK) return {ZOK};
  if (present != ZNONODE) return {present};
  // Every level from the top; ZNODEEXISTS means someone else (or an earlier
  // run) made it, which is just as good.
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    const std::string prefix = path.substr(0, pos);
    const int rc = zoo_create(zh, prefix.c_str(), "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, nullptr, 0);
    if (rc != ZOK && rc != ZNODEEXISTS) return {rc};
  }
  return {ZOK};
}

ZkCode TopicWriter::createTopic(const std::string& path, int32_t partitions, const layout::TopicId& id) {
  return create(path, layout::encodeTopic(partitions, id));
}

ZkCode TopicWriter::create(const std::string& path, const std::string& data) {
  if (!session_) return {ZINVALIDSTATE};
  if (data.size() > static_cast<size_t>(INT_MAX)) return {ZBADARGUMENTS};
  return {zoo_create(session_->zh, path.c_str(), data.data(), static_cast<int>(data.size()), &ZOO_OPEN_ACL_UNSAFE,
                     ZOO_PERSISTENT, nullptr, 0)};
}

ZkCode TopicWriter::removeIfVersion(const std::string& path, int32_t version) {
  if (!session_) return {ZINVALIDSTATE};
  return {zoo_delete(session_->zh, path.c_str(), version)};
}

ZkCode TopicWriter::read(const std::string& path, std::string* data, int32_t* version) {
  if (!session_) return {ZINVALIDSTATE};
  zhandle_t* zh = session_->zh;
  // The size first, then the data into a buffer a little larger: if the
  // znode grew in between (the buffer came back full), again.
  for (int attempt = 0; attempt < 5; ++attempt) {
    Stat stat{};
    const int present = zoo_exists(zh, path.c_str(), 0, &stat);
    if (present != ZOK) return {present};
    std::string buffer(static_cast<size_t>(stat.dataLength) + 4096, '\0');
    int length = static_cast<int>(std::min<size_t>(buffer.size(), INT_MAX));
    const int rc = zoo_get(zh, path.c_str(), 0, buffer.data(), &length, &stat);
    if (rc != ZOK) return {rc};
    if (length >= 0 && static_cast<size_t>(length) < buffer.size()) {
      buffer.resize(static_cast<size_t>(length));
      *data = std::move(buffer);
      *version = stat.version;
      return {ZOK};
    }
    if (length < 0) {  // a znode without data
      data->clear();
      *version = stat.version;
      return {ZOK};
    }
  }
  return {ZDATAINCONSISTENCY};
}

ZkCode TopicWriter::setIfVersion(const std::string& path, const std::string& data, int32_t version) {
  if (!session_) return {ZINVALIDSTATE};
  if (data.size() > static_cast<size_t>(INT_MAX)) return {ZBADARGUMENTS};
  return {zoo_set(session_->zh, path.c_str(), data.data(), static_cast<int>(data.size()), version)};
}

}  // namespace groupcoord::topics
