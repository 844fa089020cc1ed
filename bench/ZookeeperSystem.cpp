// The peers scenario's ZooKeeper-alone system: every member speaks
// ZooKeeper's client protocol itself, on a byte stream of the generator's
// Loop, so that ten thousand sessions cost one thread and a descriptor
// each (the C client runs two threads per session).
//
// The wire, as ZooKeeper's clients speak it: every message is a frame of a
// 4-byte big-endian length and a body. The first request is a
// ConnectRequest (protocol version, last zxid seen, session timeout,
// session id, password, read-only flag), answered by a ConnectResponse
// (protocol version, negotiated timeout, session id, password, read-only).
// After it, a request is a header (xid, op code) and its record; a reply is
// a header (xid, zxid, error) and its record. Replies come in request order,
// except pings (xid -2) and watch events (xid -1: type, state, path).

#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "bench/Common.h"
#include "bench/Peers.h"
#include "zk/Session.h"

namespace groupcoord::bench {
namespace {

// Op codes and constants of ZooKeeper's protocol used here.
constexpr int32_t kOpCreate = 1;
constexpr int32_t kOpPing = 11;
constexpr int32_t kOpGetChildren2 = 12;
constexpr int32_t kOpCloseSession = -11;
constexpr int32_t kXidWatch = -1;
constexpr int32_t kXidPing = -2;
constexpr int32_t kCreateEphemeral = 1;
constexpr int32_t kPermsAll = 31;
constexpr int32_t kEventChildrenChanged = 4;
constexpr int32_t kErrNodeExists = -110;
constexpr size_t kMaxFrame = 16 << 20;

// A request body being encoded, big-endian as jute writes it.
class Out {
 public:
  Out() { bytes_.resize(4); }  // the frame's length, filled by frame()
  Out& i32(int32_t v) {
    for (int s = 24; s >= 0; s -= 8) bytes_.push_back(static_cast<uint8_t>(static_cast<uint32_t>(v) >> s));
    return *this;
  }
  Out& i64(int64_t v) {
    for (int s = 56; s >= 0; s -= 8) bytes_.push_back(static_cast<uint8_t>(static_cast<uint64_t>(v) >> s));
    return *this;
  }
  Out& boolean(bool v) {
    bytes_.push_back(v ? 1 : 0);
    return *this;
  }
  Out& str(const std::string& s) {
    i32(static_cast<int32_t>(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return *this;
  }
  const std::vector<uint8_t>& frame() {
    const uint32_t n = static_cast<uint32_t>(bytes_.size() - 4);
    for (int k = 0; k < 4; ++k) bytes_[k] = static_cast<uint8_t>(n >> (24 - 8 * k));
    return bytes_;
  }

 private:
  std::vector<uint8_t> bytes_;
};

// A reply body being decoded: every read is bounded by what remains, and a
// short or malformed body leaves ok() false instead of throwing.
class In {
 public:
  explicit In(std::span<const uint8_t> b) : b_(b) {}
  bool ok() const { return ok_; }
  int32_t i32() {
    if (!need(4)) return 0;
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) v = (v << 8) | b_[off_++];
    return static_cast<int32_t>(v);
  }
  int64_t i64() {
    if (!need(8)) return 0;
    uint64_t v = 0;
    for (int k = 0; k < 8; ++k) v = (v << 8) | b_[off_++];
    return static_cast<int64_t>(v);
  }
  std::string_view str() {
    const int32_t n = i32();
    if (n < 0 || !need(static_cast<size_t>(n))) return {};
    std::string_view s(reinterpret_cast<const char*>(b_.data() + off_), static_cast<size_t>(n));
    off_ += static_cast<size_t>(n);
    return s;
  }

 private:
  bool need(size_t n) {
    if (!ok_ || b_.size() - off_ < n) ok_ = false;
    return ok_;
  }
  std::span<const uint8_t> b_;
  size_t off_ = 0;
  bool ok_ = true;
};

class ZookeeperSystem : public PeerSystem {
 public:
  ZookeeperSystem(Loop& loop, std::vector<uint16_t> ports, int64_t sessionMs)
      : loop_(loop), ports_(std::move(ports)), sessionMs_(sessionMs), pingNs_(static_cast<uint64_t>(sessionMs) * kMs / 3) {}

  std::string name() const override { return "zookeeper"; }

  bool prepare(const std::vector<std::string>& groups) override {
    zk::SessionConfig cfg;
    for (uint16_t p : ports_) cfg.connect += (cfg.connect.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(p);
    cfg.sessionTimeout = std::chrono::milliseconds(sessionMs_);
    zk::Session admin(cfg);
    admin.start();
    if (admin.waitConnected(std::chrono::seconds(15)) != zk::Error::Ok) return false;
    for (const auto& g : groups) {
      if (admin.ensurePathSync("/peers/" + g) != zk::Error::Ok) return false;
    }
    admin.close();
    return true;
  }

  void join(size_t id, const std::string& group, std::function<void(bool)> done) override {
    if (members_.size() <= id) members_.resize(id + 1);
    members_[id] = std::make_unique<ZkMember>();
    ZkMember& m = *members_[id];
    m.group = "/peers/" + group;
    m.done = std::move(done);
    m.conn = loop_.connectStream(ports_[id % ports_.size()],
                                 [this, id](bool ok, std::span<const uint8_t> data) { return onData(id, ok, data); });
    if (m.conn < 0) {
      m.state = State::Gone;
      finishJoin(m, false);
      return;
    }
    Out o;
    o.i32(0).i64(0).i32(static_cast<int32_t>(sessionMs_)).i64(0).i32(16);
    for (int k = 0; k < 4; ++k) o.i32(0);  // an empty 16-byte password
    o.boolean(false);
    send(m, o.frame());
  }

  void leave(size_t id) override {
    ZkMember* m = find(id);
    if (m == nullptr || (m->state != State::Live && m->state != State::Joining)) return;
    // closeSession removes the ephemeral znode in the same transaction; the
    // connection closes once it is answered, as the clients do.
    m->state = State::Leaving;
    request(*m, kOpCloseSession, Out());
    loop_.after(5 * kSec, [this, id] {
      ZkMember* mm = find(id);
      if (mm != nullptr && mm->state == State::Leaving) close(*mm);
    });
  }

  void crash(size_t id) override {
    ZkMember* m = find(id);
    if (m == nullptr || m->state == State::Gone) return;
    close(*m);
  }

  uint64_t requestsSent() const override { return requests_; }

 private:
  enum class State { Connecting, Joining, Live, Leaving, Gone };
  struct ZkMember {
    std::string group;  // its znode's parent
    int conn = -1;
    State state = State::Connecting;
    int32_t xid = 0;
    std::deque<int32_t> pending;  // op codes of the requests not answered yet, in order
    uint64_t lastSendNs = 0;
    bool pinging = false;  // its ping timer runs
    std::vector<size_t> children;  // sorted ids, as last read
    std::function<void(bool)> done;
  };

  ZkMember* find(size_t id) { return id < members_.size() ? members_[id].get() : nullptr; }

  void send(ZkMember& m, const std::vector<uint8_t>& frame) {
    loop_.write(m.conn, frame);
    m.lastSendNs = nowNs();
    ++requests_;
  }

  // A request with its header; `body` holds the record after it.
  void request(ZkMember& m, int32_t op, Out body, bool isPing = false) {
    Out o;
    o.i32(isPing ? kXidPing : ++m.xid).i32(op);
    std::vector<uint8_t> frame = body.frame();
    std::vector<uint8_t> head = o.frame();
    head.insert(head.end(), frame.begin() + 4, frame.end());
    const uint32_t n = static_cast<uint32_t>(head.size() - 4);
    for (int k = 0; k < 4; ++k) head[k] = static_cast<uint8_t>(n >> (24 - 8 * k));
    if (!isPing) m.pending.push_back(op);
    send(m, head);
  }

  void getChildren(ZkMember& m) {
    Out b;
    b.str(m.group).boolean(true);
    request(m, kOpGetChildren2, std::move(b));
  }

  void close(ZkMember& m) {
    if (m.conn >= 0) loop_.close(m.conn);
    m.conn = -1;
    const bool joining = m.state == State::Connecting || m.state == State::Joining;
    m.state = State::Gone;
    if (joining) finishJoin(m, false);
  }

  void finishJoin(ZkMember& m, bool ok) {
    if (!m.done) return;
    auto done = std::move(m.done);
    m.done = nullptr;
    loop_.after(0, [done = std::move(done), ok] { done(ok); });
  }

  // Pings when the session has been idle for a third of its timeout.
  void schedulePing(size_t id) {
    ZkMember& m = *members_[id];
    if (m.pinging) return;
    m.pinging = true;
    loop_.after(pingNs_, [this, id] { pingDue(id); });
  }

  void pingDue(size_t id) {
    ZkMember* m = find(id);
    if (m == nullptr || (m->state != State::Live && m->state != State::Joining)) return;
    const uint64_t now = nowNs();
    if (now - m->lastSendNs + kMs >= pingNs_) {
      request(*m, kOpPing, Out(), true);
      loop_.after(pingNs_, [this, id] { pingDue(id); });
    } else {
      loop_.after(m->lastSendNs + pingNs_ - now, [this, id] { pingDue(id); });
    }
  }

  size_t onData(size_t id, bool ok, std::span<const uint8_t> data) {
    ZkMember* m = find(id);
    if (m == nullptr) return data.size();
    if (!ok) {
      // The server closed it: the member is gone, as a crashed client is.
      if (m->state != State::Gone && m->state != State::Leaving) ++lost_;
      m->conn = -1;
      const bool joining = m->state == State::Connecting || m->state == State::Joining;
      m->state = State::Gone;
      if (joining) finishJoin(*m, false);
      return 0;
    }
    size_t off = 0;
    while (data.size() - off >= 4) {
      const uint32_t n = (uint32_t{data[off]} << 24) | (uint32_t{data[off + 1]} << 16) |
                         (uint32_t{data[off + 2]} << 8) | data[off + 3];
      if (n > kMaxFrame) {
        close(*m);
        return data.size();
      }
      if (data.size() - off - 4 < n) break;
      onFrame(id, *m, data.subspan(off + 4, n));
      off += 4 + n;
      if (m->state == State::Gone) return data.size();
    }
    return off;
  }

  void onFrame(size_t id, ZkMember& m, std::span<const uint8_t> body) {
    In in(body);
    if (m.state == State::Connecting) {
      in.i32();  // protocol version
      const int32_t timeout = in.i32();
      if (!in.ok() || timeout <= 0) return close(m);
      m.state = State::Joining;
      Out create;
      create.str(m.group + "/m" + std::to_string(id)).i32(0);  // no data
      create.i32(1).i32(kPermsAll).str("world").str("anyone");   // the open ACL
      create.i32(kCreateEphemeral);
      request(m, kOpCreate, std::move(create));
      getChildren(m);
      schedulePing(id);
      return;
    }
    const int32_t xid = in.i32();
    in.i64();  // zxid
    const int32_t err = in.i32();
    if (!in.ok()) return close(m);
    if (xid == kXidPing) return;
    if (xid == kXidWatch) {
      const int32_t type = in.i32();
      if (type == kEventChildrenChanged && (m.state == State::Live || m.state == State::Joining)) getChildren(m);
      return;
    }
    if (m.pending.empty()) return close(m);
    const int32_t op = m.pending.front();
    m.pending.pop_front();
    switch (op) {
      case kOpCreate:
        if (err != 0 && err != kErrNodeExists) close(m);
        return;
      case kOpGetChildren2:
        if (err != 0) return close(m);
        onChildren(id, m, in);
        return;
      case kOpCloseSession:
        if (m.conn >= 0) loop_.close(m.conn);
        m.conn = -1;
        m.state = State::Gone;
        return;
      default:
        return;
    }
  }

  void onChildren(size_t id, ZkMember& m, In& in) {
    const int32_t count = in.i32();
    std::vector<size_t> now;
    for (int32_t k = 0; k < count && in.ok(); ++k) {
      std::string_view c = in.str();
      if (c.size() > 1 && c[0] == 'm') now.push_back(std::strtoull(std::string(c.substr(1)).c_str(), nullptr, 10));
    }
    if (!in.ok()) return close(m);
    if (m.state == State::Leaving || m.state == State::Gone) return;
    std::sort(now.begin(), now.end());
    if (seen) {
      std::vector<size_t> diff;
      std::set_difference(now.begin(), now.end(), m.children.begin(), m.children.end(), std::back_inserter(diff));
      for (size_t s : diff) seen(id, s, true);
      diff.clear();
      std::set_difference(m.children.begin(), m.children.end(), now.begin(), now.end(), std::back_inserter(diff));
      for (size_t s : diff) seen(id, s, false);
    }
    m.children = std::move(now);
    if (m.state == State::Joining) {
      m.state = State::Live;
      finishJoin(m, true);
    }
  }

  Loop& loop_;
  std::vector<uint16_t> ports_;
  int64_t sessionMs_;
  uint64_t pingNs_;
  std::vector<std::unique_ptr<ZkMember>> members_;
  uint64_t requests_ = 0;
  uint64_t lost_ = 0;
};

}  // namespace

std::unique_ptr<PeerSystem> makeZookeeperSystem(Loop& loop, std::vector<uint16_t> ports, int64_t sessionMs) {
  return std::make_unique<ZookeeperSystem>(loop, std::move(ports), sessionMs);
}

}  // namespace groupcoord::bench
