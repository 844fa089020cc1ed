// Per-group permissions (common/Permissions.h): the file's rules, what they
// allow, and the authentication gate deciding each call by them, without
// sockets.

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "common/Permissions.h"
#include "protocol/Codec.h"
#include "server/Auth.h"
#include "server/AuthGate.h"

namespace groupcoord::server {
namespace {

using permissions::bit;
using permissions::Operation;
using permissions::Policy;
using protocol::ApiKey;
using protocol::ErrorCode;

std::shared_ptr<const Policy> policyOk(const std::string& text) {
  std::string error;
  auto p = Policy::parse(text, "permissions file 't'", &error);
  EXPECT_NE(p, nullptr) << error;
  return p;
}

std::string policyError(const std::string& text) {
  std::string error;
  auto p = Policy::parse(text, "permissions file 't'", &error);
  EXPECT_EQ(p, nullptr) << text;
  return error;
}

const std::string kTwoTeams =
    "# two teams on one fleet\n"
    "allow role:member join,commit,fetch,describe prefix:team-a. \n"
    "deny user:b-svc all prefix:team-a.\n"
    "allow user:b-svc join,commit,fetch,describe,create prefix:team-b.\n"
    "allow user:a-svc create prefix:team-a.\n"
    "\n"
    "allow role:admin all group:*\n"
    "deny * delete group:team-a.keep\n";

TEST(Permissions, LiteralPrefixAndEveryGroupMatchAsWritten) {
  auto p = policyOk(kTwoTeams);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->rules().size(), 6u);
  const auto member = Role::Member;
  // a-svc: the member rule for team-a. plus its own create.
  EXPECT_EQ(p->allowed("a-svc", member, "team-a.orders"),
            bit(Operation::Join) | bit(Operation::Commit) | bit(Operation::Fetch) | bit(Operation::Describe) |
                bit(Operation::Create));
  EXPECT_EQ(p->allowed("a-svc", member, "team-b.orders"), 0);
  // The prefix is a prefix of the name, not a pattern: "team-a" alone and
  // "team-ab.x" are not under "team-a.".
  EXPECT_EQ(p->allowed("a-svc", member, "team-a"), 0);
  EXPECT_EQ(p->allowed("a-svc", member, "team-ab.x"), 0);
  // Deny wins over allow: b-svc is a member, but denied everything on team-a.
  EXPECT_EQ(p->allowed("b-svc", member, "team-a.orders"), 0);
  EXPECT_TRUE(p->allows("b-svc", member, "team-b.x", Operation::Create));
  EXPECT_FALSE(p->allows("b-svc", member, "team-b.x", Operation::Delete));
  // Admins everything, except what a deny for everyone takes away.
  EXPECT_EQ(p->allowed("ops", Role::Admin, "team-b.x"), permissions::kAllOperations);
  EXPECT_FALSE(p->allows("ops", Role::Admin, "team-a.keep", Operation::Delete));
  EXPECT_TRUE(p->allows("ops", Role::Admin, "team-a.keep", Operation::Rewind));
  // Nothing allows anything to a user no rule names, on a group no rule covers.
  EXPECT_EQ(p->allowed("x", member, "other"), 0);
}

TEST(Permissions, AnEmptyFileAllowsNothing) {
  auto p = policyOk("# nothing yet\n\n");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->allowed("ops", Role::Admin, "g"), 0);
}

TEST(Permissions, EachBadLineIsNamedByItsNumberAndWhy) {
  struct Case {
    std::string line;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"allow user:a join", "4 fields"},
      {"permit user:a join group:g", "neither 'allow' nor 'deny'"},
      {"allow usr:a join group:g", "principal 'usr:a'"},
      {"allow user: join group:g", "user name ''"},
      {"allow user:a/b join group:g", "user name 'a/b'"},
      {"allow role:root join group:g", "role 'root'"},
      {"allow user:a read group:g", "operation 'read'"},
      {"allow user:a join, group:g", "ends with ','"},
      {"allow user:a join,,commit group:g", "operation ''"},
      {"allow user:a join topic:g", "resource 'topic:g'"},
      {"allow user:a join group:", "group name ''"},
      {"allow user:a join group:a/b", "group name 'a/b'"},
      {"allow user:a join prefix:", "prefix ''"},
      {"allow user:a join prefix:..", "prefix '..'"},
      {"allow user:a join group:" + std::string(2000, 'g'), "longer than 1024 bytes"},
  };
  for (auto& c : cases) {
    const std::string error = policyError("# header\nallow * describe group:*\n" + c.line + "\n");
    EXPECT_NE(error.find("permissions file 't' line 3: "), std::string::npos) << c.line << " -> " << error;
    EXPECT_NE(error.find(c.says), std::string::npos) << c.line << " -> " << error;
  }
}

TEST(Permissions, AMissingFileIsAnError) {
  std::string error;
  EXPECT_EQ(Policy::load("/nonexistent/permissions", &error), nullptr);
  EXPECT_NE(error.find("cannot be read"), std::string::npos) << error;
}

TEST(Permissions, EveryRuleFormatsToALineThatParsesBackToIt) {
  std::mt19937 rng(20261205);
  const std::vector<std::string> principals = {"*", "user:a-svc", "role:member", "role:admin"};
  const std::vector<std::string> resources = {"group:*", "group:team-a.orders", "prefix:team-"};
  for (int i = 0; i < 500; ++i) {
    const uint32_t ops = 1 + rng() % permissions::kAllOperations;
    std::string line = std::string(rng() % 2 ? "allow " : "deny ") + principals[rng() % principals.size()] + " " +
                       permissions::operationsText(static_cast<permissions::OperationSet>(ops)) + " " +
                       resources[rng() % resources.size()];
    permissions::Rule rule;
    ASSERT_EQ(permissions::parseRule(line, &rule), "") << line;
    EXPECT_EQ(permissions::formatRule(rule), line);
    permissions::Rule again;
    ASSERT_EQ(permissions::parseRule(permissions::formatRule(rule), &again), "");
    EXPECT_EQ(again, rule);
  }
}

TEST(Permissions, EveryCallOnAGroupHasItsOperation) {
  EXPECT_EQ(permissions::operationOf(ApiKey::RegisterConsumer), Operation::Join);
  EXPECT_EQ(permissions::operationOf(ApiKey::Heartbeat), Operation::Join);
  EXPECT_EQ(permissions::operationOf(ApiKey::LeaveGroup), Operation::Join);
  EXPECT_EQ(permissions::operationOf(ApiKey::CommitOffsets), Operation::Commit);
  EXPECT_EQ(permissions::operationOf(ApiKey::FetchOffsets), Operation::Fetch);
  EXPECT_EQ(permissions::operationOf(ApiKey::ListGroups), Operation::Describe);
  EXPECT_EQ(permissions::operationOf(ApiKey::DescribeGroup), Operation::Describe);
  EXPECT_EQ(permissions::operationOf(ApiKey::CreateGroup), Operation::Create);
  EXPECT_EQ(permissions::operationOf(ApiKey::DeleteGroup), Operation::Delete);
  EXPECT_EQ(permissions::operationOf(ApiKey::RewindConsumer), Operation::Rewind);
  EXPECT_FALSE(permissions::operationOf(ApiKey::Authenticate));
  EXPECT_FALSE(permissions::operationOf(ApiKey::DrainServer));
  EXPECT_FALSE(permissions::operationOf(ApiKey::DescribeServers));
}

// ---- The gate with permissions ----------------------------------------------

// Answers every call NONE; a ListGroups with the groups it names, or with
// three groups of two teams when it names none.
class ListingHandler : public protocol::Handler {
 public:
  void handle(const protocol::RequestHeader&, protocol::Request request, protocol::ResponseCallback done) override {
    {
      std::lock_guard lock(mutex_);
      ++calls_;
    }
    if (auto* list = std::get_if<protocol::ListGroupsRequest>(&request)) {
      protocol::ListGroupsResponse r;
      std::vector<std::string> names = list->groups;
      if (names.empty()) names = {"team-a.orders", "team-a.billing", "team-b.orders"};
      for (auto& n : names) {
        protocol::GroupInfo g;
        g.name = n;
        g.members = {"m1"};
        r.groups.push_back(g);
      }
      return done(r);
    }
    if (std::holds_alternative<protocol::DescribeServersRequest>(request)) {
      protocol::DescribeServersResponse r;
      for (const char* g : {"team-a.orders", "team-b.orders", "team-a.billing"}) r.moves.push_back({g, 10, 1, 2});
      return done(r);
    }
    done(protocol::errorResponse(request, ErrorCode::NONE));
  }
  int calls() {
    std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  std::mutex mutex_;
  int calls_ = 0;
};

class PermissionGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    auto line = [&](const std::string& user, Role role) {
      return makeCredentialLine(user, role, user + "-secret", kMinIterations, &error) + "\n";
    };
    auto store = CredentialStore::parse(line("a-svc", Role::Member) + line("b-svc", Role::Member) +
                                            line("ops", Role::Admin),
                                        "credentials file 't'", &error);
    ASSERT_NE(store, nullptr) << error;
    gate_ = std::make_unique<AuthGate>(std::move(store));
    gate_->setPermissions(policyOk(kTwoTeams));
  }

  protocol::Response call(const std::shared_ptr<AuthSession>& session, protocol::Request request) {
    std::promise<protocol::Response> p;
    auto f = p.get_future();
    protocol::RequestHeader h;
    h.apiKey = protocol::apiKeyOf(request);
    gate_->handle(session, protocol::Caller{"127.0.0.1", 5555, ""}, handler_, h, std::move(request),
                  [&p](protocol::Response r) { p.set_value(std::move(r)); });
    EXPECT_EQ(f.wait_for(std::chrono::seconds(60)), std::future_status::ready);  // a hang guard
    return f.get();
  }
  ErrorCode error(const std::shared_ptr<AuthSession>& session, protocol::Request request) {
    return protocol::responseError(call(session, std::move(request)));
  }
  std::shared_ptr<AuthSession> as(const std::string& user) {
    auto s = std::make_shared<AuthSession>();
    EXPECT_EQ(error(s, protocol::AuthenticateRequest{user, user + "-secret"}), ErrorCode::NONE);
    return s;
  }

  ListingHandler handler_;
  std::unique_ptr<AuthGate> gate_;
};

// The heartbeat's fast path asks admitsNow() on the I/O thread: it must
// admit exactly what handle() would forward, and leave to handle() what it
// refuses or has not decided yet (new rules, a first call).
TEST_F(PermissionGateTest, AHeartbeatIsAdmittedOnTheIoThreadExactlyWhenHandleWouldForwardIt) {
  auto fresh = std::make_shared<AuthSession>();
  EXPECT_FALSE(gate_->admitsNow(*fresh, ApiKey::Heartbeat, "team-a.orders")) << "not authenticated";
  auto a = as("a-svc");
  auto b = as("b-svc");
  auto ops = as("ops");
  for (const auto& s : {a, b, ops}) {
    for (const std::string group : {"team-a.orders", "team-b.orders", "other"}) {
      const int before = handler_.calls();
      error(s, protocol::HeartbeatRequest{group, "m", 1});
      const bool forwarded = handler_.calls() > before;
      // Asked after handle() has read the rules in force for the session.
      EXPECT_EQ(gate_->admitsNow(*s, ApiKey::Heartbeat, group), forwarded) << group;
    }
  }
  EXPECT_TRUE(gate_->admitsNow(*a, ApiKey::Heartbeat, "team-a.orders"));
  EXPECT_FALSE(gate_->admitsNow(*b, ApiKey::Heartbeat, "team-a.orders"));
  // Listings are filtered by admit(): never admitted on the I/O thread.
  EXPECT_FALSE(gate_->admitsNow(*ops, ApiKey::ListGroups, ""));
  // New rules: nothing is admitted on the I/O thread until handle() has
  // read them for the session; then they decide.
  gate_->setPermissions(policyOk("allow role:member join prefix:team-b.\n"));
  EXPECT_FALSE(gate_->admitsNow(*a, ApiKey::Heartbeat, "team-a.orders"));
  EXPECT_EQ(error(a, protocol::HeartbeatRequest{"team-a.orders", "m", 1}), ErrorCode::NOT_AUTHORIZED);
  EXPECT_FALSE(gate_->admitsNow(*a, ApiKey::Heartbeat, "team-a.orders"));
  EXPECT_TRUE(gate_->admitsNow(*a, ApiKey::Heartbeat, "team-b.orders"));
}

TEST_F(PermissionGateTest, EachCallIsDecidedByItsOperationOnItsGroup) {
  auto a = as("a-svc");
  auto b = as("b-svc");
  const int before = handler_.calls();
  // Tenant A on its own groups: what the rules grant, not delete or rewind.
  EXPECT_EQ(error(a, protocol::RegisterConsumerRequest{"team-a.orders", "", {}}), ErrorCode::NONE);
  EXPECT_EQ(error(a, protocol::HeartbeatRequest{"team-a.orders", "m", 1}), ErrorCode::NONE);
  EXPECT_EQ(error(a, protocol::CommitOffsetsRequest{"team-a.orders", "m", 1, {}}), ErrorCode::NONE);
  EXPECT_EQ(error(a, protocol::FetchOffsetsRequest{"team-a.orders", {}}), ErrorCode::NONE);
  EXPECT_EQ(error(a, protocol::CreateGroupRequest{"team-a.new", 10000, {}, false}), ErrorCode::NONE);
  EXPECT_EQ(error(a, protocol::DeleteGroupRequest{"team-a.orders"}), ErrorCode::NOT_AUTHORIZED);
  EXPECT_EQ(error(a, protocol::RewindConsumerRequest{"team-a.orders", {}}), ErrorCode::NOT_AUTHORIZED);
  // Tenant B on A's groups: nothing at all (denied although a member).
  EXPECT_EQ(error(b, protocol::RegisterConsumerRequest{"team-a.orders", "", {}}), ErrorCode::NOT_AUTHORIZED);
  EXPECT_EQ(error(b, protocol::HeartbeatRequest{"team-a.orders", "m", 1}), ErrorCode::NOT_AUTHORIZED);
  EXPECT_EQ(error(b, protocol::LeaveGroupRequest{"team-a.orders", "m"}), ErrorCode::NOT_AUTHORIZED);
  EXPECT_EQ(error(b, protocol::CommitOffsetsRequest{"team-a.orders", "m", 1, {}}), ErrorCode::NOT_AUTHORIZED);
  EXPECT_EQ(error(b, protocol::FetchOffsetsRequest{"team-a.orders", {}}), ErrorCode::NOT_AUTHORIZED);
  EXPECT_EQ(error(b, protocol::CreateGroupRequest{"team-a.x", 10000, {}, false}), ErrorCode::NOT_AUTHORIZED);
  EXPECT_EQ(error(b, protocol::DescribeGroupRequest{"team-a.orders"}), ErrorCode::NOT_AUTHORIZED);
  // ... and its own.
  EXPECT_EQ(error(b, protocol::RegisterConsumerRequest{"team-b.orders", "", {}}), ErrorCode::NONE);
  // Calls naming no group keep the role rule: DrainServer is for admins.
  EXPECT_EQ(error(a, protocol::DrainServerRequest{1, true}), ErrorCode::NOT_AUTHORIZED);
  EXPECT_EQ(error(a, protocol::DescribeServersRequest{}), ErrorCode::NONE);
  // Refused calls never reached the handler: 5 + 1 + 1 allowed above.
  EXPECT_EQ(handler_.calls() - before, 7);
}

TEST_F(PermissionGateTest, ListGroupsShowsOnlyWhatTheUserMayDescribe) {
  auto a = as("a-svc");
  auto b = as("b-svc");
  auto names = [&](const std::shared_ptr<AuthSession>& s, std::vector<std::string> asked) {
    auto r = std::get<protocol::ListGroupsResponse>(call(s, protocol::ListGroupsRequest{std::move(asked)}));
    std::vector<std::string> out;
    for (auto& g : r.groups) out.push_back(g.name + (g.error == ErrorCode::NONE ? "" : " refused") +
                                           (g.members.empty() ? "" : " +members"));
    return out;
  };
  EXPECT_EQ(names(a, {}), (std::vector<std::string>{"team-a.orders +members", "team-a.billing +members"}));
  EXPECT_EQ(names(b, {}), (std::vector<std::string>{"team-b.orders +members"}));
  // Asked for by name: refused, and nothing about it shown.
  EXPECT_EQ(names(b, {"team-a.orders", "team-b.orders"}),
            (std::vector<std::string>{"team-a.orders refused", "team-b.orders +members"}));
}

TEST_F(PermissionGateTest, DescribeServersNamesOnlyTheGroupsTheUserMayDescribe) {
  auto moves = [&](const std::string& user) {
    auto r = std::get<protocol::DescribeServersResponse>(call(as(user), protocol::DescribeServersRequest{}));
    std::vector<std::string> out;
    for (auto& m : r.moves) out.push_back(m.group);
    return out;
  };
  EXPECT_EQ(moves("a-svc"), (std::vector<std::string>{"team-a.orders", "team-a.billing"}));
  EXPECT_EQ(moves("b-svc"), (std::vector<std::string>{"team-b.orders"}));
  EXPECT_EQ(moves("ops").size(), 3u);
}

TEST_F(PermissionGateTest, NewRulesApplyToConnectionsAlreadyOpenAtTheirNextCall) {
  auto b = as("b-svc");
  EXPECT_EQ(error(b, protocol::HeartbeatRequest{"team-a.orders", "m", 1}), ErrorCode::NOT_AUTHORIZED);
  EXPECT_EQ(error(b, protocol::HeartbeatRequest{"team-b.orders", "m", 1}), ErrorCode::NONE);
  // The remembered decisions go with the old rules.
  gate_->setPermissions(policyOk("allow user:b-svc join prefix:team-a.\n"));
  EXPECT_EQ(error(b, protocol::HeartbeatRequest{"team-a.orders", "m", 1}), ErrorCode::NONE);
  EXPECT_EQ(error(b, protocol::HeartbeatRequest{"team-b.orders", "m", 1}), ErrorCode::NOT_AUTHORIZED);
  // Without rules the roles alone decide again.
  gate_->setPermissions(nullptr);
  EXPECT_EQ(error(b, protocol::HeartbeatRequest{"team-b.orders", "m", 1}), ErrorCode::NONE);
  EXPECT_EQ(error(b, protocol::DeleteGroupRequest{"team-b.orders"}), ErrorCode::NOT_AUTHORIZED);
}

TEST_F(PermissionGateTest, AConnectionThatAuthenticatesAgainIsDecidedForItsNewUser) {
  auto s = as("a-svc");
  EXPECT_EQ(error(s, protocol::HeartbeatRequest{"team-a.orders", "m", 1}), ErrorCode::NONE);
  EXPECT_EQ(error(s, protocol::AuthenticateRequest{"b-svc", "b-svc-secret"}), ErrorCode::NONE);
  EXPECT_EQ(error(s, protocol::HeartbeatRequest{"team-a.orders", "m", 1}), ErrorCode::NOT_AUTHORIZED);
}

TEST_F(PermissionGateTest, ManyGroupsOnOneConnectionAreStillDecidedRight) {
  // More groups than a connection remembers: it forgets and decides again.
  auto a = as("a-svc");
  for (size_t i = 0; i < AuthGate::kMaxDecisions * 2 + 10; ++i) {
    const bool own = i % 2 == 0;
    const std::string group = std::string(own ? "team-a." : "team-c.") + std::to_string(i);
    ASSERT_EQ(error(a, protocol::HeartbeatRequest{group, "m", 1}), own ? ErrorCode::NONE : ErrorCode::NOT_AUTHORIZED)
        << group;
  }
}

}  // namespace
}  // namespace groupcoord::server
