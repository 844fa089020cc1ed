// The durable form of a stable generation (ClassicGroup.h, Snapshot). One
// version byte, then big-endian fields in protocol/Wire.h's primitives;
// every text is int32-length bytes (no length is cut), an optional one a
// flag byte before it. Decoding is strict: any length or count past the
// bytes that remain, a flag other than 0 or 1, a null length or a byte
// left over gives nullopt.

#include <span>

#include "adapter/kafka/ClassicGroup.h"
#include "protocol/Wire.h"

namespace groupcoord::adapter::kafka {

namespace {

namespace pw = protocol::wire;

constexpr uint8_t kSnapshotVersion = 1;
// The smallest encodings, which bound a count before anything is reserved.
constexpr size_t kMinProtocolBytes = 4 + 4;
constexpr size_t kMinMemberBytes = 4 + 1 + 4 + 4 + 4 + 4 + 4 + 4;

bool readText(pw::Reader& r, std::string& v, const char* field) {
  std::optional<std::string> t;
  if (!r.readNullableBytes(t, field)) return false;
  if (!t) return r.refuseNull(field, false);
  v = std::move(*t);
  return true;
}

bool readArrayCount(pw::Reader& r, size_t& n, size_t minBytes, const char* field) {
  std::optional<size_t> c;
  if (!r.readNullableCount(c, minBytes, field)) return false;
  if (!c) return r.refuseNull(field, true);
  n = *c;
  return true;
}

bool readMember(pw::Reader& r, MemberView& m) {
  bool hasInstance = false;
  if (!readText(r, m.memberId, "MemberId") || !r.readBool(hasInstance, "HasInstance")) return false;
  if (hasInstance && !readText(r, m.groupInstanceId.emplace(), "GroupInstanceId")) return false;
  if (!readText(r, m.clientId, "ClientId") || !readText(r, m.clientHost, "ClientHost") ||
      !r.readInt32(m.sessionTimeoutMs, "SessionTimeoutMs") ||
      !r.readInt32(m.rebalanceTimeoutMs, "RebalanceTimeoutMs")) {
    return false;
  }
  size_t n = 0;
  if (!readArrayCount(r, n, kMinProtocolBytes, "Protocols")) return false;
  m.protocols.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    auto& p = m.protocols.emplace_back();
    if (!readText(r, p.name, "ProtocolName") || !readText(r, p.metadata, "ProtocolMetadata")) return false;
  }
  return readText(r, m.assignment, "Assignment");
}

}  // namespace

std::string encodeSnapshot(const Snapshot& s) {
  std::vector<uint8_t> out;
  pw::Writer w(out);
  w.writeInt8(static_cast<int8_t>(kSnapshotVersion));
  w.writeInt32(s.generation);
  w.writeBytes(s.protocolType);
  w.writeBytes(s.protocolName);
  w.writeBytes(s.leader);
  pw::writeArray(w, s.members, [](pw::Writer& mw, const MemberView& m) {
    mw.writeBytes(m.memberId);
    mw.writeBool(m.groupInstanceId.has_value());
    if (m.groupInstanceId) mw.writeBytes(*m.groupInstanceId);
    mw.writeBytes(m.clientId);
    mw.writeBytes(m.clientHost);
    mw.writeInt32(m.sessionTimeoutMs);
    mw.writeInt32(m.rebalanceTimeoutMs);
    pw::writeArray(mw, m.protocols, [](pw::Writer& pwr, const wire::JoinGroupRequest::Protocol& p) {
      pwr.writeBytes(p.name);
      pwr.writeBytes(p.metadata);
    });
    mw.writeBytes(m.assignment);
  });
  return std::string(out.begin(), out.end());
}

std::optional<Snapshot> decodeSnapshot(std::string_view bytes) {
  pw::Reader r(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  int8_t version = 0;
  if (!r.readInt8(version, "Version") || static_cast<uint8_t>(version) != kSnapshotVersion) return std::nullopt;
  Snapshot s;
  if (!r.readInt32(s.generation, "Generation") || !readText(r, s.protocolType, "ProtocolType") ||
      !readText(r, s.protocolName, "ProtocolName") || !readText(r, s.leader, "Leader")) {
    return std::nullopt;
  }
  size_t n = 0;
  if (!readArrayCount(r, n, kMinMemberBytes, "Members")) return std::nullopt;
  s.members.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (!readMember(r, s.members.emplace_back())) return std::nullopt;
  }
  if (!r.expectEnd()) return std::nullopt;
  return s;
}

}  // namespace groupcoord::adapter::kafka
