#include "protocol/kafka/Codec.h"

#include <algorithm>
#include <string_view>
#include <utility>
#include <variant>

#include "protocol/FieldCodec.h"
#include "protocol/Wire.h"

namespace groupcoord::protocol::kafka {

namespace {

using wire::Reader;
using wire::Writer;

// A count or `bytes` length of -1 is malformed unless the field is nullable
// at that version, as in Kafka's own decoder (protocol/FieldCodec.h).
using FieldReader = fieldcodec::FieldReader<fieldcodec::Nulls::Refused>;
using FieldWriter = fieldcodec::FieldWriter<fieldcodec::Nulls::Refused>;

template <typename T>
bool flexibleAt(int16_t version) {
  return version >= firstFlexibleVersion<T>();
}

template <typename T>
void readBody(Reader& r, T& m, int16_t version) {
  FieldReader reader{r, version, T::kMaxVersion, flexibleAt<T>(version)};
  reader.readStruct(m);
}

template <typename T>
void writeBody(Writer& w, const T& m, int16_t version) {
  FieldWriter writer{w, version, T::kMaxVersion, flexibleAt<T>(version)};
  writer.writeStruct(m);
}

// Calls f(std::integral_constant<size_t, I>) for the alternative of Variant
// whose kApiKey is `key`; false when none is.
template <typename Variant, typename F, size_t I = 0>
bool withAlternative(int16_t key, F&& f) {
  if constexpr (I == std::variant_size_v<Variant>) {
    return false;
  } else {
    if (static_cast<int16_t>(std::variant_alternative_t<I, Variant>::kApiKey) == key) {
      f(std::integral_constant<size_t, I>{});
      return true;
    }
    return withAlternative<Variant, F, I + 1>(key, std::forward<F>(f));
  }
}

// Reads the alternative of `v` for `key` at `version`, strictly.
template <typename Variant>
bool decodeByKey(Reader& r, Variant& v, int16_t key, int16_t version) {
  bool ok = false;
  withAlternative<Variant>(key, [&](auto index) {
    auto& m = v.template emplace<decltype(index)::value>();
    readBody(r, m, version);
    ok = r.expectEnd();
  });
  return ok;
}

struct Range {
  int16_t min = 0;
  int16_t max = -1;
  int16_t flexibleSince = kNeverFlexible;
  bool contains(int16_t version) const { return version >= min && version <= max; }
  bool flexible(int16_t version) const { return version >= flexibleSince; }
};

template <typename Variant>
Range rangeIn(int16_t key) {
  Range range;
  withAlternative<Variant>(key, [&](auto index) {
    using T = std::variant_alternative_t<decltype(index)::value, Variant>;
    range = {T::kMinVersion, T::kMaxVersion, firstFlexibleVersion<T>()};
  });
  return range;
}

Range rangeOf(int16_t key) { return rangeIn<Request>(key); }

}  // namespace

std::string_view decodeStatusName(DecodeStatus s) {
  switch (s) {
    case DecodeStatus::Ok:
      return "Ok";
    case DecodeStatus::UnknownApi:
      return "UnknownApi";
    case DecodeStatus::UnsupportedVersion:
      return "UnsupportedVersion";
    case DecodeStatus::Malformed:
      return "Malformed";
  }
  return "Unknown";
}

bool isServedApi(int16_t key) {
  return withAlternative<Request>(key, [](auto) {});
}

int16_t minVersion(ApiKey api) { return rangeOf(static_cast<int16_t>(api)).min; }
int16_t maxVersion(ApiKey api) { return rangeOf(static_cast<int16_t>(api)).max; }

namespace {

// Response header version 1 for a flexible version, but never for
// ApiVersions: a client reads its answer before it knows what the broker
// speaks.
bool flexibleResponseHeader(int16_t key, int16_t version) {
  return key != static_cast<int16_t>(ApiKey::ApiVersions) && rangeOf(key).flexible(version);
}

}  // namespace

int16_t requestHeaderVersion(ApiKey api, int16_t version) {
  const Range range = rangeOf(static_cast<int16_t>(api));
  if (!range.contains(version)) return -1;
  return range.flexible(version) ? 2 : 1;
}

int16_t responseHeaderVersion(ApiKey api, int16_t version) {
  const auto key = static_cast<int16_t>(api);
  if (!rangeOf(key).contains(version)) return -1;
  return flexibleResponseHeader(key, version) ? 1 : 0;
}

// ---- Requests ------------------------------------------------------------------

DecodedRequest decodeRequest(std::span<const uint8_t> body) {
  DecodedRequest out;
  Reader r(body);
  RequestHeader& h = out.header;
  r.readInt16(h.apiKey, "ApiKey");
  r.readInt16(h.apiVersion, "ApiVersion");
  if (!r.readInt32(h.correlationId, "CorrelationId")) {
    out.detail = "request body of " + std::to_string(body.size()) + " bytes, shorter than a request header";
    return out;
  }
  // Read before the key is judged, so every answer can log who sent it.
  const bool clientIdRead = r.readNullableString(h.clientId, "ClientId");
  const Range range = rangeOf(h.apiKey);
  if (range.max < 0) {
    out.status = DecodeStatus::UnknownApi;
    out.detail = "ApiKey " + std::to_string(h.apiKey) + " is not served";
    return out;
  }
  if (!range.contains(h.apiVersion)) {
    out.status = DecodeStatus::UnsupportedVersion;
    out.detail = std::string(apiName(h.apiKey)) + " version " + std::to_string(h.apiVersion) +
                 " is not served (versions " + std::to_string(range.min) + " to " + std::to_string(range.max) + ")";
    return out;
  }
  // Request header version 2: its tagged fields follow the ClientId.
  if (!clientIdRead || (range.flexible(h.apiVersion) && !r.skipTaggedFields())) {
    out.detail = r.describeFailure();
    return out;
  }
  if (!decodeByKey(r, out.request, h.apiKey, h.apiVersion)) {
    out.detail = std::string(apiName(h.apiKey)) + " request version " + std::to_string(h.apiVersion) + ": " +
                 r.describeFailure();
    return out;
  }
  out.status = DecodeStatus::Ok;
  return out;
}

void encodeRequest(const RequestHeader& header, const Request& request, std::vector<uint8_t>& out) {
  Writer w(out);
  const size_t frame = w.beginFrame();
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        w.writeInt16(static_cast<int16_t>(T::kApiKey));
        w.writeInt16(header.apiVersion);
        w.writeInt32(header.correlationId);
        w.writeNullableString(header.clientId);
        if (flexibleAt<T>(header.apiVersion)) w.writeNoTaggedFields();
        writeBody(w, m, header.apiVersion);
      },
      request);
  w.endFrame(frame);
}

bool peekHeartbeat(std::span<const uint8_t> body, HeartbeatView& out) {
  Reader r(body);
  int16_t key = 0;
  std::optional<std::string_view> clientId;
  if (!r.readInt16(key, "ApiKey") || key != static_cast<int16_t>(ApiKey::Heartbeat)) return false;
  if (!r.readInt16(out.apiVersion, "ApiVersion") || out.apiVersion < HeartbeatRequest::kMinVersion ||
      out.apiVersion > HeartbeatRequest::kMaxVersion) {
    return false;
  }
  if (!r.readInt32(out.correlationId, "CorrelationId") || !r.readNullableStringView(clientId, "ClientId") ||
      !r.readStringView(out.groupId, "GroupId") || !r.readInt32(out.generationId, "GenerationId") ||
      !r.readStringView(out.memberId, "MemberId")) {
    return false;
  }
  out.groupInstanceId.reset();
  if (out.apiVersion >= 3 && !r.readNullableStringView(out.groupInstanceId, "GroupInstanceId")) return false;
  return r.remaining() == 0;
}

void appendHeartbeatResponse(int32_t correlationId, int16_t version, ErrorCode error, std::vector<uint8_t>& out) {
  // Size, CorrelationId, ThrottleTimeMs (version 1 on, always 0), ErrorCode.
  uint8_t bytes[14];
  size_t n = 0;
  auto put = [&](uint32_t v, int width) {
    for (int shift = 8 * (width - 1); shift >= 0; shift -= 8) bytes[n++] = static_cast<uint8_t>(v >> shift);
  };
  const bool throttle = version >= 1;
  put(throttle ? 10 : 6, 4);
  put(static_cast<uint32_t>(correlationId), 4);
  if (throttle) put(0, 4);
  put(static_cast<uint16_t>(error), 2);
  out.insert(out.end(), bytes, bytes + n);
}

// ---- Responses -----------------------------------------------------------------

void encodeResponse(int32_t correlationId, int16_t version, const Response& response, std::vector<uint8_t>& out) {
  Writer w(out);
  const size_t frame = w.beginFrame();
  w.writeInt32(correlationId);
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if (flexibleResponseHeader(static_cast<int16_t>(T::kApiKey), version)) w.writeNoTaggedFields();
        writeBody(w, m, version);
      },
      response);
  w.endFrame(frame);
}

DecodedResponse decodeResponse(ApiKey api, int16_t version, std::span<const uint8_t> body) {
  DecodedResponse out;
  Reader r(body);
  if (!r.readInt32(out.correlationId, "CorrelationId")) {
    out.detail = r.describeFailure();
    return out;
  }
  const auto key = static_cast<int16_t>(api);
  const Range range = rangeOf(key);
  if (!range.contains(version)) {
    out.detail = std::string(apiName(key)) + " response version " + std::to_string(version) + " is not served";
    return out;
  }
  if (flexibleResponseHeader(key, version) && !r.skipTaggedFields()) {
    out.detail = std::string(apiName(key)) + " response header: " + r.describeFailure();
    return out;
  }
  if (!decodeByKey(r, out.response, key, version)) {
    out.detail = std::string(apiName(key)) + " response version " + std::to_string(version) + ": " +
                 r.describeFailure();
    return out;
  }
  out.ok = true;
  return out;
}

ApiVersionsResponse apiVersionsResponse(ErrorCode error) {
  ApiVersionsResponse out;
  out.error = error;
  // Walks the Request variant, then sorts: clients do not need the order,
  // but a stable one keeps the bytes comparable.
  [&]<size_t... I>(std::index_sequence<I...>) {
    (out.apiKeys.push_back({static_cast<int16_t>(std::variant_alternative_t<I, Request>::kApiKey),
                            std::variant_alternative_t<I, Request>::kMinVersion,
                            std::variant_alternative_t<I, Request>::kMaxVersion}),
     ...);
  }(std::make_index_sequence<std::variant_size_v<Request>>{});
  std::sort(out.apiKeys.begin(), out.apiKeys.end(),
            [](const auto& a, const auto& b) { return a.apiKey < b.apiKey; });
  return out;
}

void encodeApiVersionsFallback(int32_t correlationId, std::vector<uint8_t>& out) {
  encodeResponse(correlationId, 0, apiVersionsResponse(ErrorCode::UNSUPPORTED_VERSION), out);
}

}  // namespace groupcoord::protocol::kafka
