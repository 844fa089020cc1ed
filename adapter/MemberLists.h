#pragma once

// The member lists a client-mode group's version-2 registrations are
// answered from (docs/protocol.md §16, docs/design.md "Answers sized by
// the member's share"). The list of the current generation is built once
// and shared by every answer; the lists of the few generations before it
// are kept, so that a member that says which one it holds is sent only
// what changed since, computed once per older generation and shared too.
// Pure: no lock, no clock; the group model owns one.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "protocol/Messages.h"

namespace groupcoord::adapter {

class MemberLists {
 public:
  using List = std::vector<protocol::MemberMetadata>;  // sorted by ConsumerId
  // What changes whenever the members or their metadata do (the group
  // model's member map version, and its count of metadata changes).
  using Stamp = std::pair<uint64_t, uint64_t>;
  struct Delta {
    List added;  // new since the base, or with other metadata or rack
    std::vector<std::string> removed;
  };
  // How many generations' lists are kept, the current one included.
  static constexpr size_t kKept = 8;

  // The list at `generation`. `stamp` changes whenever the members or
  // their metadata do: the list kept for this generation is used while it
  // is the same, or else `build` makes it again (and a list of the same
  // generation with another stamp is replaced, and neither serves as a
  // base any more: members may hold either). `base`: false for a
  // generation this controller did not move to itself (read from
  // ZooKeeper: another server may have answered at it with another list).
  std::shared_ptr<const List> current(int64_t generation, Stamp stamp, const std::function<List()>& build,
                                      bool base = true);
  // What changed from the list kept for `base` to the current one; null
  // when that list is not kept (or its generation had two lists).
  std::shared_ptr<const Delta> since(int64_t base);

  size_t kept() const { return kept_.size(); }

  // The change from `from` to `to`, both sorted by ConsumerId.
  static Delta diff(const List& from, const List& to);

 private:
  struct Kept {
    int64_t generation;
    Stamp stamp;
    std::shared_ptr<const List> list;
    bool base = true;  // false: its generation had another list too
  };
  std::deque<Kept> kept_;                                   // oldest first; the last is the current one
  std::map<int64_t, std::shared_ptr<const Delta>> deltas_;  // from each base to kept_.back()
};

}  // namespace groupcoord::adapter
