#pragma once

// Reading and writing by description (docs/design.md, "One description per
// message"): the visitors that walk a message's `fields` list
// (protocol/Schema.h) and read or write each field a version carries. Used
// by both codecs: groupcoord's own (protocol/Codec.cpp) and Kafka's
// (protocol/kafka/Codec.cpp). Internal to them, like protocol/Wire.h.
//
// A field's wire type follows from its C++ type: the integers as they are;
// bool a byte 0 or 1; std::string a `string` (int16 length), or `bytes`
// (int32 length) when described so; std::optional<std::string> the nullable
// form of either (length -1 is null); a std::vector an array (int32 count)
// of numbers, strings or described structures; std::optional<std::vector>
// a nullable array (count -1 is null); a described struct its own fields in
// place. Enums travel as their underlying integer and keep any value, except
// a schema::ClosedEnum, whose values above its kMax are malformed.
//
// Kafka's flexible versions (docs/protocol.md, "The Kafka port"), when the
// visitor's `flexible` is set: strings, bytes and arrays take their compact
// forms (an unsigned varint of length or count + 1, 0 for null), every
// structure ends with its tagged fields (read and skipped: none is known;
// written as none), a schema::Uuid travels as 16 bytes, and a
// std::optional of a described structure is an int8 -1 for null or 1 and
// the structure. Nothing else changes, and a visitor without `flexible`
// reads and writes exactly as before.
//
// The two codecs differ in one thing, the Nulls policy: groupcoord's
// protocol reads a count or `bytes` length of -1 as empty wherever it
// appears (docs/protocol.md, "Types"); Kafka's message definitions allow -1
// only where a field is nullable, and Kafka's own decoder refuses it
// elsewhere, so the Kafka codec does too.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "protocol/Schema.h"
#include "protocol/Wire.h"

namespace groupcoord::protocol::fieldcodec {

enum class Nulls {
  AsEmpty,  // a count or `bytes` length of -1 on a field that is not optional reads as empty
  Refused,  // ... is malformed
};

template <Nulls kNulls>
struct FieldReader {
  wire::Reader& r;
  int16_t version;
  int16_t newest;
  bool flexible = false;

  // A structure's fields, then (flexible) its tagged fields.
  template <typename S>
  void readStruct(S& s) {
    S::fields(*this, s);
    if (flexible) r.skipTaggedFields();
  }

  template <typename T, typename... Options>
  void operator()(T& value, const char* wire, const char* python, Options... options) {
    const schema::Field f = schema::field(wire, python, options...);
    if (f.carriedAt(version, newest)) read(value, f);
  }

  bool nullableNow(const schema::Field& f) const { return version >= f.nullableSince; }

  void read(int8_t& v, const schema::Field& f) { r.readInt8(v, f.wire); }
  void read(int16_t& v, const schema::Field& f) { r.readInt16(v, f.wire); }
  void read(uint16_t& v, const schema::Field& f) { r.readUint16(v, f.wire); }
  void read(int32_t& v, const schema::Field& f) { r.readInt32(v, f.wire); }
  void read(int64_t& v, const schema::Field& f) { r.readInt64(v, f.wire); }
  void read(bool& v, const schema::Field& f) { r.readBool(v, f.wire); }
  void read(Uuid& v, const schema::Field& f) { r.readUuid(v.bytes, f.wire); }
  void read(std::string& v, const schema::Field& f) {
    if (flexible) {
      readCompact(v, f);
    } else if (!f.bytes) {
      r.readString(v, f.wire);
    } else if constexpr (kNulls == Nulls::AsEmpty) {
      r.readBytes(v, f.wire);
    } else {
      std::optional<std::string> b;
      if (!r.readNullableBytes(b, f.wire)) return;
      if (!b) {
        r.refuseNull(f.wire, false);
        return;
      }
      v = std::move(*b);
    }
  }
  void read(std::optional<std::string>& v, const schema::Field& f) {
    if (flexible) {
      readCompact(v, f);
    } else if (f.bytes) {
      if (r.readNullableBytes(v, f.wire) && !v && !nullableNow(f)) r.refuseNull(f.wire, false);
    } else if (nullableNow(f)) {
      r.readNullableString(v, f.wire);
    } else {
      std::string s;
      if (r.readString(s, f.wire)) v = std::move(s);
    }
  }
  template <typename E>
    requires std::is_enum_v<E>
  void read(E& e, const schema::Field& f) {
    if constexpr (schema::ClosedEnum<E>::value) {
      static_assert(sizeof(E) == 1, "a closed enum travels as an int8");
      int8_t v = 0;
      if (r.readEnum8(v, schema::ClosedEnum<E>::kMax, f.wire)) e = static_cast<E>(v);
    } else {
      std::underlying_type_t<E> v{};
      if (read(v, f), r.ok()) e = static_cast<E>(v);
    }
  }
  template <typename E>
  void read(std::vector<E>& items, const schema::Field& f) {
    std::optional<size_t> count;
    if (!readCount<E>(count, f)) return;
    if (!count) {
      if constexpr (kNulls == Nulls::Refused) {
        r.refuseNull(f.wire, true, nullLengthBytes());
        return;
      }
    }
    readElements(items, count.value_or(0));
  }
  template <typename E>
  void read(std::optional<std::vector<E>>& items, const schema::Field& f) {
    std::optional<size_t> count;
    if (!readCount<E>(count, f)) return;
    if (!count) {
      if (!nullableNow(f)) {
        r.refuseNull(f.wire, true, nullLengthBytes());
      } else {
        items.reset();
      }
      return;
    }
    readElements(items.emplace(), *count);
  }
  template <typename S>
    requires schema::Described<S>
  void read(S& s, const schema::Field&) {
    readStruct(s);
  }
  // A nullable structure (Kafka's int8 presence byte); null is allowed only
  // from the field's nullableSince on.
  template <typename S>
    requires schema::Described<S>
  void read(std::optional<S>& s, const schema::Field& f) {
    bool present = false;
    if (!r.readPresence(present, f.wire)) return;
    if (!present) {
      if (!nullableNow(f)) r.refuseNull(f.wire, false, 1);
      s.reset();
      return;
    }
    readStruct(s.emplace());
  }

 private:
  // Compact string or bytes; null only where the field is nullable now.
  void readCompact(std::optional<std::string>& v, const schema::Field& f) {
    std::optional<std::string_view> text;
    if (!f.bytes && !nullableNow(f)) {
      std::string_view s;
      if (r.readCompactStringView(s, f.wire)) v.emplace(s);
      return;
    }
    if (!(f.bytes ? r.readCompactNullableBytesView(text, f.wire) : r.readCompactNullableStringView(text, f.wire))) {
      return;
    }
    if (!text && !nullableNow(f)) {
      r.refuseNull(f.wire, false, 1);
      return;
    }
    if (text) {
      v.emplace(*text);
    } else {
      v.reset();
    }
  }
  void readCompact(std::string& v, const schema::Field& f) {
    if (!f.bytes) {
      std::string_view s;
      if (r.readCompactStringView(s, f.wire)) v.assign(s);
      return;
    }
    std::optional<std::string_view> text;
    if (!r.readCompactNullableBytesView(text, f.wire)) return;
    if (!text) {
      r.refuseNull(f.wire, false, 1);
      return;
    }
    v.assign(*text);
  }

  // The count is checked against the bytes that remain, each element taking
  // at least its smallest encoding, before anything is reserved. Versions
  // past the newest carry what every version has, as version 0 does.
  template <typename E>
  bool readCount(std::optional<size_t>& count, const schema::Field& f) {
    const size_t smallest = schema::smallest<E>(version <= newest ? version : 0, flexible);
    if (flexible) return r.readCompactNullableCount(count, smallest, f.wire);
    return r.readNullableCount(count, smallest, f.wire);
  }
  size_t nullLengthBytes() const { return flexible ? 1 : 4; }
  template <typename E>
  void readElements(std::vector<E>& items, size_t count) {
    items.clear();
    items.reserve(count);
    for (size_t i = 0; i < count && r.ok(); ++i) {
      E& item = items.emplace_back();
      if constexpr (schema::Described<E>) {
        readStruct(item);
      } else {
        read(item, schema::field("Name", ""));  // an array of names or numbers
      }
    }
  }
};

template <Nulls kNulls>
struct FieldWriter {
  wire::Writer& w;
  int16_t version;
  int16_t newest;
  bool flexible = false;

  // A structure's fields, then (flexible) its tagged fields: none.
  template <typename S>
  void writeStruct(const S& s) {
    S::fields(*this, s);
    if (flexible) w.writeNoTaggedFields();
  }

  template <typename T, typename... Options>
  void operator()(const T& value, const char* wire, const char* python, Options... options) {
    const schema::Field f = schema::field(wire, python, options...);
    if (f.carriedAt(version, newest)) write(value, f);
  }

  bool nullableNow(const schema::Field& f) const { return version >= f.nullableSince; }

  void write(int8_t v, const schema::Field&) { w.writeInt8(v); }
  void write(int16_t v, const schema::Field&) { w.writeInt16(v); }
  void write(uint16_t v, const schema::Field&) { w.writeUint16(v); }
  void write(int32_t v, const schema::Field&) { w.writeInt32(v); }
  void write(int64_t v, const schema::Field&) { w.writeInt64(v); }
  void write(bool v, const schema::Field&) { w.writeBool(v); }
  void write(const Uuid& v, const schema::Field&) { w.writeUuid(v.bytes); }
  void write(const std::string& v, const schema::Field& f) {
    if (flexible) {
      if (f.bytes) {
        w.writeCompactBytes(v);
      } else {
        w.writeCompactString(v);
      }
    } else if (f.bytes) {
      w.writeBytes(v);
    } else {
      w.writeString(v);
    }
  }
  // Null where the version cannot say null is written empty.
  void write(const std::optional<std::string>& v, const schema::Field& f) {
    if (v || !nullableNow(f)) {
      write(v ? *v : std::string(), f);
    } else if (flexible) {
      w.writeCompactNull();
    } else if (f.bytes) {
      w.writeInt32(-1);
    } else {
      w.writeInt16(-1);
    }
  }
  template <typename E>
    requires std::is_enum_v<E>
  void write(E e, const schema::Field& f) {
    write(static_cast<std::underlying_type_t<E>>(e), f);
  }
  template <typename E>
  void write(const std::vector<E>& items, const schema::Field&) {
    const size_t n = flexible ? w.writeCompactCount(items.size()) : w.writeCount(items.size());
    for (size_t i = 0; i < n; ++i) {
      if constexpr (schema::Described<E>) {
        writeStruct(items[i]);
      } else {
        write(items[i], schema::field("Name", ""));
      }
    }
  }
  template <typename E>
  void write(const std::optional<std::vector<E>>& items, const schema::Field& f) {
    if (items) {
      write(*items, f);
    } else if (flexible) {
      if (nullableNow(f)) {
        w.writeCompactNull();
      } else {
        w.writeCompactCount(0);
      }
    } else if (nullableNow(f)) {
      w.writeInt32(-1);
    } else {
      w.writeInt32(0);
    }
  }
  template <typename S>
    requires schema::Described<S>
  void write(const S& s, const schema::Field&) {
    writeStruct(s);
  }
  // Null where the version cannot say null is written as a default structure.
  template <typename S>
    requires schema::Described<S>
  void write(const std::optional<S>& s, const schema::Field& f) {
    if (!s && nullableNow(f)) {
      w.writeInt8(-1);
      return;
    }
    w.writeInt8(1);
    writeStruct(s ? *s : S{});
  }
};

}  // namespace groupcoord::protocol::fieldcodec
