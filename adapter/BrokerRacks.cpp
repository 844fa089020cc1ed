#include "adapter/BrokerRacks.h"

#include <spdlog/spdlog.h>

#include "common/Layout.h"

namespace groupcoord::adapter {

void BrokerRacks::watch() {
  {
    MutexLock lock(mu_);
    started_ = true;
  }
  watchList();
}

void BrokerRacks::watchList() {
  {
    MutexLock lock(mu_);
    listWatched_ = true;
  }
  zk_.getChildren(
      brokersPath_,
      epoch_.bind([this](zk::ChildrenResult r) {
        if (r.error == zk::Error::NoNode) {
          onListed({});
          // No children watch on a missing node: wait for it to appear.
          zk_.exists(brokersPath_, epoch_.bind([this](zk::ExistsResult e) {
                       if (e.error == zk::Error::Ok) return watchList();  // it appeared meanwhile
                       if (e.error != zk::Error::NoNode) {
                         MutexLock lock(mu_);
                         listWatched_ = false;
                       }
                     }),
                     epoch_.bind([this](const zk::WatchEvent& ev) {
                       if (ev.type != zk::WatchEvent::Type::Session) watchList();
                     }));
          return;
        }
        if (r.error != zk::Error::Ok) {
          spdlog::warn("listing brokers under {} failed: {}; retrying", brokersPath_, r.error);
          MutexLock lock(mu_);
          listWatched_ = false;  // the tick lists them again
          return;
        }
        onListed(r.children);
      }),
      epoch_.bind([this](const zk::WatchEvent& ev) {
        if (ev.type != zk::WatchEvent::Type::Session) watchList();
      }));
}

void BrokerRacks::onListed(const std::vector<std::string>& children) {
  std::set<int32_t> ids;
  for (const auto& c : children) {
    if (auto id = layout::parseNodeId(c)) ids.insert(*id);
  }
  std::vector<int32_t> gone;
  std::vector<int32_t> added;
  {
    MutexLock lock(mu_);
    for (auto it = brokers_.begin(); it != brokers_.end();) {
      if (ids.count(it->first)) {
        ++it;
        continue;
      }
      if (!it->second.rack.empty()) gone.push_back(it->first);
      it = brokers_.erase(it);
    }
    for (int32_t id : ids) {
      if (brokers_.emplace(id, Broker{}).second) added.push_back(id);
    }
  }
  for (int32_t id : gone) {
    spdlog::info("broker {} is gone: its rack no longer counts", id);
    changed_(id);
  }
  for (int32_t id : added) watchBroker(id);
}

void BrokerRacks::watchBroker(int32_t id) {
  {
    MutexLock lock(mu_);
    auto it = brokers_.find(id);
    if (it == brokers_.end() || it->second.watching) return;
    it->second.watching = true;
  }
  const std::string path = brokersPath_ + "/" + std::to_string(id);
  zk_.get(
      path,
      epoch_.bind([this, id](zk::GetResult g) {
        if (g.error == zk::Error::NoNode) return onGone(id);
        if (g.error != zk::Error::Ok) {
          spdlog::warn("broker {}: reading its registration failed: {}; retrying", id, g.error);
          MutexLock lock(mu_);
          if (auto it = brokers_.find(id); it != brokers_.end()) it->second.watching = false;
          return;
        }
        auto rack = layout::decodeBrokerRack(g.data);
        if (!rack) {
          spdlog::warn("broker {}: registration is not Kafka's broker JSON; treating it as without a rack", id);
          rack = std::string();
        }
        onRack(id, std::move(*rack));
      }),
      epoch_.bind([this, id](const zk::WatchEvent& ev) {
        if (ev.type == zk::WatchEvent::Type::Session) return;
        if (ev.type == zk::WatchEvent::Type::Deleted) return onGone(id);
        {
          MutexLock lock(mu_);
          if (auto it = brokers_.find(id); it != brokers_.end()) it->second.watching = false;
        }
        watchBroker(id);
      }));
}

void BrokerRacks::onRack(int32_t id, std::string rack) {
  {
    MutexLock lock(mu_);
    auto it = brokers_.find(id);
    if (it == brokers_.end() || it->second.rack == rack) return;
    spdlog::info("broker {}: rack \"{}\" -> \"{}\"", id, it->second.rack, rack);
    it->second.rack = std::move(rack);
  }
  changed_(id);
}

void BrokerRacks::onGone(int32_t id) {
  bool hadRack = false;
  {
    MutexLock lock(mu_);
    auto it = brokers_.find(id);
    if (it == brokers_.end()) return;
    hadRack = !it->second.rack.empty();
    brokers_.erase(it);
  }
  if (hadRack) changed_(id);
}

void BrokerRacks::rewatch() {
  bool list = false;
  std::vector<int32_t> again;
  {
    MutexLock lock(mu_);
    if (!started_) return;
    list = !listWatched_;
    for (const auto& [id, b] : brokers_) {
      if (!b.watching) again.push_back(id);
    }
  }
  if (list) watchList();
  for (int32_t id : again) watchBroker(id);
}

void BrokerRacks::clear() {
  MutexLock lock(mu_);
  brokers_.clear();
  listWatched_ = false;
  started_ = false;
}

std::map<int32_t, std::string> BrokerRacks::racksOf(const std::set<int32_t>& brokers) const {
  std::map<int32_t, std::string> out;
  MutexLock lock(mu_);
  for (int32_t id : brokers) {
    auto it = brokers_.find(id);
    if (it != brokers_.end() && !it->second.rack.empty()) out.emplace(id, it->second.rack);
  }
  return out;
}

}  // namespace groupcoord::adapter
