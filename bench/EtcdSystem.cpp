// The `peers` scenario on etcd (docs/benchmarks.md): each member is one etcd
// client, as clientv3 makes one: an HTTP/2 connection without TLS (prior
// knowledge) to one of the cluster's client ports, carrying gRPC calls.
// A member grants itself a lease, keeps it alive on a LeaseKeepAlive stream
// every ttl/3, puts /peers/<group>/m<id> with that lease, reads the group's
// prefix at the Put's revision and watches it from the next revision. It
// leaves by revoking its lease (which deletes its key); a crash just closes
// the connection and the lease expires after its TTL.
//
// HTTP/2 and protobuf are written here by hand, only as far as these calls
// need: requests' headers are HPACK literals without indexing or Huffman
// coding; answers' header blocks are skipped (a call that ends without a
// message failed), their messages decoded field by field.

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string_view>

#include "bench/Peers.h"

namespace groupcoord::bench {

namespace {

// --- protobuf ---------------------------------------------------------------

enum Wire : uint8_t { kVarint = 0, kFixed64 = 1, kLength = 2, kFixed32 = 5 };

void putVarint(std::vector<uint8_t>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v) | 0x80);
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

void putTag(std::vector<uint8_t>& out, uint32_t field, Wire wire) { putVarint(out, (uint64_t{field} << 3) | wire); }

// An integer field; proto3 leaves zero out.
void putInt(std::vector<uint8_t>& out, uint32_t field, int64_t v) {
  if (v == 0) return;
  putTag(out, field, kVarint);
  putVarint(out, static_cast<uint64_t>(v));
}

// A bytes, string or message field (written even when empty: a message in a
// oneof is there by being there).
void putBytes(std::vector<uint8_t>& out, uint32_t field, std::span<const uint8_t> bytes) {
  putTag(out, field, kLength);
  putVarint(out, bytes.size());
  out.insert(out.end(), bytes.begin(), bytes.end());
}

void putString(std::vector<uint8_t>& out, uint32_t field, std::string_view s) {
  putBytes(out, field, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

// One field of a message being read: its number, and its value as an integer
// (varint and fixed) or as bytes (length-delimited).
struct Field {
  uint32_t number = 0;
  Wire wire = kVarint;
  uint64_t value = 0;
  std::span<const uint8_t> bytes;
};

class ProtoReader {
 public:
  explicit ProtoReader(std::span<const uint8_t> data) : data_(data) {}

  // The next field; false at the end or when the message is malformed (see ok()).
  bool next(Field& f) {
    if (pos_ >= data_.size() || !ok_) return false;
    uint64_t tag = 0;
    if (!varint(tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) return bad();
    f.number = static_cast<uint32_t>(tag >> 3);
    f.wire = static_cast<Wire>(tag & 7);
    f.value = 0;
    f.bytes = {};
    switch (tag & 7) {
      case kVarint:
        return varint(f.value) || bad();
      case kFixed64:
      case kFixed32: {
        const size_t n = (tag & 7) == kFixed64 ? 8 : 4;
        if (data_.size() - pos_ < n) return bad();
        for (size_t i = 0; i < n; ++i) f.value |= uint64_t{data_[pos_ + i]} << (8 * i);
        pos_ += n;
        return true;
      }
      case kLength: {
        uint64_t n = 0;
        if (!varint(n) || n > data_.size() - pos_) return bad();
        f.bytes = data_.subspan(pos_, static_cast<size_t>(n));
        pos_ += static_cast<size_t>(n);
        return true;
      }
      default:  // groups, long gone from protobuf
        return bad();
    }
  }
  bool ok() const { return ok_; }

 private:
  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64 && pos_ < data_.size(); shift += 7) {
      const uint8_t b = data_[pos_++];
      v |= uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }
  bool bad() {
    ok_ = false;
    return false;
  }

  std::span<const uint8_t> data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

std::string_view asText(std::span<const uint8_t> b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

// etcdserverpb.ResponseHeader.revision (field 3), in a response whose header is field 1.
int64_t headerRevision(std::span<const uint8_t> response) {
  ProtoReader r(response);
  Field f;
  while (r.next(f)) {
    if (f.number != 1 || f.wire != kLength) continue;
    ProtoReader h(f.bytes);
    Field g;
    while (h.next(g)) {
      if (g.number == 3 && g.wire == kVarint) return static_cast<int64_t>(g.value);
    }
  }
  return 0;
}

// mvccpb.KeyValue.key (field 1).
std::string_view keyOf(std::span<const uint8_t> keyValue, int64_t* modRevision = nullptr) {
  ProtoReader r(keyValue);
  Field f;
  std::string_view key;
  while (r.next(f)) {
    if (f.number == 1 && f.wire == kLength) key = asText(f.bytes);
    if (f.number == 3 && f.wire == kVarint && modRevision != nullptr) *modRevision = static_cast<int64_t>(f.value);
  }
  return key;
}

// --- HTTP/2 -----------------------------------------------------------------

enum FrameType : uint8_t {
  kData = 0,
  kHeaders = 1,
  kRstStream = 3,
  kSettings = 4,
  kPing = 6,
  kGoAway = 7,
  kWindowUpdate = 8,
};
constexpr uint8_t kEndStream = 0x1;
constexpr uint8_t kAck = 0x1;
constexpr uint8_t kEndHeaders = 0x4;
constexpr uint8_t kPadded = 0x8;
constexpr size_t kFrameHeader = 9;
// The receive window this client grants per stream and per connection; the
// part of it consumed is given back once it reaches a quarter.
constexpr uint32_t kWindow = 1u << 24;
constexpr uint32_t kWindowRefill = kWindow / 4;
// Larger frames than this client's SETTINGS_MAX_FRAME_SIZE (the default,
// 16 KiB) are a protocol error; anything past 16 MiB is garbage.
constexpr uint32_t kMaxFrame = 1u << 24;
constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

void putBe32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}

uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

void putFrameHeader(std::vector<uint8_t>& out, size_t length, FrameType type, uint8_t flags, uint32_t stream) {
  out.push_back(static_cast<uint8_t>(length >> 16));
  out.push_back(static_cast<uint8_t>(length >> 8));
  out.push_back(static_cast<uint8_t>(length));
  out.push_back(type);
  out.push_back(flags);
  putBe32(out, stream & 0x7fffffffu);
}

void putWindowUpdate(std::vector<uint8_t>& out, uint32_t stream, uint32_t increment) {
  putFrameHeader(out, 4, kWindowUpdate, 0, stream);
  putBe32(out, increment & 0x7fffffffu);
}

// An HPACK integer with an N-bit prefix, the prefix's other bits in `first`.
void putHpackInt(std::vector<uint8_t>& out, uint8_t first, int prefixBits, size_t v) {
  const size_t max = (size_t{1} << prefixBits) - 1;
  if (v < max) {
    out.push_back(static_cast<uint8_t>(first | v));
    return;
  }
  out.push_back(static_cast<uint8_t>(first | max));
  v -= max;
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

// A header field as a literal without indexing, with a literal name, neither
// string Huffman-coded.
void putHeader(std::vector<uint8_t>& out, std::string_view name, std::string_view value) {
  out.push_back(0x00);
  putHpackInt(out, 0x00, 7, name.size());
  out.insert(out.end(), name.begin(), name.end());
  putHpackInt(out, 0x00, 7, value.size());
  out.insert(out.end(), value.begin(), value.end());
}

// The connection's opening: the preface, SETTINGS (no server push, a large
// window per stream) and a WINDOW_UPDATE raising the connection's window.
std::vector<uint8_t> connectionPreface() {
  std::vector<uint8_t> out(kPreface.begin(), kPreface.end());
  putFrameHeader(out, 12, kSettings, 0, 0);
  out.insert(out.end(), {0x00, 0x02});  // SETTINGS_ENABLE_PUSH
  putBe32(out, 0);
  out.insert(out.end(), {0x00, 0x04});  // SETTINGS_INITIAL_WINDOW_SIZE
  putBe32(out, kWindow);
  putWindowUpdate(out, 0, kWindow - 65535);
  return out;
}

// The calls a member makes, with their paths.
enum class Kind : uint8_t { Grant, Put, Range, Watch, KeepAlive, Revoke };

const char* pathOf(Kind k) {
  switch (k) {
    case Kind::Grant: return "/etcdserverpb.Lease/LeaseGrant";
    case Kind::Put: return "/etcdserverpb.KV/Put";
    case Kind::Range: return "/etcdserverpb.KV/Range";
    case Kind::Watch: return "/etcdserverpb.Watch/Watch";
    case Kind::KeepAlive: return "/etcdserverpb.Lease/LeaseKeepAlive";
    case Kind::Revoke: return "/etcdserverpb.Lease/LeaseRevoke";
  }
  return "";
}

const char* nameOf(Kind k) {
  switch (k) {
    case Kind::Grant: return "LeaseGrant";
    case Kind::Put: return "Put";
    case Kind::Range: return "Range";
    case Kind::Watch: return "Watch";
    case Kind::KeepAlive: return "LeaseKeepAlive";
    case Kind::Revoke: return "LeaseRevoke";
  }
  return "";
}

// How long a leaving member waits for its LeaseRevoke's answer before it
// closes anyway.
constexpr uint64_t kRevokeTimeoutNs = 5'000'000'000;
// As clientv3 does, a watch or keep-alive stream the server ends (a leader
// change, an overloaded member) is opened again after half a second, and a
// Range that fails is asked again (it changes nothing), up to kRangeTries.
constexpr uint64_t kRetryNs = 500'000'000;
constexpr int kRangeTries = 5;

class EtcdSystem final : public PeerSystem {
 public:
  EtcdSystem(Loop& loop, std::vector<uint16_t> ports, int ttlSeconds)
      : loop_(loop), ports_(std::move(ports)), ttlSeconds_(std::max(1, ttlSeconds)) {
    for (uint16_t port : ports_) {
      const std::string authority = "127.0.0.1:" + std::to_string(port);
      for (Kind k : {Kind::Grant, Kind::Put, Kind::Range, Kind::Watch, Kind::KeepAlive, Kind::Revoke}) {
        std::vector<uint8_t>& block = headerBlocks_[{port, k}];
        putHeader(block, ":method", "POST");
        putHeader(block, ":scheme", "http");
        putHeader(block, ":path", pathOf(k));
        putHeader(block, ":authority", authority);
        putHeader(block, "content-type", "application/grpc");
        putHeader(block, "te", "trailers");
      }
    }
  }

  ~EtcdSystem() override {
    for (auto& m : members_) {
      if (m && loop_.isOpen(m->conn)) loop_.close(m->conn);
    }
    // What went wrong over the run, by kind (the lines above stop after 20).
    if (!failures_.empty() || reopened_ != 0 || retried_ != 0) {
      std::string summary;
      for (const auto& [what, n] : failures_) summary += ", " + std::to_string(n) + " " + what;
      std::fprintf(stderr, "[bench] etcd: %llu members lost once in, %llu streams opened again, %llu Ranges asked again%s\n",
                   static_cast<unsigned long long>(lost_), static_cast<unsigned long long>(reopened_),
                   static_cast<unsigned long long>(retried_), summary.c_str());
    }
  }

  std::string name() const override { return "etcd"; }

  void join(size_t id, const std::string& group, std::function<void(bool ok)> done) override {
    if (id >= members_.size()) members_.resize(id + 1);
    if (members_[id] && members_[id]->state != State::Gone) {
      note("member m%zu joins while it is still in; refused", id);
      loop_.after(0, [done = std::move(done)] { done(false); });
      return;
    }
    // A member that was here before may still be on the stack (a callback
    // can rejoin it): it is released later, not now.
    if (members_[id]) retire(std::move(members_[id]));
    auto m = std::make_unique<Member>();
    m->id = id;
    m->serial = ++serials_;
    m->prefix = "/peers/" + group + "/";
    m->rangeEnd = m->prefix;
    m->rangeEnd.back() = static_cast<char>(m->rangeEnd.back() + 1);
    m->done = std::move(done);
    m->port = ports_.empty() ? 0 : ports_[nextPort_++ % ports_.size()];
    Member& mm = *m;
    members_[id] = std::move(m);
    const uint64_t serial = mm.serial;
    mm.conn = loop_.connectStream(mm.port, [this, life = std::weak_ptr<int>(life_), id, serial](
                                               bool ok, std::span<const uint8_t> data) -> size_t {
      if (life.expired()) return data.size();
      return onData(id, serial, ok, data);
    });
    if (mm.conn < 0) {
      note("member m%zu could not connect to 127.0.0.1:%u", id, mm.port);
      gone(mm);
      return;
    }
    loop_.write(mm.conn, preface_);
    std::vector<uint8_t> grant;
    putInt(grant, 1, ttlSeconds_);  // LeaseGrantRequest.TTL
    startCall(mm, Kind::Grant, grant, true);
  }

  void leave(size_t id) override {
    Member* m = find(id);
    if (m == nullptr || m->state == State::Gone || m->state == State::Leaving) return;
    if (m->lease == 0) {  // nothing granted yet: nothing to revoke
      gone(*m);
      return;
    }
    m->state = State::Leaving;
    std::vector<uint8_t> revoke;
    putInt(revoke, 1, m->lease);  // LeaseRevokeRequest.ID
    startCall(*m, Kind::Revoke, revoke, true);
    const uint64_t serial = m->serial;
    loop_.after(kRevokeTimeoutNs, [this, life = std::weak_ptr<int>(life_), id, serial] {
      if (life.expired()) return;
      Member* mm = find(id, serial);
      if (mm == nullptr || mm->state != State::Leaving) return;
      note("member m%zu: no answer to its LeaseRevoke within %llu s; closing", id,
           static_cast<unsigned long long>(kRevokeTimeoutNs / 1'000'000'000));
      gone(*mm);
    });
  }

  void crash(size_t id) override {
    Member* m = find(id);
    if (m == nullptr || m->state == State::Gone) return;
    gone(*m);
  }

  uint64_t requestsSent() const override { return requestsSent_; }

 private:
  enum class State : uint8_t { Joining, In, Leaving, Gone };

  struct Call {
    Kind kind = Kind::Grant;
    bool answered = false;
    std::vector<uint8_t> partial;  // a gRPC message not yet whole
    uint32_t unacked = 0;          // DATA bytes received since the last WINDOW_UPDATE
  };

  struct Member {
    size_t id = 0;
    uint64_t serial = 0;  // tells this join of `id` from an earlier one
    std::string prefix;
    std::string rangeEnd;
    uint16_t port = 0;
    int conn = -1;
    State state = State::Joining;
    std::function<void(bool)> done;  // the join's, until it is called
    int64_t lease = 0;
    int64_t revision = 0;  // the Put's
    int64_t watched = 0;   // the newest event's revision its watch delivered
    int rangeTries = 0;
    uint32_t nextStream = 1;
    uint32_t keepAliveStream = 0;  // 0 while it is being opened again
    uint32_t unacked = 0;  // the connection's DATA bytes since its last WINDOW_UPDATE
    std::map<uint32_t, Call> calls;
    std::vector<size_t> present;  // sorted: the group's members it has reported
  };

  Member* find(size_t id, uint64_t serial = 0) {
    if (id >= members_.size() || !members_[id]) return nullptr;
    Member* m = members_[id].get();
    return serial == 0 || m->serial == serial ? m : nullptr;
  }

  void retire(std::unique_ptr<Member> m) {
    retired_.push_back(std::move(m));
    if (retired_.size() == 1) {
      loop_.after(0, [this, life = std::weak_ptr<int>(life_)] {
        if (!life.expired()) retired_.clear();
      });
    }
  }

  // A line on standard error; after the first 20, only every 1,000th.
  void note(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    ++notes_;
    if (notes_ > 20 && notes_ % 1000 != 0) return;
    va_list ap;
    va_start(ap, fmt);
    std::fputs("[bench] etcd: ", stderr);
    std::vfprintf(stderr, fmt, ap);
    if (notes_ > 20) std::fprintf(stderr, " (%llu such lines so far)", static_cast<unsigned long long>(notes_));
    std::fputc('\n', stderr);
    va_end(ap);
  }

  // Opens a stream carrying one gRPC message; `last`: the request side ends
  // with it (a unary call). Returns the stream's id.
  uint32_t startCall(Member& m, Kind kind, const std::vector<uint8_t>& message, bool last) {
    const uint32_t stream = m.nextStream;
    m.nextStream += 2;
    const std::vector<uint8_t>& block = headerBlocks_[{m.port, kind}];
    std::vector<uint8_t> out;
    out.reserve(2 * kFrameHeader + block.size() + 5 + message.size());
    putFrameHeader(out, block.size(), kHeaders, kEndHeaders, stream);
    out.insert(out.end(), block.begin(), block.end());
    putMessage(out, stream, message, last);
    m.calls[stream].kind = kind;
    ++requestsSent_;
    loop_.write(m.conn, out);
    return stream;
  }

  // One more message on an open stream.
  void sendOnStream(Member& m, uint32_t stream, const std::vector<uint8_t>& message) {
    std::vector<uint8_t> out;
    out.reserve(kFrameHeader + 5 + message.size());
    putMessage(out, stream, message, false);
    ++requestsSent_;
    loop_.write(m.conn, out);
  }

  // A DATA frame with a gRPC message: uncompressed, its length big-endian.
  static void putMessage(std::vector<uint8_t>& out, uint32_t stream, const std::vector<uint8_t>& message, bool last) {
    putFrameHeader(out, 5 + message.size(), kData, last ? kEndStream : 0, stream);
    out.push_back(0);
    putBe32(out, static_cast<uint32_t>(message.size()));
    out.insert(out.end(), message.begin(), message.end());
  }

  // The member is gone: its connection closed (without a word), its
  // keep-alives stopped, a join still waiting told it failed.
  void gone(Member& m) {
    m.state = State::Gone;
    m.calls.clear();
    if (loop_.isOpen(m.conn)) loop_.close(m.conn);
    if (m.done) {
      auto done = std::move(m.done);
      m.done = nullptr;
      loop_.after(0, [done = std::move(done)] { done(false); });
    }
  }

  // Something failed on the member's connection or one of its calls.
  void failed(Member& m, const std::string& why) {
    if (m.state == State::Gone) return;
    const char* when = m.state == State::Joining ? "joining" : m.state == State::Leaving ? "leaving" : "in its group";
    note("member m%zu (%s, port %u): %s", m.id, when, m.port, why.c_str());
    ++failures_[std::string(when) + ": " + why.substr(0, why.find(" ("))];
    if (m.state == State::In) ++lost_;
    gone(m);
  }

  size_t onData(size_t id, uint64_t serial, bool ok, std::span<const uint8_t> data) {
    Member* m = find(id, serial);
    if (m == nullptr || m->state == State::Gone) return data.size();
    if (!ok) {
      failed(*m, "connection lost");
      return 0;
    }
    size_t off = 0;
    while (data.size() - off >= kFrameHeader) {
      const uint8_t* h = data.data() + off;
      const uint32_t length = (uint32_t{h[0]} << 16) | (uint32_t{h[1]} << 8) | uint32_t{h[2]};
      if (length > kMaxFrame) {
        failed(*m, "a frame of " + std::to_string(length) + " bytes");
        return data.size();
      }
      if (data.size() - off < kFrameHeader + length) break;
      const auto type = static_cast<FrameType>(h[3]);
      const uint8_t flags = h[4];
      const uint32_t stream = be32(h + 5) & 0x7fffffffu;
      off += kFrameHeader + length;
      onFrame(id, serial, type, flags, stream, std::span<const uint8_t>(h + kFrameHeader, length));
      // The frame's callbacks may have crashed, left or rejoined the member.
      m = find(id, serial);
      if (m == nullptr || m->state == State::Gone || !loop_.isOpen(m->conn)) return data.size();
    }
    return off;
  }

  void onFrame(size_t id, uint64_t serial, FrameType type, uint8_t flags, uint32_t stream,
               std::span<const uint8_t> payload) {
    Member& m = *find(id, serial);
    switch (type) {
      case kData: {
        const auto length = static_cast<uint32_t>(payload.size());
        if (flags & kPadded) {
          if (payload.empty() || payload[0] >= payload.size()) return failed(m, "a DATA frame padded past its end");
          payload = payload.subspan(1, payload.size() - 1 - payload[0]);
        }
        // Flow control counts the whole frame, padding included.
        m.unacked += length;
        if (m.unacked >= kWindowRefill) {
          std::vector<uint8_t> out;
          putWindowUpdate(out, 0, m.unacked);
          loop_.write(m.conn, out);
          m.unacked = 0;
        }
        auto it = m.calls.find(stream);
        if (it == m.calls.end()) return;  // a stream already over
        it->second.unacked += length;
        if (it->second.unacked >= kWindowRefill && !(flags & kEndStream)) {
          std::vector<uint8_t> out;
          putWindowUpdate(out, stream, it->second.unacked);
          loop_.write(m.conn, out);
          it->second.unacked = 0;
        }
        onStreamData(id, serial, stream, payload);
        Member* mm = find(id, serial);
        if (mm != nullptr && (flags & kEndStream)) streamEnded(*mm, stream);
        return;
      }
      case kHeaders:
        // Response headers and trailers: their blocks (and any CONTINUATION)
        // are not decoded; trailers end the stream.
        if (flags & kEndStream) streamEnded(m, stream);
        return;
      case kRstStream: {
        auto it = m.calls.find(stream);
        if (it == m.calls.end()) return;
        const uint32_t code = payload.size() >= 4 ? be32(payload.data()) : 0;
        const Call call = std::move(it->second);
        m.calls.erase(it);
        return callOver(m, call.kind, call.answered, " (RST_STREAM " + std::to_string(code) + ")");
      }
      case kSettings:
        if (!(flags & kAck)) {
          std::vector<uint8_t> out;
          putFrameHeader(out, 0, kSettings, kAck, 0);
          loop_.write(m.conn, out);
        }
        return;
      case kPing:
        if (!(flags & kAck) && payload.size() == 8) {
          std::vector<uint8_t> out;
          putFrameHeader(out, 8, kPing, kAck, 0);
          out.insert(out.end(), payload.begin(), payload.end());
          loop_.write(m.conn, out);
        }
        return;
      case kGoAway: {
        const uint32_t code = payload.size() >= 8 ? be32(payload.data() + 4) : 0;
        std::string debug = payload.size() > 8 ? std::string(asText(payload.subspan(8))) : "";
        return failed(m, "GOAWAY " + std::to_string(code) + (debug.empty() ? "" : " (" + debug + ")"));
      }
      default:
        // WINDOW_UPDATE (this client's messages are far smaller than any
        // window), PRIORITY, CONTINUATION, unknown types: nothing to do.
        return;
    }
  }

  // A DATA frame's payload: whole gRPC messages are handled at once, a
  // message split over frames waits in its call.
  void onStreamData(size_t id, uint64_t serial, uint32_t stream, std::span<const uint8_t> payload) {
    Member* m = find(id, serial);
    auto it = m->calls.find(stream);
    std::vector<uint8_t> joined;
    std::span<const uint8_t> bytes = payload;
    if (!it->second.partial.empty()) {
      joined = std::move(it->second.partial);
      it->second.partial.clear();
      joined.insert(joined.end(), payload.begin(), payload.end());
      bytes = joined;
    }
    size_t off = 0;
    while (bytes.size() - off >= 5) {
      if (bytes[off] != 0) return failed(*m, std::string(nameOf(it->second.kind)) + ": a compressed message");
      const uint32_t length = be32(bytes.data() + off + 1);
      if (bytes.size() - off - 5 < length) break;
      const auto message = bytes.subspan(off + 5, length);
      off += 5 + length;
      it->second.answered = true;
      onMessage(*m, it->second.kind, message);
      m = find(id, serial);
      if (m == nullptr || m->state == State::Gone) return;
      it = m->calls.find(stream);
      if (it == m->calls.end()) return;
    }
    it->second.partial.assign(bytes.begin() + static_cast<std::ptrdiff_t>(off), bytes.end());
  }

  void streamEnded(Member& m, uint32_t stream) {
    auto it = m.calls.find(stream);
    if (it == m.calls.end()) return;
    const Call call = std::move(it->second);
    m.calls.erase(it);
    callOver(m, call.kind, call.answered, "");
  }

  // A call is over: answered (its trailers came after its message) or not
  // (trailers alone, grpc-status not 0; or RST_STREAM, `how`).
  void callOver(Member& m, Kind kind, bool answered, const std::string& how) {
    if (m.state == State::Gone) return;
    const std::string what = std::string(nameOf(kind)) + (answered ? " stream ended" : " ended without an answer") + how;
    if (m.state == State::Leaving) {
      if (kind != Kind::Revoke) return;  // the rest no longer matters
      if (!answered) note("member m%zu: its LeaseRevoke failed%s", m.id, how.c_str());
      return gone(m);
    }
    if (kind == Kind::Watch || kind == Kind::KeepAlive) return reopen(m, kind, what);
    if (answered) return;
    if (kind == Kind::Range && m.state == State::Joining && ++m.rangeTries < kRangeTries) {
      ++retried_;
      note("member m%zu (port %u): %s; asked again", m.id, m.port, what.c_str());
      loop_.after(kRetryNs, [this, life = std::weak_ptr<int>(life_), id = m.id, serial = m.serial] {
        if (life.expired()) return;
        Member* mm = find(id, serial);
        if (mm != nullptr && mm->state == State::Joining) startRange(*mm);
      });
      return;
    }
    failed(m, what);
  }

  void reopen(Member& m, Kind kind, const std::string& why) {
    ++reopened_;
    note("member m%zu (port %u): %s; opened again", m.id, m.port, why.c_str());
    if (kind == Kind::KeepAlive) m.keepAliveStream = 0;
    loop_.after(kRetryNs, [this, life = std::weak_ptr<int>(life_), id = m.id, serial = m.serial, kind] {
      if (life.expired()) return;
      Member* mm = find(id, serial);
      if (mm == nullptr || (mm->state != State::Joining && mm->state != State::In)) return;
      if (kind == Kind::Watch) {
        startWatch(*mm);
      } else {
        mm->keepAliveStream = startCall(*mm, Kind::KeepAlive, keepAliveRequest(*mm), false);
      }
    });
  }

  void startRange(Member& m) {
    // RangeRequest: key 1, range_end 2, revision 4; only the keys.
    std::vector<uint8_t> range;
    putString(range, 1, m.prefix);
    putString(range, 2, m.rangeEnd);
    putInt(range, 4, m.revision);
    putInt(range, 8, 1);  // keys_only
    startCall(m, Kind::Range, range, true);
  }

  // The group's watch, from the revision after the Put's (or, opened again,
  // after the newest event it delivered: those after it come again).
  void startWatch(Member& m) {
    // WatchRequest.create_request 1: WatchCreateRequest key 1, range_end 2,
    // start_revision 3.
    std::vector<uint8_t> create;
    putString(create, 1, m.prefix);
    putString(create, 2, m.rangeEnd);
    putInt(create, 3, std::max(m.revision, m.watched) + 1);
    std::vector<uint8_t> watch;
    putBytes(watch, 1, create);
    startCall(m, Kind::Watch, watch, false);
  }

  void onMessage(Member& m, Kind kind, std::span<const uint8_t> message) {
    switch (kind) {
      case Kind::Grant: {
        // LeaseGrantResponse: ID 2, TTL 3, error 4.
        ProtoReader r(message);
        Field f;
        std::string error;
        while (r.next(f)) {
          if (f.number == 2 && f.wire == kVarint) m.lease = static_cast<int64_t>(f.value);
          if (f.number == 4 && f.wire == kLength) error = asText(f.bytes);
        }
        if (m.lease == 0 || !error.empty()) return failed(m, "LeaseGrant refused: " + error);
        if (m.state != State::Joining) return;
        // As clientv3's KeepAlive does: a stream, a first request at once,
        // then one every ttl/3.
        m.keepAliveStream = startCall(m, Kind::KeepAlive, keepAliveRequest(m), false);
        scheduleKeepAlive(m);
        // PutRequest: key 1, value 2, lease 3.
        std::vector<uint8_t> put;
        putString(put, 1, m.prefix + "m" + std::to_string(m.id));
        putInt(put, 3, m.lease);
        startCall(m, Kind::Put, put, true);
        return;
      }
      case Kind::Put: {
        m.revision = headerRevision(message);
        if (m.revision == 0) return failed(m, "Put answered without a revision");
        if (m.state == State::Joining) startRange(m);
        return;
      }
      case Kind::Range: {
        if (m.state != State::Joining) return;
        // RangeResponse: kvs 2 (mvccpb.KeyValue).
        ProtoReader r(message);
        Field f;
        std::vector<size_t> there;
        while (r.next(f)) {
          if (f.number != 2 || f.wire != kLength) continue;
          if (auto subject = subjectOf(m, keyOf(f.bytes))) there.push_back(*subject);
        }
        if (!r.ok()) return failed(m, "an unreadable RangeResponse");
        startWatch(m);
        const size_t id = m.id;
        const uint64_t serial = m.serial;
        for (size_t subject : there) {
          Member* mm = find(id, serial);
          if (mm == nullptr || mm->state != State::Joining) return;
          report(*mm, subject, true);
        }
        return;
      }
      case Kind::Watch:
        return onWatchResponse(m, message);
      case Kind::KeepAlive: {
        // LeaseKeepAliveResponse: ID 2, TTL 3; a TTL of 0 or less: the lease is gone.
        ProtoReader r(message);
        Field f;
        int64_t ttl = 0;
        while (r.next(f)) {
          if (f.number == 3 && f.wire == kVarint) ttl = static_cast<int64_t>(f.value);
        }
        if (ttl <= 0 && m.state != State::Leaving) failed(m, "its lease expired (LeaseKeepAlive TTL " + std::to_string(ttl) + ")");
        return;
      }
      case Kind::Revoke:
        // Its key is deleted with the lease: the member is done.
        if (m.state == State::Leaving) gone(m);
        return;
    }
  }

  void onWatchResponse(Member& m, std::span<const uint8_t> message) {
    // WatchResponse: created 3, canceled 4, cancel_reason 6, events 11
    // (mvccpb.Event: type 1, PUT 0 or DELETE 1; kv 2).
    ProtoReader r(message);
    Field f;
    bool created = false, canceled = false;
    std::string reason;
    std::vector<std::pair<size_t, bool>> events;
    while (r.next(f)) {
      if (f.number == 3 && f.wire == kVarint) created = f.value != 0;
      if (f.number == 4 && f.wire == kVarint) canceled = f.value != 0;
      if (f.number == 6 && f.wire == kLength) reason = asText(f.bytes);
      if (f.number != 11 || f.wire != kLength) continue;
      ProtoReader e(f.bytes);
      Field g;
      uint64_t type = 0;
      std::string_view key;
      while (e.next(g)) {
        if (g.number == 1 && g.wire == kVarint) type = g.value;
        if (g.number == 2 && g.wire == kLength) {
          // A DELETE's kv carries the deletion's revision as its mod_revision.
          int64_t revision = 0;
          key = keyOf(g.bytes, &revision);
          m.watched = std::max(m.watched, revision);
        }
      }
      if (auto subject = subjectOf(m, key)) events.emplace_back(*subject, type == 0);
    }
    if (!r.ok()) return failed(m, "an unreadable WatchResponse");
    if (canceled) return failed(m, "its watch was canceled" + (reason.empty() ? "" : ": " + reason));
    const size_t id = m.id;
    const uint64_t serial = m.serial;
    if (created && m.state == State::Joining) {
      m.state = State::In;
      if (m.done) {
        auto done = std::move(m.done);
        m.done = nullptr;
        done(true);
      }
    }
    for (const auto& [subject, present] : events) {
      Member* mm = find(id, serial);
      // A member on its way out no longer watches.
      if (mm == nullptr || mm->state != State::In) return;
      report(*mm, subject, present);
    }
  }

  // The member number in a key of the member's group ("<prefix>m<id>").
  static std::optional<size_t> subjectOf(const Member& m, std::string_view key) {
    if (key.size() <= m.prefix.size() + 1 || key.compare(0, m.prefix.size(), m.prefix) != 0) return std::nullopt;
    key.remove_prefix(m.prefix.size());
    if (key[0] != 'm') return std::nullopt;
    size_t v = 0;
    for (size_t i = 1; i < key.size(); ++i) {
      if (key[i] < '0' || key[i] > '9') return std::nullopt;
      v = v * 10 + static_cast<size_t>(key[i] - '0');
    }
    return v;
  }

  // Tells `seen` once per change of what the member sees.
  void report(Member& m, size_t subject, bool present) {
    auto it = std::lower_bound(m.present.begin(), m.present.end(), subject);
    const bool there = it != m.present.end() && *it == subject;
    if (there == present) return;
    if (present) {
      m.present.insert(it, subject);
    } else {
      m.present.erase(it);
    }
    if (seen) seen(m.id, subject, present);
  }

  static std::vector<uint8_t> keepAliveRequest(const Member& m) {
    std::vector<uint8_t> out;
    putInt(out, 1, m.lease);  // LeaseKeepAliveRequest.ID
    return out;
  }

  void scheduleKeepAlive(Member& m) {
    const uint64_t every = static_cast<uint64_t>(ttlSeconds_) * 1'000'000'000 / 3;
    loop_.after(every, [this, life = std::weak_ptr<int>(life_), id = m.id, serial = m.serial] {
      if (life.expired()) return;
      Member* mm = find(id, serial);
      if (mm == nullptr || (mm->state != State::Joining && mm->state != State::In)) return;
      // A stream being opened again sends its first request when it opens.
      if (mm->calls.count(mm->keepAliveStream) != 0) sendOnStream(*mm, mm->keepAliveStream, keepAliveRequest(*mm));
      scheduleKeepAlive(*mm);
    });
  }

  Loop& loop_;
  std::vector<uint16_t> ports_;
  int ttlSeconds_;
  size_t nextPort_ = 0;
  uint64_t serials_ = 0;
  uint64_t requestsSent_ = 0;
  uint64_t lost_ = 0;
  uint64_t reopened_ = 0;  // watch and keep-alive streams opened again
  uint64_t retried_ = 0;   // Ranges asked again
  std::map<std::string, uint64_t> failures_;
  uint64_t notes_ = 0;
  const std::vector<uint8_t> preface_ = connectionPreface();
  std::map<std::pair<uint16_t, Kind>, std::vector<uint8_t>> headerBlocks_;
  std::vector<std::unique_ptr<Member>> members_;
  std::vector<std::unique_ptr<Member>> retired_;
  // Timers and readers hold it weakly: once the system is gone they do nothing.
  std::shared_ptr<int> life_ = std::make_shared<int>(0);
};

}  // namespace

std::unique_ptr<PeerSystem> makeEtcdSystem(Loop& loop, std::vector<uint16_t> ports, int ttlSeconds) {
  return std::make_unique<EtcdSystem>(loop, std::move(ports), ttlSeconds);
}

}  // namespace groupcoord::bench
