#include "adapter/History.h"

#include <algorithm>
#include <map>
#include <string>

namespace groupcoord::adapter {

using protocol::RebalanceEvent;
using protocol::RebalanceReason;

namespace {

// "1000 members joined (the first, by id, is m-0001)".
std::string foldedDetail(RebalanceReason reason, size_t n, const RebalanceEvent& first) {
  std::string what;
  switch (reason) {
    case RebalanceReason::MEMBER_JOINED: what = "members joined"; break;
    case RebalanceReason::MEMBER_LEFT: what = "members left"; break;
    case RebalanceReason::MEMBER_EVICTED: what = "members were evicted for silence"; break;
    case RebalanceReason::MEMBER_REPLACED: what = "members registered again under new ids"; break;
    case RebalanceReason::TOPIC_APPEARED: what = "subscribed topics appeared"; break;
    case RebalanceReason::TOPIC_RESIZED: what = "subscribed topics changed their partition count"; break;
    case RebalanceReason::TOPIC_GONE: what = "subscribed topics went away"; break;
    case RebalanceReason::REWIND: what = "rewinds"; break;
    default: what = "events"; break;
  }
  std::string s = std::to_string(n) + " " + what;
  if (!first.consumerId.empty()) s += " (the first, by id, is " + first.consumerId + ")";
  return s;
}

}  // namespace

std::vector<RebalanceEvent> foldEvents(std::vector<RebalanceEvent> events) {
  std::vector<RebalanceReason> order;
  std::map<RebalanceReason, std::vector<RebalanceEvent>> byReason;
  for (auto& e : events) {
    auto& list = byReason[e.reason];
    if (list.empty()) order.push_back(e.reason);
    list.push_back(std::move(e));
  }
  std::vector<RebalanceEvent> out;
  for (RebalanceReason reason : order) {
    auto& list = byReason[reason];
    if (list.size() <= kListedPerReason) {
      for (auto& e : list) out.push_back(std::move(e));
      continue;
    }
    auto first = std::min_element(list.begin(), list.end(), [](const RebalanceEvent& a, const RebalanceEvent& b) {
      return a.consumerId < b.consumerId;
    });
    RebalanceEvent folded = *first;
    int64_t total = 0;
    for (auto& e : list) total += e.count;
    folded.count = static_cast<int32_t>(std::min<int64_t>(total, INT32_MAX));
    folded.subject.clear();
    folded.value = -1;
    folded.detail = foldedDetail(reason, static_cast<size_t>(folded.count), folded);
    out.push_back(std::move(folded));
  }
  return out;
}

void RebalanceHistory::add(std::vector<RebalanceEvent> events) {
  for (auto& e : events) events_.push_back(std::move(e));
  while (events_.size() > kKept) events_.pop_front();
}

std::vector<RebalanceEvent> RebalanceHistory::persisted(const std::vector<RebalanceEvent>& next) const {
  std::vector<RebalanceEvent> out;
  const size_t fromNext = std::min(next.size(), kPersisted);
  const size_t fromKept = std::min(events_.size(), kPersisted - fromNext);
  out.reserve(fromKept + fromNext);
  out.insert(out.end(), events_.end() - static_cast<std::ptrdiff_t>(fromKept), events_.end());
  out.insert(out.end(), next.end() - static_cast<std::ptrdiff_t>(fromNext), next.end());
  return out;
}

}  // namespace groupcoord::adapter
