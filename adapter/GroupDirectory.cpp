#include "adapter/GroupDirectory.h"

#include <algorithm>
#include <charconv>

#include "adapter/Fanout.h"
#include "adapter/ZkErrors.h"
#include "adapter/kafka/ClassicGroup.h"
#include "adapter/kafka/ConsumerGroup.h"
#include "protocol/Codec.h"

namespace groupcoord::adapter {

using protocol::ErrorCode;

void GroupDirectory::fetchOffsets(const protocol::FetchOffsetsRequest& r, protocol::ResponseCallback done) {
  if (!connected_) return done(protocol::FetchOffsetsResponse{{}, ErrorCode::CONTROLLER_NOT_AVAILABLE});
  offsets_.fetch(r, [done = std::move(done)](protocol::FetchOffsetsResponse resp) { done(std::move(resp)); });
}

void GroupDirectory::listGroups(const protocol::ListGroupsRequest& r, protocol::ResponseCallback done) {
  if (!connected_) return done(protocol::ListGroupsResponse{{}, ErrorCode::CONTROLLER_NOT_AVAILABLE});
  if (r.groups.size() > kMaxListedGroups) return done(protocol::ListGroupsResponse{{}, ErrorCode::INVALID_REQUEST});
  if (!r.groups.empty()) return describe(r.groups, std::move(done));
  zk_.getChildren(layout_.groupsPath(), [this, done = std::move(done)](zk::ChildrenResult c) mutable {
    if (c.error != zk::Error::Ok) return done(protocol::ListGroupsResponse{{}, fromZk(c.error)});
    std::vector<std::string> names;
    for (auto& n : c.children)
      if (protocol::isValidName(n)) names.push_back(n);
    std::sort(names.begin(), names.end());
    describe(std::move(names), std::move(done));
  });
}

// Reads each group's znode, members and controller into one answer.
void GroupDirectory::describe(std::vector<std::string> names, protocol::ResponseCallback done) {
  struct Listing {
    std::vector<protocol::GroupInfo> infos;
    ErrorCode error = ErrorCode::NONE;
  };
  auto reads = Fanout<Listing>::start(zk_, [done = std::move(done)](Listing l) {
    protocol::ListGroupsResponse resp;
    resp.error = l.error;
    if (resp.error == ErrorCode::NONE) resp.groups = std::move(l.infos);
    done(std::move(resp));
  });
  auto noteError = [](Listing& l, zk::Error e) {
    if (zk::isConnectionProblem(e)) l.error = ErrorCode::CONTROLLER_NOT_AVAILABLE;
  };
  // The infos are sized before any read is issued; each read fills its own.
  std::vector<size_t> toRead;
  reads->update([&](Listing& l) {
    l.infos.resize(names.size());
    for (size_t i = 0; i < names.size(); ++i) {
      l.infos[i].name = names[i];
      if (protocol::isValidName(names[i])) {
        toRead.push_back(i);
      } else {
        l.infos[i].error = ErrorCode::INVALID_GROUP_NAME;
      }
    }
  });
  for (size_t i : toRead) {
    const std::string& name = names[i];
    zk_.get(layout_.groupPath(name), reads->collect<zk::GetResult>([this, reads, name, i, noteError](
                                                                    Listing& l, zk::GetResult g) {
      auto& info = l.infos[i];
      if (g.error == zk::Error::NoNode) {
        info.error = ErrorCode::UNKNOWN_GROUP;
      } else if (g.error != zk::Error::Ok) {
        noteError(l, g.error);
      } else if (auto s = layout::decodeSettings(g.data)) {
        info.topics = s->topics;
        info.sessionTimeoutMs = s->sessionTimeoutMs;
        info.ephemeral = s->ephemeral;
        info.mode = s->mode;
        info.kafka = s->kafka;
        info.generation = g.stat.version;
        // A Kafka group's protocol: its saved generation's (the last
        // stable one), when there is one.
        if (s->kafka) {
          zk_.get(layout_.kafkaGroupPath(name),
                  reads->collect<zk::GetResult>([i, noteError](Listing& k, zk::GetResult saved) {
                    if (saved.error == zk::Error::Ok) {
                      if (auto snapshot = kafka::decodeSnapshot(saved.data)) {
                        k.infos[i].protocolType = snapshot->protocolType;
                        k.infos[i].protocolName = snapshot->protocolName;
                      } else if (auto consumer = kafka::decodeConsumerSnapshot(saved.data);
                                 consumer && !consumer->members.empty()) {
                        k.infos[i].protocolType = "consumer";
                        k.infos[i].protocolName = std::string(kafka::kConsumerProtocolName);
                      }
                    } else if (saved.error != zk::Error::NoNode) {
                      noteError(k, saved.error);
                    }
                  }));
        }
      } else {
        info.error = ErrorCode::UNKNOWN_SERVER_ERROR;
      }
    }));
    zk_.getChildren(layout_.membersPath(name),
                    reads->collect<zk::ChildrenResult>([i, noteError](Listing& l, zk::ChildrenResult c) {
                      if (c.error == zk::Error::Ok) {
                        std::sort(c.children.begin(), c.children.end());
                        l.infos[i].members = std::move(c.children);
                      } else if (c.error != zk::Error::NoNode) {
                        noteError(l, c.error);
                      }
                    }));
    zk_.get(layout_.controllerPath(name),
            reads->collect<zk::GetResult>([this, i, noteError](Listing& l, zk::GetResult g) {
              if (g.error == zk::Error::Ok) {
                int32_t id = -1;
                auto [end, ec] = std::from_chars(g.data.data(), g.data.data() + g.data.size(), id);
                if (ec != std::errc() || end != g.data.data() + g.data.size()) id = -1;
                l.infos[i].controller = id >= 0 ? servers_.brokerOf(id) : protocol::Broker{};
              } else if (g.error != zk::Error::NoNode) {
                noteError(l, g.error);
              }
            }));
  }
  reads->release();
}

}  // namespace groupcoord::adapter
