#pragma once

// A small blocking writer of Kafka topic metadata into ZooKeeper, for
// `groupctl topic create` and `groupctl topic grow`: one short session straight on the ZooKeeper C
// client (zookeeper_mt), without zk::Session and without a logging library.
// The C client's own error lines (ZOO_ERROR) go to standard error; its other
// log lines are dropped.
// One thread at a time per TopicWriter.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/Layout.h"

namespace groupcoord::topics {

// A return code of the ZooKeeper C client: ZOK (0), ZNONODE, ...
struct ZkCode {
  int value = 0;
  bool ok() const { return value == 0; }
  bool nodeExists() const;
  bool noNode() const;
  bool badVersion() const;
  // "ZNODEEXISTS"; "ZERROR(n)" for a code this build does not know.
  std::string name() const;
};

class TopicWriter {
 public:
  // `connect` is "host1:port1,host2:port2[/chroot]".
  explicit TopicWriter(std::string connect,
                       std::chrono::milliseconds sessionTimeout = std::chrono::milliseconds(10000));
  // Closes the session, if one was opened.
  ~TopicWriter();
  TopicWriter(const TopicWriter&) = delete;
  TopicWriter& operator=(const TopicWriter&) = delete;

  // Opens the session and starts connecting; returns at once. ZBADARGUMENTS
  // when the C client refuses the connect string, ZSYSTEMERROR when it could
  // not start otherwise.
  ZkCode start();
  // Waits at most `wait` for the session to connect: ZOK when connected;
  // ZSESSIONEXPIRED or ZAUTHFAILED when the session ended so;
  // ZOPERATIONTIMEOUT when the wait passed (ZINVALIDSTATE before start()).
  ZkCode waitConnected(std::chrono::milliseconds wait);
  // Creates each missing znode of the absolute `path`, from the top, empty
  // and persistent. ZOK when the whole path exists afterwards (also when
  // someone else made part of it), else the first failure.
  ZkCode ensurePath(const std::string& path);
  // Creates the persistent znode `path` holding Kafka's metadata of a topic
  // with `partitions` partitions and the topic id `id` (layout::encodeTopic,
  // as Kafka 2.8 and later write a topic). ZNODEEXISTS when
  // `path` exists already; ZNONODE when its parent does not.
  ZkCode createTopic(const std::string& path, int32_t partitions, const layout::TopicId& id);
  // Reads the znode `path` (`groupctl topic grow`): its data into *data and
  // its data version into *version. ZNONODE when it does not exist.
  ZkCode read(const std::string& path, std::string* data, int32_t* version);
  // Sets the znode `path` to `data` if its data version is still `version`
  // (read's): ZBADVERSION when someone changed it since, ZNONODE when it was
  // deleted; nothing is written then.
  ZkCode setIfVersion(const std::string& path, const std::string& data, int32_t version);
  // Creates the persistent znode `path` holding `data` (`groupctl config`):
  // ZNODEEXISTS when it exists already, ZNONODE when its parent does not.
  ZkCode create(const std::string& path, const std::string& data);
  // Deletes the znode `path` if its data version is still `version`:
  // ZBADVERSION when someone changed it since, ZNONODE when it is gone.
  ZkCode removeIfVersion(const std::string& path, int32_t version);

 private:
  struct Session;
  std::string connect_;
  std::chrono::milliseconds sessionTimeout_;
  std::unique_ptr<Session> session_;
};

}  // namespace groupcoord::topics
