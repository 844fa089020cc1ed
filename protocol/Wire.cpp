#include "protocol/Wire.h"

#include <algorithm>

namespace groupcoord::protocol::wire {

bool Reader::fail(Failure f, const char* field, int64_t value, size_t needBytes) {
  if (failure_ == Failure::None) {
    failure_ = f;
    failedField_ = field;
    failedAt_ = pos_;
    failedValue_ = value;
    failedNeed_ = needBytes;
  }
  return false;
}

bool Reader::need(size_t n, const char* field) {
  if (failure_ != Failure::None) return false;
  if (remaining() < n) return fail(Failure::Truncated, field, 0, n);
  return true;
}

uint64_t Reader::takeBigEndian(size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | data_[pos_ + i];
  pos_ += n;
  return v;
}

bool Reader::readInt8(int8_t& v, const char* field) {
  if (!need(1, field)) return false;
  v = static_cast<int8_t>(takeBigEndian(1));
  return true;
}

bool Reader::readInt16(int16_t& v, const char* field) {
  if (!need(2, field)) return false;
  v = static_cast<int16_t>(static_cast<uint16_t>(takeBigEndian(2)));
  return true;
}

bool Reader::readUint16(uint16_t& v, const char* field) {
  if (!need(2, field)) return false;
  v = static_cast<uint16_t>(takeBigEndian(2));
  return true;
}

bool Reader::readInt32(int32_t& v, const char* field) {
  if (!need(4, field)) return false;
  v = static_cast<int32_t>(static_cast<uint32_t>(takeBigEndian(4)));
  return true;
}

bool Reader::readInt64(int64_t& v, const char* field) {
  if (!need(8, field)) return false;
  v = static_cast<int64_t>(takeBigEndian(8));
  return true;
}

bool Reader::readBool(bool& v, const char* field) {
  if (!need(1, field)) return false;
  const uint8_t b = data_[pos_];
  if (b > 1) return fail(Failure::BadBool, field, b, 1);
  ++pos_;
  v = b == 1;
  return true;
}

bool Reader::readEnum8(int8_t& v, int8_t maxValue, const char* field) {
  if (!need(1, field)) return false;
  const auto b = static_cast<int8_t>(data_[pos_]);
  if (b < 0 || b > maxValue) return fail(Failure::BadEnum, field, b, 1);
  ++pos_;
  v = b;
  return true;
}

bool Reader::readString(std::string& v, const char* field) {
  std::string_view view;
  if (!readStringView(view, field)) return false;
  v.assign(view);
  return true;
}

bool Reader::readStringView(std::string_view& v, const char* field) {
  int16_t len = 0;
  if (!readInt16(len, field)) return false;
  if (len == -1) {
    pos_ -= 2;  // report the offset of the length itself
    return fail(Failure::NullNotAllowed, field, len, 0);
  }
  if (len < 0) {
    pos_ -= 2;
    return fail(Failure::NegativeLength, field, len, 0);
  }
  const auto n = static_cast<size_t>(len);
  if (remaining() < n) return fail(Failure::LengthBeyondEnd, field, len, n);
  v = std::string_view(reinterpret_cast<const char*>(data_ + pos_), n);
  pos_ += n;
  return true;
}

bool Reader::readBytes(std::string& v, const char* field) {
  // -1 reads as empty here (groupcoord's protocol has no null bytes).
  std::optional<std::string> read;
  if (!readNullableBytes(read, field)) return false;
  if (read) {
    v = std::move(*read);
  } else {
    v.clear();
  }
  return true;
}

template <typename Length>
bool Reader::readNullableText(std::optional<std::string_view>& v, const char* field) {
  Length len = 0;
  bool ok = false;
  if constexpr (sizeof(Length) == 2) {
    ok = readInt16(len, field);
  } else {
    ok = readInt32(len, field);
  }
  if (!ok) return false;
  if (len == -1) {
    v.reset();
    return true;
  }
  if (len < 0) {
    pos_ -= sizeof(Length);
    return fail(Failure::NegativeLength, field, len, 0);
  }
  const auto n = static_cast<size_t>(len);
  if (remaining() < n) return fail(Failure::LengthBeyondEnd, field, len, n);
  v.emplace(reinterpret_cast<const char*>(data_ + pos_), n);
  pos_ += n;
  return true;
}

namespace {
// A nullable view read as an owned string.
bool own(bool read, const std::optional<std::string_view>& view, std::optional<std::string>& v) {
  if (!read) return false;
  if (view) {
    v.emplace(*view);
  } else {
    v.reset();
  }
  return true;
}
}  // namespace

bool Reader::readNullableString(std::optional<std::string>& v, const char* field) {
  std::optional<std::string_view> view;
  return own(readNullableText<int16_t>(view, field), view, v);
}

bool Reader::readNullableStringView(std::optional<std::string_view>& v, const char* field) {
  return readNullableText<int16_t>(v, field);
}

bool Reader::readCount(size_t& count, size_t minElementBytes, const char* field) {
  // -1 reads as no elements.
  std::optional<size_t> n;
  if (!readNullableCount(n, minElementBytes, field)) return false;
  count = n.value_or(0);
  return true;
}

bool Reader::readNullableBytes(std::optional<std::string>& v, const char* field) {
  std::optional<std::string_view> view;
  return own(readNullableText<int32_t>(view, field), view, v);
}

bool Reader::readNullableCount(std::optional<size_t>& count, size_t minElementBytes, const char* field) {
  int32_t n = 0;
  if (!readInt32(n, field)) return false;
  if (n == -1) {
    count.reset();
    return true;
  }
  if (n < 0) {
    pos_ -= 4;
    return fail(Failure::NegativeCount, field, n, 0);
  }
  const uint64_t least = static_cast<uint64_t>(n) * minElementBytes;
  if (least > remaining()) return fail(Failure::CountBeyondEnd, field, n, minElementBytes);
  count = static_cast<size_t>(n);
  return true;
}

bool Reader::refuseNull(const char* field, bool asArray, size_t lengthBytes) {
  if (failure_ != Failure::None) return false;
  pos_ -= lengthBytes;
  return fail(asArray ? Failure::NullArray : Failure::NullBytes, field, -1, 0);
}

bool Reader::readUnsignedVarint(uint32_t& v, const char* field) {
  if (failure_ != Failure::None) return false;
  const size_t start = pos_;
  uint64_t value = 0;
  for (int i = 0; i < 5; ++i) {
    if (remaining() == 0) {
      pos_ = start;
      return fail(Failure::Truncated, field, 0, static_cast<size_t>(i) + 1);
    }
    const uint8_t b = data_[pos_++];
    value |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      if (value > 0xffffffffu) break;
      v = static_cast<uint32_t>(value);
      return true;
    }
  }
  pos_ = start;
  return fail(Failure::BadVarint, field, 0, 0);
}

bool Reader::readCompactText(std::optional<std::string_view>& v, size_t maxLength, const char* field) {
  const size_t start = pos_;
  uint32_t n = 0;
  if (!readUnsignedVarint(n, field)) return false;
  if (n == 0) {
    v.reset();
    return true;
  }
  const size_t len = n - 1;
  if (len > maxLength) {
    pos_ = start;
    return fail(Failure::LengthTooLarge, field, static_cast<int64_t>(len), 0);
  }
  if (remaining() < len) return fail(Failure::LengthBeyondEnd, field, static_cast<int64_t>(len), len);
  v.emplace(reinterpret_cast<const char*>(data_ + pos_), len);
  pos_ += len;
  return true;
}

bool Reader::readCompactStringView(std::string_view& v, const char* field) {
  std::optional<std::string_view> text;
  if (!readCompactText(text, kMaxStringBytes, field)) return false;
  if (!text) {
    pos_ -= 1;  // the offset of the length itself
    return fail(Failure::NullNotAllowed, field, -1, 0);
  }
  v = *text;
  return true;
}

bool Reader::readCompactNullableStringView(std::optional<std::string_view>& v, const char* field) {
  return readCompactText(v, kMaxStringBytes, field);
}

bool Reader::readCompactNullableBytesView(std::optional<std::string_view>& v, const char* field) {
  return readCompactText(v, static_cast<size_t>(INT32_MAX), field);
}

bool Reader::readCompactNullableCount(std::optional<size_t>& count, size_t minElementBytes, const char* field) {
  uint32_t n = 0;
  if (!readUnsignedVarint(n, field)) return false;
  if (n == 0) {
    count.reset();
    return true;
  }
  const uint64_t c = n - 1;
  if (c * minElementBytes > remaining() || c > kMaxArrayCount) {
    return fail(Failure::CountBeyondEnd, field, static_cast<int64_t>(c), minElementBytes);
  }
  count = static_cast<size_t>(c);
  return true;
}

bool Reader::skipTaggedFields() {
  constexpr const char* kField = "TaggedFields";
  uint32_t count = 0;
  if (!readUnsignedVarint(count, kField)) return false;
  // Each takes two bytes at the least (its tag and its size).
  if (uint64_t{count} * 2 > remaining()) return fail(Failure::CountBeyondEnd, kField, count, 2);
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t tag = 0;
    uint32_t size = 0;
    if (!readUnsignedVarint(tag, kField) || !readUnsignedVarint(size, kField)) return false;
    if (remaining() < size) return fail(Failure::LengthBeyondEnd, kField, size, size);
    pos_ += size;
  }
  return true;
}

bool Reader::readUuid(std::array<uint8_t, 16>& v, const char* field) {
  if (!need(16, field)) return false;
  std::copy(data_ + pos_, data_ + pos_ + 16, v.begin());
  pos_ += 16;
  return true;
}

bool Reader::readPresence(bool& present, const char* field) {
  int8_t b = 0;
  if (!readInt8(b, field)) return false;
  if (b != -1 && b != 1) {
    pos_ -= 1;
    return fail(Failure::BadPresence, field, b, 1);
  }
  present = b == 1;
  return true;
}

bool Reader::expectEnd() {
  if (failure_ != Failure::None) return false;
  if (remaining() != 0) return fail(Failure::TrailingBytes, "", static_cast<int64_t>(remaining()), 0);
  return true;
}

std::string Reader::describeFailure() const {
  const std::string at = " at offset " + std::to_string(failedAt_);
  const std::string left = std::to_string(size_ - failedAt_) + " left";
  const std::string value = std::to_string(failedValue_);
  const std::string name = failedField_;
  switch (failure_) {
    case Failure::None:
      return {};
    case Failure::Truncated:
      return name + ": truncated, needs " + std::to_string(failedNeed_) + " bytes" + at + ", " + left;
    case Failure::NegativeLength:
      return name + ": negative string length " + value + at;
    case Failure::LengthBeyondEnd:
      return name + ": string length " + value + " beyond the " + left + at;
    case Failure::NullNotAllowed:
      return name + ": null string" + at + ", but the field is not nullable";
    case Failure::NullBytes:
      return name + ": null bytes" + at + ", but the field is not nullable";
    case Failure::NullArray:
      return name + ": null array" + at + ", but the field is not nullable";
    case Failure::NegativeCount:
      return name + ": negative array count " + value + at;
    case Failure::CountBeyondEnd:
      return name + ": array count " + value + " cannot fit in the " + left + at + " (each element takes at least " +
             std::to_string(failedNeed_) + ")";
    case Failure::BadBool:
      return name + ": bool byte " + value + at + ", must be 0 or 1";
    case Failure::BadEnum:
      return name + ": value " + value + at + " is not one of the field's values";
    case Failure::TrailingBytes:
      return value + " bytes after the last field" + at;
    case Failure::BadVarint:
      return name + ": unsigned varint longer than 5 bytes or above 2^32-1" + at;
    case Failure::LengthTooLarge:
      return name + ": compact string length " + value + at + " above " + std::to_string(kMaxStringBytes);
    case Failure::BadPresence:
      return name + ": presence byte " + value + at + ", must be -1 (null) or 1";
  }
  return "unknown failure";
}

void Writer::putBigEndian(uint64_t v, size_t n) {
  // One range insert rather than a push_back per byte: this runs several
  // times for every response of the heartbeat hot path.
  uint8_t bytes[8];
  for (size_t i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(v >> (8 * (7 - i)));
  out_.insert(out_.end(), bytes + (8 - n), bytes + 8);
}

void Writer::writeString(std::string_view v) {
  const size_t n = std::min(v.size(), kMaxStringBytes);
  writeInt16(static_cast<int16_t>(n));
  out_.insert(out_.end(), reinterpret_cast<const uint8_t*>(v.data()), reinterpret_cast<const uint8_t*>(v.data()) + n);
}

void Writer::writeBytes(std::string_view v) {
  const size_t n = std::min(v.size(), static_cast<size_t>(INT32_MAX));
  writeInt32(static_cast<int32_t>(n));
  out_.insert(out_.end(), reinterpret_cast<const uint8_t*>(v.data()), reinterpret_cast<const uint8_t*>(v.data()) + n);
}

void Writer::writeNullableString(const std::optional<std::string>& v) {
  if (!v) {
    writeInt16(-1);
    return;
  }
  writeString(*v);
}

size_t Writer::writeCount(size_t count) {
  const size_t n = std::min(count, kMaxArrayCount);
  writeInt32(static_cast<int32_t>(n));
  return n;
}

void Writer::writeUnsignedVarint(uint32_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<uint8_t>(v));
}

void Writer::writeCompactString(std::string_view v) {
  const size_t n = std::min(v.size(), kMaxStringBytes);
  writeUnsignedVarint(static_cast<uint32_t>(n + 1));
  out_.insert(out_.end(), reinterpret_cast<const uint8_t*>(v.data()), reinterpret_cast<const uint8_t*>(v.data()) + n);
}

void Writer::writeCompactNullableString(const std::optional<std::string>& v) {
  if (!v) {
    writeCompactNull();
    return;
  }
  writeCompactString(*v);
}

void Writer::writeCompactBytes(std::string_view v) {
  const size_t n = std::min(v.size(), static_cast<size_t>(INT32_MAX));
  writeUnsignedVarint(static_cast<uint32_t>(n + 1));
  out_.insert(out_.end(), reinterpret_cast<const uint8_t*>(v.data()), reinterpret_cast<const uint8_t*>(v.data()) + n);
}

size_t Writer::writeCompactCount(size_t count) {
  const size_t n = std::min(count, kMaxArrayCount);
  writeUnsignedVarint(static_cast<uint32_t>(n + 1));
  return n;
}

size_t Writer::beginFrame() {
  const size_t start = out_.size();
  writeInt32(0);
  return start;
}

void Writer::endFrame(size_t frameStart) {
  const uint64_t body = out_.size() - frameStart - 4;
  for (size_t i = 0; i < 4; ++i) out_[frameStart + i] = static_cast<uint8_t>(body >> (8 * (3 - i)));
}

}  // namespace groupcoord::protocol::wire
