#include "protocol/MessageDocs.h"

#include <algorithm>
#include <sstream>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include "protocol/Messages.h"
#include "protocol/kafka/Messages.h"

namespace groupcoord::protocol::docs {

namespace {

// The structures that are not a request or a response, as Messages.h
// declares them.
using SharedStructs = std::tuple<Broker, TopicPartition, PartitionOffset, PartitionError, MemberMetadata, GroupInfo,
                                 TopicState, MemberState, RebalanceEvent, ServerPlacement, GroupMove>;

template <typename T>
std::string typeForPeople(bool asBytes) {
  if constexpr (std::is_same_v<T, std::string>) {
    return asBytes ? "bytes" : "string";
  } else if constexpr (schema::IsVector<T>::value) {
    return "[" + typeForPeople<typename schema::IsVector<T>::Element>(false) + "]";
  } else if constexpr (std::is_same_v<T, bool>) {
    return "bool";
  } else if constexpr (std::is_same_v<T, uint16_t>) {
    return "uint16";
  } else if constexpr (std::is_enum_v<T> || std::is_integral_v<T>) {
    return "int" + std::to_string(8 * sizeof(T));
  } else {
    return std::string(T::kName);
  }
}

// The Python codec's type (python/groupcoord/protocol.py, "Field types"),
// written as a Python expression.
template <typename T>
std::string typeForPython(bool asBytes) {
  if constexpr (std::is_same_v<T, std::string>) {
    return asBytes ? "\"bytes\"" : "\"str\"";
  } else if constexpr (schema::IsVector<T>::value) {
    return "(\"array\", " + typeForPython<typename schema::IsVector<T>::Element>(false) + ")";
  } else if constexpr (std::is_same_v<T, bool>) {
    return "\"bool\"";
  } else if constexpr (std::is_same_v<T, ErrorCode>) {
    return "\"error\"";  // any value kept, the known ones as ErrorCode
  } else if constexpr (std::is_same_v<T, AssignmentMode>) {
    return "\"enum8:" + std::to_string(static_cast<int>(AssignmentMode::CLIENT)) + "\"";
  } else if constexpr (std::is_same_v<T, uint16_t>) {
    return "\"u16\"";
  } else if constexpr (std::is_enum_v<T> || std::is_integral_v<T>) {
    return "\"i" + std::to_string(8 * sizeof(T)) + "\"";
  } else {
    return "\"" + std::string(T::kName) + "\"";
  }
}

struct Describer {
  std::vector<FieldDoc>& out;
  template <typename V, typename... Options>
  void operator()(const V&, const char* wire, const char* python, Options... options) {
    const schema::Field f = schema::field(wire, python, options...);
    FieldDoc d;
    d.wire = f.wire;
    d.python = f.python;
    d.type = typeForPeople<V>(f.bytes);
    d.pythonType = typeForPython<V>(f.bytes);
    d.since = f.since;
    d.until = f.until == schema::kEveryVersion ? -1 : f.until;
    d.note = f.note;
    out.push_back(std::move(d));
  }
};

template <typename T>
StructDoc describe(int16_t newest, bool api) {
  StructDoc doc;
  doc.name = std::string(T::kName);
  doc.api = api;
  Describer d{doc.fields};
  T sample{};
  T::fields(d, sample);
  for (int16_t v = 0; v <= newest; ++v) doc.smallest.push_back(schema::smallest<T>(v));
  return doc;
}

int16_t newestOfAll() {
  int16_t n = 0;
  for (int k = 0; k < kApiCount; ++k) n = std::max(n, maxVersion(static_cast<ApiKey>(k)));
  return n;
}

template <typename Variant, size_t... I>
void describeApis(ApiKey key, std::vector<StructDoc>& out, std::index_sequence<I...>) {
  (
      [&] {
        using T = std::variant_alternative_t<I, Variant>;
        if constexpr (ApiMessage<T>) {
          if (T::kApi == key) out.push_back(describe<T>(maxVersion(key), true));
        }
      }(),
      ...);
}

const StructDoc* find(const std::vector<StructDoc>& all, std::string_view name) {
  for (const auto& s : all) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string cell(const std::string& text) { return text.empty() ? "" : " " + text; }

void fieldTable(std::ostringstream& out, const char* heading, const StructDoc& s) {
  out << "| " << heading << " | type | versions | |\n|---|---|---|---|\n";
  if (s.fields.empty()) out << "| (no field) | | | |\n";
  for (const auto& f : s.fields) {
    out << "| " << f.wire << " | " << f.type << " | " << versionsText(f.since, f.until) << " |" << cell(f.note)
        << " |\n";
  }
}

// "37", or "37; 38 from version 1".
std::string smallestText(const StructDoc& s) {
  std::string text = std::to_string(s.smallest.at(0));
  for (size_t v = 1; v < s.smallest.size(); ++v) {
    if (s.smallest[v] != s.smallest[v - 1]) {
      text += "; " + std::to_string(s.smallest[v]) + " from version " + std::to_string(v);
    }
  }
  return text;
}

std::string structuresTable(const std::vector<StructDoc>& all) {
  std::ostringstream out;
  out << "| structure | fields, in order | smallest encoding |\n|---|---|---|\n";
  for (const auto& s : all) {
    if (s.api) continue;
    out << "| " << s.name << " | ";
    for (size_t i = 0; i < s.fields.size(); ++i) {
      const auto& f = s.fields[i];
      out << (i ? ", " : "") << f.wire << ' ' << f.type;
      if (f.since != 0 || f.until != -1) out << " (" << versionsText(f.since, f.until) << ")";
    }
    out << " | " << smallestText(s) << " |\n";
  }
  return out.str();
}

// ---- The Kafka port's messages (protocol/kafka/Messages.h) ---------------------

// For people, as Kafka's message definitions name the types; nullability
// is shown here since Kafka's fields, unlike groupcoord's, may be null.
template <typename T>
std::string kafkaType(const schema::Field& f) {
  if constexpr (schema::IsOptional<T>::value) {
    const std::string from = f.nullableSince > 0 ? " (" + versionsText(f.nullableSince, -1) + ")" : "";
    return "nullable" + from + " " + kafkaType<typename schema::IsOptional<T>::Value>(f);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return f.bytes ? "bytes" : "string";
  } else if constexpr (schema::IsVector<T>::value) {
    return "[" + kafkaType<typename schema::IsVector<T>::Element>(schema::Field{}) + "]";
  } else if constexpr (std::is_same_v<T, bool>) {
    return "bool";
  } else if constexpr (std::is_same_v<T, Uuid>) {
    return "uuid";
  } else if constexpr (std::is_enum_v<T> || std::is_integral_v<T>) {
    return "int" + std::to_string(8 * sizeof(T));
  } else {
    return std::string(T::kName);
  }
}

// One row per field of a Kafka structure.
struct KafkaRows {
  std::ostringstream& out;
  int count = 0;
  template <typename V, typename... Options>
  void operator()(const V&, const char* wire, const char* python, Options... options) {
    const schema::Field f = schema::field(wire, python, options...);
    out << "| " << f.wire << " | " << kafkaType<V>(f) << " | "
        << versionsText(f.since, f.until == schema::kEveryVersion ? -1 : f.until) << " |" << cell(f.note) << " |\n";
    ++count;
  }
};

// A Kafka structure's table, and the structures it nests, each once, in the
// order they first appear.
struct KafkaTables {
  std::ostringstream& out;
  std::vector<std::string> done;

  template <typename T>
  void nested() {
    if constexpr (schema::IsOptional<T>::value) {
      nested<typename schema::IsOptional<T>::Value>();
    } else if constexpr (schema::IsVector<T>::value) {
      nested<typename schema::IsVector<T>::Element>();
    } else if constexpr (schema::Described<T>) {
      table<T>(std::string(T::kName));
    }
  }

  template <typename T>
  void table(const std::string& heading) {
    if (std::find(done.begin(), done.end(), heading) != done.end()) return;
    done.push_back(heading);
    std::ostringstream rowsOut;
    KafkaRows rows{rowsOut};
    T sample{};
    T::fields(rows, sample);
    out << '\n' << "| " << heading << " | type | versions | |\n|---|---|---|---|\n";
    if (rows.count == 0) out << "| (no field) | | | |\n";
    out << rowsOut.str();
    T::fields(*this, sample);
  }

  // Visits each field for the structures it nests.
  template <typename V, typename... Options>
  void operator()(const V&, const char*, const char*, Options...) {
    nested<V>();
  }
};

template <typename Q, typename A>
std::string kafkaBlock() {
  std::ostringstream out;
  const int16_t flexible = kafka::firstFlexibleVersion<Q>();
  out << "ApiKey " << static_cast<int>(Q::kApiKey) << ", versions coded "
      << versionsText(Q::kMinVersion, Q::kMaxVersion) << "; ";
  if (flexible <= Q::kMaxVersion) {
    out << "flexible from version " << flexible << " (request header 2, response header 1)";
  } else {
    out << "none flexible (request header 1, response header 0)";
  }
  out << "; served.\n";
  KafkaTables tables{out, {}};
  tables.table<Q>("request");
  tables.table<A>("response");
  return out.str();
}

// The block of the Kafka API named `api` ("Heartbeat"), or "".
std::string kafkaApiBlock(std::string_view api) {
  std::string found;
  auto scan = [&]<typename Q, typename A>() {
    if (found.empty() && Q::kName == std::string(api) + "Request") found = kafkaBlock<Q, A>();
  };
  [&]<size_t... I>(std::index_sequence<I...>) {
    (scan.template operator()<std::variant_alternative_t<I, kafka::Request>,
                              std::variant_alternative_t<I, kafka::Response>>(),
     ...);
  }(std::make_index_sequence<std::variant_size_v<kafka::Request>>{});
  return found;
}

// Every Kafka API served, by ApiKey.
std::vector<std::pair<int, std::string>> kafkaApis() {
  std::vector<std::pair<int, std::string>> out;
  auto add = [&](int key, std::string_view requestName) {
    out.emplace_back(key, std::string(requestName.substr(0, requestName.size() - std::string_view("Request").size())));
  };
  auto addAll = [&]<typename Requests, size_t... I>(std::index_sequence<I...>) {
    (add(static_cast<int>(std::variant_alternative_t<I, Requests>::kApiKey),
         std::variant_alternative_t<I, Requests>::kName),
     ...);
  };
  addAll.template operator()<kafka::Request>(std::make_index_sequence<std::variant_size_v<kafka::Request>>{});
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::string kafkaBlockName(std::string_view api) { return std::string(kKafkaBlockPrefix) + std::string(api); }

std::vector<StructDoc> describeAll() {
  std::vector<StructDoc> all;
  const int16_t newest = newestOfAll();
  std::apply([&](auto... s) { (all.push_back(describe<decltype(s)>(newest, false)), ...); }, SharedStructs{});
  for (int k = 0; k < kApiCount; ++k) {
    const auto key = static_cast<ApiKey>(k);
    describeApis<Request>(key, all, std::make_index_sequence<std::variant_size_v<Request>>());
    describeApis<Response>(key, all, std::make_index_sequence<std::variant_size_v<Response>>());
  }
  all.push_back(describe<ErrorOnlyResponse>(0, true));
  return all;
}

std::string versionsText(int since, int until) {
  if (until < 0) return std::to_string(since) + "+";
  if (until == since) return std::to_string(since);
  return std::to_string(since) + "-" + std::to_string(until);
}

std::string pythonLayouts() {
  const auto all = describeAll();
  std::ostringstream out;
  out << "\"\"\"The wire layout of every groupcoord message, by version (docs/protocol.md).\n\n"
         "Printed from the messages' descriptions in protocol/Messages.h by\n"
         "groupcoord-messages: do not edit; change the description and run\n"
         "scripts/dev.sh generate. Each field is (attribute, type, first version,\n"
         "last version or None); the types are those of protocol.py's codec.\n"
         "\"\"\"\n\n";
  out << "# The newest version of each call, by ApiKey.\nMAX_VERSIONS = {\n";
  for (int k = 0; k < kApiCount; ++k) {
    const auto key = static_cast<ApiKey>(k);
    out << "    " << k << ": " << maxVersion(key) << ",  # " << apiName(key) << '\n';
  }
  out << "}\n\nLAYOUTS = {\n";
  for (const auto& s : all) {
    out << "    \"" << s.name << "\": [";
    if (!s.fields.empty()) out << '\n';
    for (const auto& f : s.fields) {
      out << "        (\"" << f.python << "\", " << f.pythonType << ", " << f.since << ", "
          << (f.until < 0 ? std::string("None") : std::to_string(f.until)) << "),\n";
    }
    out << (s.fields.empty() ? "" : "    ") << "],\n";
  }
  out << "}\n";
  return out.str();
}

std::string fieldsBlock(std::string_view name) {
  if (name.starts_with(kKafkaBlockPrefix)) return kafkaApiBlock(name.substr(kKafkaBlockPrefix.size()));
  const auto all = describeAll();
  std::ostringstream out;
  if (name == kStructuresBlock) return structuresTable(all);
  for (int k = 0; k < kApiCount; ++k) {
    const auto key = static_cast<ApiKey>(k);
    if (apiName(key) != name) continue;
    const std::string api(name);
    fieldTable(out, "request", *find(all, api + "Request"));
    out << '\n';
    fieldTable(out, "response", *find(all, api + "Response"));
    return out.str();
  }
  const StructDoc* s = find(all, name);
  if (!s || s->api) return "";
  fieldTable(out, "field", *s);
  return out.str();
}

std::string beginMarker(std::string_view name) {
  const char* from = name.starts_with(kKafkaBlockPrefix) ? "protocol/kafka/Messages.h" : "protocol/Messages.h";
  return "<!-- fields of " + std::string(name) + ": printed from " + from + " by scripts/dev.sh generate -->";
}

std::string endMarker(std::string_view name) { return "<!-- end of the fields of " + std::string(name) + " -->"; }

std::vector<std::string> requiredBlocks() {
  std::vector<std::string> names{std::string(kStructuresBlock)};
  for (int k = 0; k < kApiCount; ++k) names.emplace_back(apiName(static_cast<ApiKey>(k)));
  for (const auto& [key, api] : kafkaApis()) names.push_back(kafkaBlockName(api));
  return names;
}

std::string withFieldBlocks(const std::string& protocolMd, std::string* error) {
  auto fail = [error](std::string why) {
    if (error) *error = std::move(why);
    return std::string();
  };
  // Every block in the text, in order: the required ones, and any
  // structure's own table.
  std::vector<std::string> names;
  const std::string prefix = "<!-- fields of ";
  for (size_t at = protocolMd.find(prefix); at != std::string::npos; at = protocolMd.find(prefix, at + 1)) {
    const size_t stop = protocolMd.find(':', at);
    if (stop == std::string::npos) return fail("docs/protocol.md has a block marker without its name and colon");
    const std::string name = protocolMd.substr(at + prefix.size(), stop - at - prefix.size());
    if (fieldsBlock(name).empty()) {
      return fail("docs/protocol.md has a block of fields for '" + name + "', which no message describes");
    }
    names.push_back(name);
  }
  for (const auto& name : requiredBlocks()) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return fail("docs/protocol.md has no block of fields for '" + name + "': it needs the lines '" +
                  beginMarker(name) + "' and '" + endMarker(name) + "'");
    }
  }
  std::string text = protocolMd;
  for (const auto& name : names) {
    const std::string begin = beginMarker(name) + "\n";
    const std::string end = endMarker(name) + "\n";
    const size_t b = text.find(begin);
    const size_t e = text.find(end);
    if (b == std::string::npos || e == std::string::npos || e < b + begin.size() ||
        text.find(begin, b + 1) != std::string::npos || text.find(end, e + 1) != std::string::npos) {
      return fail("docs/protocol.md needs exactly one pair of lines '" + beginMarker(name) + "' and '" +
                  endMarker(name) + "', in that order");
    }
    text.replace(b + begin.size(), e - (b + begin.size()), fieldsBlock(name));
  }
  return text;
}

}  // namespace groupcoord::protocol::docs
