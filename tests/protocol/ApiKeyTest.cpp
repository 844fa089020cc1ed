// Every message names its API in `kApi`, and dispatch goes by that, never by
// the position of a type in the Request or Response variant: a request and
// its response agree on the ApiKey, and apiKeyOf() agrees with the header of
// every sample and with the answer errorResponse() shapes for it.

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <type_traits>
#include <variant>

#include "Samples.h"
#include "protocol/Codec.h"

namespace groupcoord::protocol::testing {
namespace {

template <typename Req, typename Resp>
constexpr bool kSameApi = Req::kApi == Resp::kApi;

static_assert(kSameApi<HeartbeatRequest, HeartbeatResponse>);
static_assert(kSameApi<CreateGroupRequest, CreateGroupResponse>);
static_assert(kSameApi<DeleteGroupRequest, DeleteGroupResponse>);
static_assert(kSameApi<RegisterConsumerRequest, RegisterConsumerResponse>);
static_assert(kSameApi<ListGroupsRequest, ListGroupsResponse>);
static_assert(kSameApi<LeaveGroupRequest, LeaveGroupResponse>);
static_assert(kSameApi<CommitOffsetsRequest, CommitOffsetsResponse>);
static_assert(kSameApi<FetchOffsetsRequest, FetchOffsetsResponse>);
static_assert(kSameApi<RewindConsumerRequest, RewindConsumerResponse>);
static_assert(kSameApi<AuthenticateRequest, AuthenticateResponse>);
static_assert(kSameApi<DrainServerRequest, DrainServerResponse>);
static_assert(kSameApi<DescribeGroupRequest, DescribeGroupResponse>);
static_assert(kSameApi<DescribeServersRequest, DescribeServersResponse>);
static_assert(!ApiMessage<ErrorOnlyResponse>);

template <size_t... I>
void checkEveryRequestAlternative(std::index_sequence<I...>) {
  std::set<ApiKey> seen;
  (
      [&] {
        using Req = std::variant_alternative_t<I, Request>;
        const Request request{Req{}};
        EXPECT_EQ(apiKeyOf(request), Req::kApi) << "alternative " << I;
        // The answer shaped for it is of the same API.
        const Response answer = errorResponse(request, ErrorCode::UNKNOWN_SERVER_ERROR);
        EXPECT_EQ(apiKeyOf(answer), std::optional<ApiKey>(Req::kApi)) << "alternative " << I;
        EXPECT_TRUE(seen.insert(Req::kApi).second) << "two request types for ApiKey "
                                                   << static_cast<int>(Req::kApi);
      }(),
      ...);
  EXPECT_EQ(seen.size(), static_cast<size_t>(kApiCount));
}

template <size_t... I>
void checkEveryResponseAlternative(std::index_sequence<I...>) {
  std::set<ApiKey> seen;
  int errorOnly = 0;
  (
      [&] {
        using Resp = std::variant_alternative_t<I, Response>;
        const Response response{Resp{}};
        if constexpr (ApiMessage<Resp>) {
          EXPECT_EQ(apiKeyOf(response), std::optional<ApiKey>(Resp::kApi)) << "alternative " << I;
          EXPECT_TRUE(seen.insert(Resp::kApi).second) << "two response types for ApiKey "
                                                      << static_cast<int>(Resp::kApi);
        } else {
          EXPECT_EQ(apiKeyOf(response), std::nullopt) << "alternative " << I;
          ++errorOnly;
        }
      }(),
      ...);
  EXPECT_EQ(seen.size(), static_cast<size_t>(kApiCount));
  EXPECT_EQ(errorOnly, 1);
}

TEST(ApiKeys, EveryRequestTypeAndItsAnswerAgree) {
  checkEveryRequestAlternative(std::make_index_sequence<std::variant_size_v<Request>>());
}

TEST(ApiKeys, EveryResponseTypeHasOneApiButErrorOnly) {
  checkEveryResponseAlternative(std::make_index_sequence<std::variant_size_v<Response>>());
}

TEST(ApiKeys, EveryRequestSampleAgreesWithItsHeaderAndItsAnswer) {
  for (const auto& s : requestSamples()) {
    const ApiKey api = apiKeyOf(s.request);
    EXPECT_EQ(api, s.header.apiKey) << s.name;
    EXPECT_EQ(std::visit([](const auto& m) { return std::decay_t<decltype(m)>::kApi; }, s.request), api) << s.name;
    EXPECT_EQ(apiKeyOf(errorResponse(s.request, ErrorCode::NOT_AUTHORIZED)), std::optional<ApiKey>(api)) << s.name;
    // The encoder writes the request's own ApiKey first after Size.
    std::vector<uint8_t> frame;
    encodeRequest(s.header, s.request, frame);
    ASSERT_GE(frame.size(), 6u) << s.name;
    EXPECT_EQ(static_cast<int16_t>((frame[4] << 8) | frame[5]), static_cast<int16_t>(api)) << s.name;
  }
}

TEST(ApiKeys, EveryResponseSampleAgreesWithItsApi) {
  for (const auto& s : responseSamples()) {
    if (std::holds_alternative<ErrorOnlyResponse>(s.response)) {
      EXPECT_EQ(apiKeyOf(s.response), std::nullopt) << s.name;
    } else {
      EXPECT_EQ(apiKeyOf(s.response), std::optional<ApiKey>(s.api)) << s.name;
    }
  }
}

}  // namespace
}  // namespace groupcoord::protocol::testing
