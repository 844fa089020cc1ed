#include "adapter/OffsetStore.h"

#include <charconv>

#include "adapter/Fanout.h"
#include "adapter/ZkErrors.h"

namespace groupcoord::adapter {

using protocol::ErrorCode;
using protocol::PartitionOffset;
using protocol::TopicPartition;

void CommittedOffsets::apply(const std::vector<PartitionOffset>& written) {
  for (auto& o : written) {
    offsets[TopicPartition{o.topic, o.partition}] = o.offset;
    topics.insert(o.topic);
  }
}

int64_t CommittedOffsets::of(const TopicPartition& p) const {
  auto it = offsets.find(p);
  return it == offsets.end() ? -1 : it->second;
}

namespace {

template <class T>
std::optional<T> parseNonNegative(std::string_view text) {
  T v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0) return std::nullopt;
  return v;
}

}  // namespace

std::string encodeOffset(int64_t offset, std::string_view metadata) {
  std::string out = std::to_string(offset);
  if (!metadata.empty()) {
    out += '\n';
    out += metadata;
  }
  return out;
}

std::optional<StoredOffset> parseStoredOffset(std::string_view text) {
  const size_t newline = text.find('\n');
  auto offset = parseNonNegative<int64_t>(text.substr(0, newline));
  if (!offset) return std::nullopt;
  StoredOffset out;
  out.offset = *offset;
  if (newline != std::string_view::npos) out.metadata = std::string(text.substr(newline + 1));
  return out;
}

std::optional<int64_t> parseOffset(std::string_view text) {
  return parseNonNegative<int64_t>(text.substr(0, text.find('\n')));
}
std::optional<int32_t> parsePartition(std::string_view text) { return parseNonNegative<int32_t>(text); }

void OffsetStore::read(const std::string& group, const std::vector<std::string>& topics,
                       std::function<void(OffsetsRead)> done) {
  auto reads = Fanout<OffsetsRead>::start(zk_, std::move(done));
  auto noteError = [](OffsetsRead& s, zk::Error e) {
    if (s.error == zk::Error::Ok) s.error = e;
  };
  std::set<std::string> wanted(topics.begin(), topics.end());
  std::string base = layout_.offsetsPath(group);
  // offsets/ -> offsets/<topic> -> offsets/<topic>/<partition>
  zk_.getChildren(base, reads->collect<zk::ChildrenResult>([this, reads, noteError, wanted, base](
                                                               OffsetsRead& s, zk::ChildrenResult r) {
    if (r.error != zk::Error::Ok) return noteError(s, r.error);
    for (auto& t : r.children) {
      if (!wanted.empty() && !wanted.count(t)) continue;
      s.topics.insert(t);
      std::string dir = base + "/" + t;
      zk_.getChildren(dir, reads->collect<zk::ChildrenResult>([this, reads, noteError, t, dir](
                                                                  OffsetsRead& st, zk::ChildrenResult c) {
        if (c.error != zk::Error::Ok) {
          if (c.error != zk::Error::NoNode) noteError(st, c.error);
          return;
        }
        for (auto& name : c.children) {
          auto n = parsePartition(name);
          if (!n) continue;
          zk_.get(dir + "/" + name,
                  reads->collect<zk::GetResult>([noteError, t, n = *n](OffsetsRead& leaf, zk::GetResult g) {
                    if (g.error == zk::Error::Ok) {
                      if (auto v = parseStoredOffset(g.data)) {
                        leaf.offsets[TopicPartition{t, n}] = v->offset;
                        if (!v->metadata.empty()) leaf.metadata[TopicPartition{t, n}] = std::move(v->metadata);
                      }
                    } else if (g.error != zk::Error::NoNode) {
                      noteError(leaf, g.error);
                    }
                  }));
        }
      }));
    }
  }));
  reads->release();
}

void OffsetStore::list(const std::string& group, std::function<void(OffsetsListing)> done) {
  auto reads = Fanout<OffsetsListing>::start(zk_, std::move(done));
  std::string base = layout_.offsetsPath(group);
  zk_.getChildren(base, reads->collect<zk::ChildrenResult>([this, reads, base](OffsetsListing& s,
                                                                                zk::ChildrenResult r) {
    if (r.error != zk::Error::Ok) {
      s.error = r.error;  // NoNode: a group without an offsets znode
      return;
    }
    for (auto& c : r.children) {
      std::string dir = base + "/" + c;
      zk_.getChildren(dir, reads->collect<zk::ChildrenResult>([dir](OffsetsListing& st, zk::ChildrenResult t) {
        if (t.error == zk::Error::Ok) {
          for (auto& p : t.children) st.leaves.push_back(dir + "/" + p);
          st.topics.push_back(dir);
        } else if (t.error != zk::Error::NoNode) {
          st.error = t.error;
        }
      }));
    }
  }));
  reads->release();
}

void OffsetStore::writeOps(const std::string& group, const CommittedOffsets& known,
                           const std::vector<PartitionOffset>& offsets, std::vector<zk::Op>& ops,
                           const std::map<TopicPartition, std::string>& metadata) const {
  std::map<TopicPartition, int64_t> last;
  for (auto& o : offsets) last[TopicPartition{o.topic, o.partition}] = o.offset;
  std::set<std::string> created;
  for (auto& [p, offset] : last) {
    std::string dir = layout_.offsetsPath(group) + "/" + p.topic;
    if (!known.topics.count(p.topic) && created.insert(p.topic).second) ops.push_back(zk::makeCreate(dir, ""));
    std::string path = dir + "/" + std::to_string(p.partition);
    auto m = metadata.find(p);
    std::string data = encodeOffset(offset, m == metadata.end() ? std::string_view() : std::string_view(m->second));
    if (known.offsets.count(p)) {
      ops.push_back(zk::makeSetData(path, std::move(data)));
    } else {
      ops.push_back(zk::makeCreate(path, std::move(data)));
    }
  }
}

void OffsetStore::fetch(const protocol::FetchOffsetsRequest& r,
                        std::function<void(protocol::FetchOffsetsResponse)> done) {
  std::string group = r.group;
  read(group, r.topics, [this, group, done = std::move(done)](OffsetsRead read) {
    if (read.error == zk::Error::NoNode) {
      // No offsets znode: the group does not exist (or predates offsets).
      zk_.exists(layout_.groupPath(group), [done](zk::ExistsResult e) {
        ErrorCode code = e.error == zk::Error::Ok      ? ErrorCode::NONE
                         : e.error == zk::Error::NoNode ? ErrorCode::UNKNOWN_GROUP
                                                        : ErrorCode::CONTROLLER_NOT_AVAILABLE;
        done(protocol::FetchOffsetsResponse{{}, code});
      });
      return;
    }
    if (read.error != zk::Error::Ok) return done(protocol::FetchOffsetsResponse{{}, fromZk(read.error)});
    protocol::FetchOffsetsResponse resp;
    resp.offsets.reserve(read.offsets.size());
    for (auto& [p, o] : read.offsets) resp.offsets.push_back(PartitionOffset{p.topic, p.partition, o});
    done(std::move(resp));
  });
}

}  // namespace groupcoord::adapter
