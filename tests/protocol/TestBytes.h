#pragma once

// Frames built by hand from docs/protocol.md for the codec tests. Nothing
// here uses protocol/Wire.h: expected bytes come from these few shifts, so the
// codec cannot agree with itself and still be wrong.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace groupcoord::protocol::testing {

inline void encodeInt8(std::vector<uint8_t>& out, int v) { out.push_back(static_cast<uint8_t>(v & 0xff)); }

inline void encodeInt16(std::vector<uint8_t>& out, int v) {
  const auto u = static_cast<uint16_t>(v);
  out.push_back(static_cast<uint8_t>(u >> 8));
  out.push_back(static_cast<uint8_t>(u & 0xff));
}

inline void encodeInt32(std::vector<uint8_t>& out, int64_t v) {
  const auto u = static_cast<uint32_t>(v);
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>((u >> shift) & 0xff));
}

inline void encodeInt64(std::vector<uint8_t>& out, int64_t v) {
  const auto u = static_cast<uint64_t>(v);
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>((u >> shift) & 0xff));
}

inline void encodeString(std::vector<uint8_t>& out, std::string_view s) {
  encodeInt16(out, static_cast<int>(s.size()));
  out.insert(out.end(), s.begin(), s.end());
}

// Fluent form of the helpers above: Bytes().int16(0).str("orders").frame().
class Bytes {
 public:
  Bytes& int8(int v) { return put([&] { encodeInt8(bytes_, v); }); }
  Bytes& int16(int v) { return put([&] { encodeInt16(bytes_, v); }); }
  Bytes& uint16(unsigned v) { return put([&] { encodeInt16(bytes_, static_cast<int>(v)); }); }
  Bytes& int32(int64_t v) { return put([&] { encodeInt32(bytes_, v); }); }
  Bytes& int64(int64_t v) { return put([&] { encodeInt64(bytes_, v); }); }
  Bytes& boolean(bool v) { return int8(v ? 1 : 0); }
  Bytes& str(std::string_view s) { return put([&] { encodeString(bytes_, s); }); }
  Bytes& nullStr() { return int16(-1); }
  // `bytes`: int32 length, then the bytes.
  Bytes& blob(std::string_view s) {
    return int32(static_cast<int64_t>(s.size())).put([&] { bytes_.insert(bytes_.end(), s.begin(), s.end()); });
  }
  Bytes& count(int64_t n) { return int32(n); }
  // Kafka's flexible versions: an unsigned varint (7 bits a byte, least
  // significant first), compact strings, bytes and arrays (length or count
  // + 1, 0 for null), an empty tagged-field section, a 16-byte UUID.
  Bytes& uvarint(uint64_t v) {
    return put([&] {
      while (v >= 0x80) {
        bytes_.push_back(static_cast<uint8_t>((v & 0x7f) | 0x80));
        v >>= 7;
      }
      bytes_.push_back(static_cast<uint8_t>(v));
    });
  }
  Bytes& compactStr(std::string_view s) {
    return uvarint(s.size() + 1).put([&] { bytes_.insert(bytes_.end(), s.begin(), s.end()); });
  }
  Bytes& compactNull() { return uvarint(0); }
  Bytes& compactCount(uint64_t n) { return uvarint(n + 1); }
  Bytes& noTags() { return uvarint(0); }
  Bytes& uuid(uint8_t first) {
    return put([&] {
      for (int i = 0; i < 16; ++i) bytes_.push_back(static_cast<uint8_t>(first + i));
    });
  }
  Bytes& raw(std::span<const uint8_t> b) { return put([&] { bytes_.insert(bytes_.end(), b.begin(), b.end()); }); }

  // Request header: ApiKey, Version, CorrelationId, ClientId (nullable).
  Bytes& requestHeader(int apiKey, int version, int64_t correlationId, std::optional<std::string_view> clientId) {
    int16(apiKey).int16(version).int64(correlationId);
    return clientId ? str(*clientId) : nullStr();
  }
  // Response header: Version, CorrelationId.
  Bytes& responseHeader(int version, int64_t correlationId) { return int16(version).int64(correlationId); }

  const std::vector<uint8_t>& body() const { return bytes_; }
  // The body with its int32 Size in front.
  std::vector<uint8_t> frame() const {
    std::vector<uint8_t> out;
    encodeInt32(out, static_cast<int64_t>(bytes_.size()));
    out.insert(out.end(), bytes_.begin(), bytes_.end());
    return out;
  }

 private:
  template <typename F>
  Bytes& put(F f) {
    f();
    return *this;
  }
  std::vector<uint8_t> bytes_;
};

inline std::string toHex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    s.push_back(kDigits[b >> 4]);
    s.push_back(kDigits[b & 0xf]);
  }
  return s;
}

// Empty optional on a malformed hex string.
inline std::optional<std::vector<uint8_t>> fromHex(std::string_view hex) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (hex.size() % 2 != 0) return std::nullopt;
  std::vector<uint8_t> out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = nibble(hex[i]);
    const int lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<uint8_t>(hi * 16 + lo));
  }
  return out;
}

// The body of a whole frame (drops the 4-byte Size).
inline std::span<const uint8_t> bodyOf(const std::vector<uint8_t>& frame) {
  return std::span<const uint8_t>(frame).subspan(4);
}

}  // namespace groupcoord::protocol::testing
