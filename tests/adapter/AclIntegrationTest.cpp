// ZooKeeper digest ACLs: what a groupcoordd started with zk.digest.user and
// zk.digest.password leaves in ZooKeeper, seen by clients that are not it.
//
// The intent (zk/Session.h): every znode the server creates, from its root
// down, carries "creator: all, anyone: read". So a plain ZooKeeper client
// can read the whole layout (groupctl-style tools, monitoring) but cannot
// create, change, delete or re-ACL anything, and neither can a groupcoordd
// that authenticates with the wrong password.
//
// The outside clients here use the ZooKeeper C client directly, not
// zk::Session: an independent view of what the server did.

#include <gtest/gtest.h>
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "WireMember.h"
#include "common/Layout.h"
#include "support/ServerProcess.h"
#include "support/TestEnv.h"
#include "support/Timing.h"

namespace groupcoord::testing {
namespace {

using namespace std::chrono_literals;
using protocol::ErrorCode;

constexpr const char* kUser = "gc-acl";
constexpr const char* kPassword = "s3cret-acl";
constexpr int64_t kZkSessionTimeoutMs = 4000;  // the servers'

// A blocking C-client handle, optionally authenticated with digest user:password.
class PlainClient {
 public:
  explicit PlainClient(const std::string& connect, const std::string& digest = "") {
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    zh_ = zookeeper_init(connect.c_str(), &PlainClient::watcher, kSessionTimeoutMs, nullptr, this, 0);
    if (!zh_) return;
    // A live ensemble grants a session, and answers a request, within the
    // session timeout.
    const auto wait = designBound(std::chrono::milliseconds(kSessionTimeoutMs));
    {
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, wait, [this] { return connected_; });
    }
    if (!digest.empty()) {
      authRc_ = ZSYSTEMERROR;
      zoo_add_auth(zh_, "digest", digest.data(), static_cast<int>(digest.size()), &PlainClient::authDone, this);
      std::unique_lock lock(mu_);
      cv_.wait_for(lock, wait, [this] { return authAnswered_; });
    }
  }
  ~PlainClient() {
    if (zh_) zookeeper_close(zh_);
  }
  PlainClient(const PlainClient&) = delete;
  PlainClient& operator=(const PlainClient&) = delete;

  bool connected() {
    std::lock_guard lock(mu_);
    return zh_ && connected_;
  }
  int authRc() {
    std::lock_guard lock(mu_);
    return authAnswered_ ? authRc_ : ZOPERATIONTIMEOUT;
  }
  zhandle_t* zh() { return zh_; }

  int get(const std::string& path, std::string* data = nullptr) {
    char buf[4096];
    int len = sizeof(buf);
    Stat stat;
    int rc = zoo_get(zh_, path.c_str(), 0, buf, &len, &stat);
    if (rc == ZOK && data) data->assign(buf, len > 0 ? static_cast<size_t>(len) : 0);
    return rc;
  }
  int children(const std::string& path, std::vector<std::string>* out) {
    String_vector v{0, nullptr};
    int rc = zoo_get_children(zh_, path.c_str(), 0, &v);
    if (rc == ZOK) {
      for (int i = 0; i < v.count; ++i) out->push_back(v.data[i]);
      deallocate_String_vector(&v);
    }
    return rc;
  }
  int create(const std::string& path, int flags = 0) {
    return zoo_create(zh_, path.c_str(), "x", 1, &ZOO_OPEN_ACL_UNSAFE, flags, nullptr, 0);
  }
  int set(const std::string& path) { return zoo_set(zh_, path.c_str(), "999", 3, -1); }
  int remove(const std::string& path) { return zoo_delete(zh_, path.c_str(), -1); }
  int setOpenAcl(const std::string& path) { return zoo_set_acl(zh_, path.c_str(), -1, &ZOO_OPEN_ACL_UNSAFE); }
  // "scheme:id=perms" entries, sorted by how ZooKeeper returns them.
  int acl(const std::string& path, std::vector<std::string>* out) {
    ACL_vector v{0, nullptr};
    Stat stat;
    int rc = zoo_get_acl(zh_, path.c_str(), &v, &stat);
    if (rc == ZOK) {
      for (int i = 0; i < v.count; ++i) {
        out->push_back(std::string(v.data[i].id.scheme) + ":" + v.data[i].id.id + "=" +
                       std::to_string(v.data[i].perms));
      }
      deallocate_ACL_vector(&v);
    }
    return rc;
  }

 private:
  static constexpr int kSessionTimeoutMs = 10000;

  static void watcher(zhandle_t*, int type, int state, const char*, void* ctx) {
    auto* self = static_cast<PlainClient*>(ctx);
    if (type != ZOO_SESSION_EVENT) return;
    std::lock_guard lock(self->mu_);
    self->connected_ = state == ZOO_CONNECTED_STATE;
    self->cv_.notify_all();
  }
  static void authDone(int rc, const void* ctx) {
    auto* self = static_cast<PlainClient*>(const_cast<void*>(ctx));
    std::lock_guard lock(self->mu_);
    self->authRc_ = rc;
    self->authAnswered_ = true;
    self->cv_.notify_all();
  }

  zhandle_t* zh_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  bool connected_ = false;
  bool authAnswered_ = false;
  int authRc_ = ZOK;
};

std::string rcName(int rc) { return std::string(zerror(rc)) + " (" + std::to_string(rc) + ")"; }

// Every znode below (and including) path, parents first.
void walk(PlainClient& c, const std::string& path, std::vector<std::string>* out) {
  out->push_back(path);
  std::vector<std::string> kids;
  ASSERT_EQ(c.children(path, &kids), ZOK) << path;
  for (auto& k : kids) walk(c, path + "/" + k, out);
}

class AclTest : public ::testing::Test {
 protected:
  void SetUp() override {
    requireEnsemble();
    root_ = "/" + uniqueName("acl");
    topicsPath_ = root_ + "-topics";
    plain_ = std::make_unique<PlainClient>(zkConnect());
    ASSERT_TRUE(plain_->connected()) << "no plain ZooKeeper session with " << zkConnect();
    // Topic metadata is not the server's: the test writes it, open.
    ASSERT_EQ(plain_->create(topicsPath_), ZOK);
    const std::string topic = layout::encodeTopic(4);
    ASSERT_EQ(zoo_create(plain_->zh(), (topicsPath_ + "/events").c_str(), topic.data(), static_cast<int>(topic.size()),
                         &ZOO_OPEN_ACL_UNSAFE, 0, nullptr, 0),
              ZOK);
  }

  std::unique_ptr<ServerProcess> startServer(int id, const std::string& password) {
    auto s = std::make_unique<ServerProcess>(std::vector<std::string>{
        "--server-id=" + std::to_string(id), "--zk-root=" + root_, "--zk-topics-path=" + topicsPath_,
        "--zk-session-timeout-ms=" + std::to_string(kZkSessionTimeoutMs), "--http-port=-1",
        std::string("--zk-digest-user=") + kUser,
        "--zk-digest-password=" + password});
    return s;
  }

  std::string root_;
  std::string topicsPath_;
  std::unique_ptr<PlainClient> plain_;
};

TEST_F(AclTest, PlainAndWrongPasswordClientsReadButCannotWrite) {
  auto server = startServer(1, kPassword);
  ASSERT_TRUE(server->start());
  const uint16_t port = server->port();
  const std::string group = "acl-group";

  // A group with a topic; the first member holds every partition and
  // commits them, then a second member joins and takes its share.
  ASSERT_EQ(createGroup(port, group, 10000, false, {"events"}).error, ErrorCode::NONE);
  WireMember a(group, {port}, "acl-a");
  WireMember b(group, {port}, "acl-b");
  const protocol::RegisterConsumerResponse reg = a.join();
  ASSERT_EQ(reg.error, ErrorCode::NONE);
  ASSERT_EQ(reg.partitions.size(), 4u) << "the only member was not given every partition";
  std::vector<protocol::PartitionOffset> offsets;
  for (auto& p : reg.partitions) offsets.push_back({p.topic, p.partition, 1000 + p.partition});
  {
    client::Connection c;
    ASSERT_TRUE(c.connect("127.0.0.1", port, 3s));
    auto r = c.call(protocol::CommitOffsetsRequest{group, a.id(), reg.generation, offsets}, requestCallTimeout());
    ASSERT_TRUE(r.ok) << c.lastError();
    auto* commit = std::get_if<protocol::CommitOffsetsResponse>(&r.response);
    ASSERT_NE(commit, nullptr);
    ASSERT_EQ(commit->error, ErrorCode::NONE);
    for (auto& pe : commit->results) EXPECT_EQ(pe.error, ErrorCode::NONE) << pe.topic << "-" << pe.partition;
  }
  ASSERT_EQ(b.join().error, ErrorCode::NONE);
  ASSERT_TRUE(a.settle());
  ASSERT_TRUE(b.settle());
  const protocol::GroupInfo before = describeGroup(port, group);
  ASSERT_EQ(before.error, ErrorCode::NONE);
  ASSERT_EQ(before.members.size(), 2u);

  layout::Layout layout(root_);
  const std::string groupPath = layout.groupPath(group);
  const std::string memberPath = layout.memberPath(group, a.id());
  const std::string offsetPath =
      layout.offsetsPath(group) + "/" + offsets[0].topic + "/" + std::to_string(offsets[0].partition);

  // ---- Reading: everything, by anyone ----------------------------------------
  std::vector<std::string> tree;
  walk(*plain_, root_, &tree);
  ASSERT_FALSE(HasFailure());
  for (const auto& p : {root_, layout.serversPath(), layout.serverPath(1), layout.groupsPath(), groupPath,
                        layout.controllerPath(group), layout.membersPath(group), memberPath, layout.offsetsPath(group),
                        offsetPath}) {
    EXPECT_NE(std::find(tree.begin(), tree.end(), p), tree.end()) << p << " is not in the tree";
  }
  std::string data;
  ASSERT_EQ(plain_->get(offsetPath, &data), ZOK);
  EXPECT_EQ(data, std::to_string(offsets[0].offset));
  ASSERT_EQ(plain_->get(groupPath, &data), ZOK);
  EXPECT_NE(data.find("events"), std::string::npos) << data;

  // ---- The ACL on every znode the server made ------------------------------------
  const std::string digestPrefix = std::string("digest:") + kUser + ":";
  for (const auto& p : tree) {
    std::vector<std::string> acl;
    ASSERT_EQ(plain_->acl(p, &acl), ZOK) << p;
    ASSERT_EQ(acl.size(), 2u) << p;
    int creatorAll = 0, worldRead = 0;
    for (auto& e : acl) {
      if (e.rfind(digestPrefix, 0) == 0 && e.size() > 3 && e.substr(e.size() - 3) == "=31") ++creatorAll;
      if (e == "world:anyone=1") ++worldRead;
    }
    EXPECT_EQ(creatorAll, 1) << p << ": " << acl[0] << " " << acl[1];
    EXPECT_EQ(worldRead, 1) << p << ": " << acl[0] << " " << acl[1];
  }
  std::printf("[figure] %zu znodes under %s, each ACL creator-all (digest %s) + world-read\n", tree.size(),
              root_.c_str(), kUser);

  // ---- Writing: nothing, by a plain client or one with the wrong password ---------
  PlainClient wrong(zkConnect(), std::string(kUser) + ":not-the-password");
  ASSERT_TRUE(wrong.connected());
  ASSERT_EQ(wrong.authRc(), ZOK) << "digest authentication never fails by itself; the id just differs";

  for (PlainClient* c : {plain_.get(), &wrong}) {
    SCOPED_TRACE(c == plain_.get() ? "plain client" : "wrong password");
    for (const auto& p : tree) {
      SCOPED_TRACE(p);
      EXPECT_EQ(c->create(p + "/intruder"), ZNOAUTH) << rcName(c->create(p + "/intruder"));
      EXPECT_EQ(c->create(p + "/intruder", ZOO_EPHEMERAL), ZNOAUTH);
      EXPECT_EQ(c->set(p), ZNOAUTH);
      EXPECT_EQ(c->setOpenAcl(p), ZNOAUTH);
      if (p != root_) {
        EXPECT_EQ(c->remove(p), ZNOAUTH) << rcName(c->remove(p));
      }
    }
    // The root's parent is not groupcoord's: deleting the root is refused
    // only because it is not empty, and it never becomes empty to them.
    EXPECT_EQ(c->remove(root_), ZNOTEMPTY);
    // A transaction is refused as a whole.
    zoo_op_t ops[2];
    zoo_op_result_t results[2];
    zoo_set_op_init(&ops[0], offsetPath.c_str(), "0", 1, -1, nullptr);
    zoo_delete_op_init(&ops[1], memberPath.c_str(), -1);
    EXPECT_EQ(zoo_multi(c->zh(), 2, ops, results), ZNOAUTH);
  }

  // Nothing changed: the offset, the members, the generation.
  ASSERT_EQ(plain_->get(offsetPath, &data), ZOK);
  EXPECT_EQ(data, std::to_string(offsets[0].offset));
  EXPECT_EQ(plain_->get(memberPath), ZOK);
  protocol::GroupInfo info = describeGroup(port, group);
  ASSERT_EQ(info.error, ErrorCode::NONE);
  EXPECT_EQ(info.members, before.members);
  EXPECT_EQ(info.generation, before.generation);
  EXPECT_EQ(a.heartbeat().error, ErrorCode::NONE);
  EXPECT_EQ(b.heartbeat().error, ErrorCode::NONE);
}

// A second groupcoordd with the right user but the wrong password shares the
// root, but cannot register, claim or write anything there.
TEST_F(AclTest, ServerWithTheWrongPasswordCannotTouchTheFirstServersZnodes) {
  auto first = startServer(1, kPassword);
  ASSERT_TRUE(first->start());
  const uint16_t port = first->port();
  const std::string group = "acl-group-2";
  ASSERT_EQ(createGroup(port, group, 10000, false, {"events"}).error, ErrorCode::NONE);
  WireMember a(group, {port}, "acl-a");
  ASSERT_EQ(a.join().error, ErrorCode::NONE);
  ASSERT_TRUE(a.settle());
  const protocol::GroupInfo before = describeGroup(port, group);
  ASSERT_EQ(before.error, ErrorCode::NONE);

  auto second = startServer(2, "wrong-password");
  const bool started = second->start();
  // Give it time to try registering, claiming and creating: what must not
  // happen below.
  std::this_thread::sleep_for(3s);

  layout::Layout layout(root_);
  std::vector<std::string> servers;
  ASSERT_EQ(plain_->children(layout.serversPath(), &servers), ZOK);
  EXPECT_EQ(servers, std::vector<std::string>{"1"}) << "the wrong-password server registered";
  std::string controller;
  ASSERT_EQ(plain_->get(layout.controllerPath(group), &controller), ZOK);
  EXPECT_EQ(controller, "1");

  if (started) {
    // It listens (it could still answer reads) but cannot write for the group.
    auto created = createGroup(second->port(), "acl-other", 10000, false, {});
    EXPECT_NE(created.error, ErrorCode::NONE) << "the wrong-password server created a group";
    std::printf("[figure] wrong-password server: CreateGroup answered %s\n",
                std::string(protocol::errorName(created.error)).c_str());
    std::vector<std::string> groups;
    ASSERT_EQ(plain_->children(layout.groupsPath(), &groups), ZOK);
    EXPECT_EQ(groups, std::vector<std::string>{group});
  }
  // Its first write (its registration, once it has a session) is refused
  // within its ZooKeeper session timeout, and logged.
  eventuallyWithin(designBound(std::chrono::milliseconds(kZkSessionTimeoutMs)),
                   [&] { return second->log().find("NOAUTH") != std::string::npos; });
  const std::string log = second->log();
  EXPECT_NE(log.find("NOAUTH"), std::string::npos) << "the wrong-password server did not log NOAUTH:\n" << log;
  std::printf("[figure] wrong-password server started=%d, listening=%d\n", started ? 1 : 0,
              second->running() ? 1 : 0);

  const protocol::GroupInfo after = describeGroup(port, group);
  ASSERT_EQ(after.error, ErrorCode::NONE);
  EXPECT_EQ(after.generation, before.generation);
  EXPECT_EQ(after.members, before.members);
  EXPECT_EQ(after.controller.brokerId, 1);
  EXPECT_EQ(a.heartbeat().error, ErrorCode::NONE);
}

}  // namespace
}  // namespace groupcoord::testing
