#pragma once

// How a message of the groupcoord wire protocol describes its own layout
// (docs/design.md, "One description per message").
//
// Every struct in protocol/Messages.h that travels on the wire lists its
// fields once, in wire order, in a static member template:
//
//   template <typename V, typename Self>
//   static constexpr void fields(V& v, Self& m) {
//     v(m.group, "ConsumerGroup", "group");
//     v(m.metadata, "Metadata", "metadata", schema::since(1), schema::bytes);
//   }
//
// Each call names the member, its name on the wire (and in the docs and in
// the decoder's failure text), the Python codec's attribute, and options:
// the first and last version that carry it, whether a std::string travels as
// `bytes` (int32 length) rather than `string`, the first version in which a
// std::optional member may be null, and a note for the docs. The wire type
// follows from the member's C++ type (protocol/FieldCodec.h).
//
// From that one list come the C++ encoder and decoder, the smallest encoding
// of each structure, the Python codec's table (python/groupcoord/_layouts.py)
// and the field tables of docs/protocol.md (both written by
// `groupcoord-messages --write`, checked by a test).

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace groupcoord::protocol {

// A 16-byte UUID as Kafka's flexible messages carry it (a topic id): the
// bytes in wire order, most significant first.
struct Uuid {
  std::array<uint8_t, 16> bytes{};
  bool operator==(const Uuid&) const = default;
};

namespace schema {

inline constexpr int16_t kEveryVersion = std::numeric_limits<int16_t>::max();

struct Field {
  const char* wire = "";
  const char* python = "";
  int16_t since = 0;              // the first version that carries it
  int16_t until = kEveryVersion;  // the last
  bool bytes = false;             // a std::string sent as bytes (int32 length)
  int16_t nullableSince = 0;      // a std::optional member: the first version in which it may be null
  const char* note = "";          // for the docs: units, what an empty value means

  // Whether a message of `version`, of an API whose newest version is
  // `newest`, carries the field. A version this codec does not speak
  // carries only what every version has (an error-only answer read back,
  // whose header may say any version).
  constexpr bool carriedAt(int16_t version, int16_t newest) const {
    if (version < 0 || version > newest) return since == 0 && until == kEveryVersion;
    return version >= since && version <= until;
  }
};

struct Since {
  int16_t version;
};
struct Until {
  int16_t version;
};
struct Note {
  const char* text;
};
struct NullableSince {
  int16_t version;
};
struct AsBytes {};

constexpr Since since(int16_t version) { return {version}; }
constexpr Until until(int16_t version) { return {version}; }
constexpr Note note(const char* text) { return {text}; }
// A std::optional string or array that is null only from `version` on;
// before it, null is malformed on reading and written as empty.
constexpr NullableSince nullableSince(int16_t version) { return {version}; }
inline constexpr AsBytes bytes{};

constexpr void apply(Field& f, Since s) { f.since = s.version; }
constexpr void apply(Field& f, Until u) { f.until = u.version; }
constexpr void apply(Field& f, Note n) { f.note = n.text; }
constexpr void apply(Field& f, NullableSince n) { f.nullableSince = n.version; }
constexpr void apply(Field& f, AsBytes) { f.bytes = true; }

template <typename... Options>
constexpr Field field(const char* wire, const char* python, Options... options) {
  Field f{wire, python};
  (apply(f, options), ...);
  return f;
}

// A structure that describes its fields.
template <typename T>
concept Described = requires { T::kName; };

template <typename T>
struct IsVector : std::false_type {};
template <typename E>
struct IsVector<std::vector<E>> : std::true_type {
  using Element = E;
};

template <typename T>
struct IsOptional : std::false_type {};
template <typename E>
struct IsOptional<std::optional<E>> : std::true_type {
  using Value = E;
};

// An int8 enum whose values above kMax are malformed rather than kept
// (specialised next to the enum, e.g. AssignmentMode in protocol/Messages.h).
// Every other enum keeps any value: a newer peer may send one this build
// does not name.
template <typename E>
struct ClosedEnum : std::false_type {};

// Bytes of the smallest encoding of a value of type T: what the decoder
// multiplies an array's count by before it trusts the count
// (docs/protocol.md, §8).
template <typename T>
size_t smallestValue(bool asBytes, int16_t version, int16_t newest, bool flexible = false);

// Sums the smallest encodings of the fields a version carries.
struct SmallestSum {
  size_t total = 0;
  int16_t version = 0;
  int16_t newest = 0;
  bool flexible = false;
  template <typename V, typename... Options>
  void operator()(const V&, const char* wire, const char* python, Options... options) {
    const Field f = field(wire, python, options...);
    if (f.carriedAt(version, newest)) total += smallestValue<V>(f.bytes, version, newest, flexible);
  }
};

template <typename T>
size_t smallestOf(int16_t version, int16_t newest, bool flexible = false) {
  SmallestSum sum{0, version, newest, flexible};
  T sample{};
  T::fields(sum, sample);
  return sum.total;
}

// `flexible`: a flexible version of a Kafka message (docs/protocol.md, "The
// Kafka port"), where lengths and counts are unsigned varints (one byte at
// the least) and every structure ends with its tagged fields (a count, one
// byte at the least).
template <typename T>
size_t smallestValue(bool asBytes, int16_t version, int16_t newest, bool flexible) {
  if constexpr (std::is_same_v<T, std::string>) {
    return flexible ? 1 : asBytes ? 4 : 2;
  } else if constexpr (IsOptional<T>::value) {
    if constexpr (Described<typename IsOptional<T>::Value>) {
      return 1;  // a nullable structure: its presence byte, -1 for null
    } else {
      // Null is a length or count of -1 (flexible: 0): as small as the
      // value's own prefix.
      return smallestValue<typename IsOptional<T>::Value>(asBytes, version, newest, flexible);
    }
  } else if constexpr (IsVector<T>::value) {
    return flexible ? 1 : 4;
  } else if constexpr (std::is_same_v<T, Uuid>) {
    return 16;
  } else if constexpr (std::is_same_v<T, bool>) {
    return 1;
  } else if constexpr (std::is_enum_v<T> || std::is_integral_v<T>) {
    return sizeof(T);
  } else {
    static_assert(Described<T>,
                  "a field is a number, a bool, a string, a UUID, a vector, an optional of those, or a described "
                  "structure");
    return smallestOf<T>(version, newest, flexible) + (flexible ? 1 : 0);
  }
}

// The smallest encoding of T at `version` (0 .. kVersions-1; any other
// version: version 0's). Worked out from the description once per type, on
// first use (not at compile time: not every compiler this builds with can
// construct a std::string in a constant expression). 13: Kafka's Metadata
// is coded up to version 12 (protocol/kafka/Messages.h).
inline constexpr int16_t kVersions = 13;

template <typename T>
size_t smallest(int16_t version, bool flexible = false) {
  static const std::array<std::array<uint32_t, kVersions>, 2> table = [] {
    std::array<std::array<uint32_t, kVersions>, 2> out{};
    for (int16_t v = 0; v < kVersions; ++v) {
      out[0][static_cast<size_t>(v)] = static_cast<uint32_t>(smallestValue<T>(false, v, v, false));
      out[1][static_cast<size_t>(v)] = static_cast<uint32_t>(smallestValue<T>(false, v, v, true));
    }
    return out;
  }();
  return table[flexible ? 1 : 0][version >= 0 && version < kVersions ? static_cast<size_t>(version) : 0];
}

}  // namespace schema
}  // namespace groupcoord::protocol
