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
  void read(std::string& v, const schema::Field& f) {
    if (!f.bytes) {
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
    if (f.bytes) {
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
        r.refuseNull(f.wire, true);
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
        r.refuseNull(f.wire, true);
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
    S::fields(*this, s);
  }

 private:
  // The count is checked against the bytes that remain, each element taking
  // at least its smallest encoding, before anything is reserved. Versions
  // past the newest carry what every version has, as version 0 does.
  template <typename E>
  bool readCount(std::optional<size_t>& count, const schema::Field& f) {
    const size_t smallest = schema::smallest<E>(version <= newest ? version : 0);
    return r.readNullableCount(count, smallest, f.wire);
  }
  template <typename E>
  void readElements(std::vector<E>& items, size_t count) {
    items.clear();
    items.reserve(count);
    for (size_t i = 0; i < count && r.ok(); ++i) {
      E& item = items.emplace_back();
      if constexpr (schema::Described<E>) {
        E::fields(*this, item);
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
  void write(const std::string& v, const schema::Field& f) {
    if (f.bytes) {
      w.writeBytes(v);
    } else {
      w.writeString(v);
    }
  }
  // Null where the version cannot say null is written empty.
  void write(const std::optional<std::string>& v, const schema::Field& f) {
    if (v || !nullableNow(f)) {
      write(v ? *v : std::string(), f);
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
    wire::writeArray(w, items, [this](wire::Writer&, const E& item) {
      if constexpr (schema::Described<E>) {
        E::fields(*this, item);
      } else {
        write(item, schema::field("Name", ""));
      }
    });
  }
  template <typename E>
  void write(const std::optional<std::vector<E>>& items, const schema::Field& f) {
    if (items) {
      write(*items, f);
    } else if (nullableNow(f)) {
      w.writeInt32(-1);
    } else {
      w.writeInt32(0);
    }
  }
  template <typename S>
    requires schema::Described<S>
  void write(const S& s, const schema::Field&) {
    S::fields(*this, s);
  }
};

}  // namespace groupcoord::protocol::fieldcodec
