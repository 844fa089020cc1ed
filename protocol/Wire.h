#pragma once

// The primitive types of the groupcoord wire protocol (docs/protocol.md,
// "Types"): a bounded big-endian Reader over untrusted bytes and a Writer that
// appends to a buffer. Only the codec (protocol/Codec.cpp) and its tests use
// this header; everyone else goes through protocol/Codec.h.
//
// Reader contract: every read checks the bytes that remain first; the first
// failure is recorded and makes every later read fail too, so a decoder can
// read a whole message and look once at the end. A failure never throws and
// never allocates; describeFailure() builds the log text only when asked.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace groupcoord::protocol::wire {

// The smallest encoding of each structure, which bounds an array's count
// before anything is allocated for it, is computed from the structure's
// description (protocol/Schema.h, schema::smallest).
inline constexpr size_t kMinStringBytes = 2;  // int16 length, no bytes

// The longest string and the largest array the length prefixes can express.
inline constexpr size_t kMaxStringBytes = 0x7fff;
inline constexpr size_t kMaxArrayCount = 0x7fffffff;

class Reader {
 public:
  enum class Failure {
    None,
    Truncated,         // a fixed-size field runs past the end
    NegativeLength,    // string length below -1
    LengthBeyondEnd,   // string length larger than what remains
    NullNotAllowed,    // length -1 on a string that is not nullable
    NullBytes,         // length -1 on `bytes` that are not nullable (refuseNull)
    NullArray,         // count -1 on an array that is not nullable (refuseNull)
    NegativeCount,     // array count below -1
    CountBeyondEnd,    // count * smallest element larger than what remains
    BadBool,           // a bool byte other than 0 or 1
    BadEnum,           // an int8 enum byte above its largest value
    TrailingBytes,     // bytes left after the last field
    BadVarint,         // an unsigned varint longer than 5 bytes or above 2^32-1
    LengthTooLarge,    // a compact string length above kMaxStringBytes
    BadPresence,       // a nullable structure's presence byte other than -1 or 1
  };

  explicit Reader(std::span<const uint8_t> bytes) : data_(bytes.data()), size_(bytes.size()) {}

  size_t remaining() const { return size_ - pos_; }
  size_t position() const { return pos_; }
  bool ok() const { return failure_ == Failure::None; }
  Failure failure() const { return failure_; }

  // `field` names the field in the failure text; it must outlive the Reader
  // (string literals).
  bool readInt8(int8_t& v, const char* field);
  bool readInt16(int16_t& v, const char* field);
  bool readUint16(uint16_t& v, const char* field);
  bool readInt32(int32_t& v, const char* field);
  bool readInt64(int64_t& v, const char* field);
  // 0 or 1; any other byte is malformed.
  bool readBool(bool& v, const char* field);
  // An int8 enum: 0 .. maxValue; anything else is malformed.
  bool readEnum8(int8_t& v, int8_t maxValue, const char* field);
  // Not nullable: length -1 is malformed.
  bool readString(std::string& v, const char* field);
  // Length -1 gives nullopt.
  bool readNullableString(std::optional<std::string>& v, const char* field);
  // The same two read in place: the views point into the bytes read.
  bool readStringView(std::string_view& v, const char* field);
  bool readNullableStringView(std::optional<std::string_view>& v, const char* field);
  // `bytes`: an int32 length, then that many bytes; -1 reads as empty.
  bool readBytes(std::string& v, const char* field);
  // An array count: -1 gives 0. Fails unless count * minElementBytes fits in
  // what remains, so the caller may reserve `count` elements afterwards.
  bool readCount(size_t& count, size_t minElementBytes, const char* field);
  // Kafka's nullable forms: -1 gives nullopt; otherwise as readBytes and
  // readCount.
  bool readNullableBytes(std::optional<std::string>& v, const char* field);
  bool readNullableCount(std::optional<size_t>& count, size_t minElementBytes, const char* field);
  // Records that the null just read by readNullableBytes (asArray false) or
  // readNullableCount (asArray true), or their compact forms, is not allowed
  // for `field`, at the offset of the length itself (lengthBytes before the
  // position: 4, or 1 for a compact length). Returns false.
  bool refuseNull(const char* field, bool asArray, size_t lengthBytes = 4);

  // Kafka's flexible versions (docs/protocol.md, "The Kafka port"). An
  // unsigned varint: 7 bits a byte, least significant first, at most 5
  // bytes and at most 2^32-1.
  bool readUnsignedVarint(uint32_t& v, const char* field);
  // Compact forms: an unsigned varint of length + 1 (count + 1), 0 meaning
  // null. A compact string is at most kMaxStringBytes long, as Kafka's own
  // decoder requires; null where it is not nullable is malformed.
  bool readCompactStringView(std::string_view& v, const char* field);
  bool readCompactNullableStringView(std::optional<std::string_view>& v, const char* field);
  bool readCompactNullableBytesView(std::optional<std::string_view>& v, const char* field);
  // As readNullableCount: fails unless count * minElementBytes fits in what
  // remains.
  bool readCompactNullableCount(std::optional<size_t>& count, size_t minElementBytes, const char* field);
  // A structure's tagged fields: a count, then each a tag, a size and that
  // many bytes. None is known here, so all are skipped; each size is
  // checked against what remains.
  bool skipTaggedFields();
  // 16 bytes.
  bool readUuid(std::array<uint8_t, 16>& v, const char* field);
  // A nullable structure's int8 presence byte: -1 null (present false), 1
  // present; anything else is malformed.
  bool readPresence(bool& present, const char* field);
  // Fails with TrailingBytes unless every byte was read.
  bool expectEnd();

  // One line for the log, e.g. "Generation: truncated, needs 8 bytes at
  // offset 30, 2 left". Empty while ok().
  std::string describeFailure() const;

 private:
  // A nullable string (Length int16) or nullable bytes (int32): -1 gives nullopt.
  template <typename Length>
  bool readNullableText(std::optional<std::string_view>& v, const char* field);
  bool readCompactText(std::optional<std::string_view>& v, size_t maxLength, const char* field);
  bool fail(Failure f, const char* field, int64_t value, size_t need);
  bool need(size_t n, const char* field);
  uint64_t takeBigEndian(size_t n);

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  Failure failure_ = Failure::None;
  const char* failedField_ = "";
  size_t failedAt_ = 0;
  int64_t failedValue_ = 0;
  size_t failedNeed_ = 0;
};

// Reads an array of T with `readElement(Reader&, T&) -> bool`. The count is
// checked against the bytes that remain before the vector reserves.
template <typename T, typename ReadElement>
bool readArray(Reader& r, std::vector<T>& out, size_t minElementBytes, const char* field, ReadElement readElement) {
  size_t count = 0;
  if (!r.readCount(count, minElementBytes, field)) return false;
  out.clear();
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    if (!readElement(r, out.emplace_back())) return false;
  }
  return true;
}

class Writer {
 public:
  explicit Writer(std::vector<uint8_t>& out) : out_(out) {}

  void writeInt8(int8_t v) { out_.push_back(static_cast<uint8_t>(v)); }
  void writeInt16(int16_t v) { putBigEndian(static_cast<uint16_t>(v), 2); }
  void writeUint16(uint16_t v) { putBigEndian(v, 2); }
  void writeInt32(int32_t v) { putBigEndian(static_cast<uint32_t>(v), 4); }
  void writeInt64(int64_t v) { putBigEndian(static_cast<uint64_t>(v), 8); }
  void writeBool(bool v) { out_.push_back(v ? 1 : 0); }
  // A string longer than kMaxStringBytes cannot be expressed: it is cut at
  // that length so the frame stays well-formed. Everything the protocol
  // carries is bounded far below it (names 249, ClientId 255).
  void writeString(std::string_view v);
  void writeNullableString(const std::optional<std::string>& v);
  // int32 length and the bytes (empty: length 0).
  void writeBytes(std::string_view v);
  // Writes min(count, kMaxArrayCount) and returns it: write that many elements.
  size_t writeCount(size_t count);

  // Kafka's flexible versions: the compact forms Reader reads (a string is
  // cut at kMaxStringBytes as writeString does).
  void writeUnsignedVarint(uint32_t v);
  void writeCompactString(std::string_view v);
  void writeCompactNullableString(const std::optional<std::string>& v);
  void writeCompactBytes(std::string_view v);
  void writeCompactNull() { out_.push_back(0); }  // a null compact string, bytes or array
  size_t writeCompactCount(size_t count);
  void writeNoTaggedFields() { out_.push_back(0); }
  void writeUuid(const std::array<uint8_t, 16>& v) { out_.insert(out_.end(), v.begin(), v.end()); }

  // A frame: beginFrame() reserves the int32 Size, endFrame() fills it in
  // with the number of bytes written since.
  size_t beginFrame();
  void endFrame(size_t frameStart);

 private:
  void putBigEndian(uint64_t v, size_t n);

  std::vector<uint8_t>& out_;
};

template <typename T, typename WriteElement>
void writeArray(Writer& w, const std::vector<T>& items, WriteElement writeElement) {
  const size_t n = w.writeCount(items.size());
  for (size_t i = 0; i < n; ++i) writeElement(w, items[i]);
}

}  // namespace groupcoord::protocol::wire
