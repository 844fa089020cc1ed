// Status: the protocol's error name plus a sentence for people.

#include <gtest/gtest.h>

#include "client/Status.h"

namespace groupcoord::client {
namespace {

using protocol::ErrorCode;

TEST(Status, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.name(), "NONE");
  EXPECT_EQ(s.toString(), "NONE");
}

TEST(Status, CarriesNameAndMessage) {
  auto s = Status::error(ErrorCode::NOT_CONTROLLER,
                         "server at 127.0.0.1:7401 is not the controller of group orders");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.name(), "NOT_CONTROLLER");
  EXPECT_EQ(s.toString(), "NOT_CONTROLLER: server at 127.0.0.1:7401 is not the controller of group orders");
}

TEST(Status, ResultIsOkOnlyWithOkStatus) {
  Result<int> r{Status::error(ErrorCode::UNKNOWN_GROUP, "group orders"), 0};
  EXPECT_FALSE(r.ok());
  r.status = Status::success();
  EXPECT_TRUE(r.ok());
}

}  // namespace
}  // namespace groupcoord::client
