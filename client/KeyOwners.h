#pragma once

// Rendezvous hashing of arbitrary keys over a client-mode group's member
// list (docs/protocol.md §14): every member computes, from the same list,
// the same owner for every key, and when a member comes or goes only the
// keys it owned (or will own) move. Pure and deterministic; the scores do
// not depend on the process, the platform or the order of the list.
//
//   client::KeyOwners owners(members);     // from ConsumerCallbacks::onMembers
//   if (owners.owner(tenant) == self) ...   // this member serves `tenant`

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/Messages.h"

namespace groupcoord::client {

class KeyOwners {
 public:
  KeyOwners() = default;
  explicit KeyOwners(std::vector<std::string> members);
  explicit KeyOwners(const std::vector<protocol::MemberMetadata>& members);

  // The member that owns `key`: the highest score(member, key), the smaller
  // id on a tie. Empty when there are no members.
  const std::string& owner(std::string_view key) const;
  const std::vector<std::string>& members() const { return members_; }

  // A member's score for a key: stable across versions.
  static uint64_t score(std::string_view member, std::string_view key);

 private:
  std::vector<std::string> members_;  // sorted, without duplicates
};

}  // namespace groupcoord::client
