#include "adapter/Assignment.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>

// How the assignment is computed.
//
// With N members, topic t of P_t partitions gives every member q_t = P_t / N
// of its partitions, and r_t = P_t % N members one more: the topic's
// "extras". Both balance rules are then a statement about the 0/1 matrix
// e[member][topic] of extras alone: per topic, each column holds exactly r_t
// ones (per-topic balance is automatic); in total, each row holds f or f + 1
// ones, f = R / N with R = sum of r_t (then exactly R % N rows hold f + 1).
// Any such matrix is a valid quota table, and one always exists.
//
// Stickiness is then a choice of that matrix. A member that held h partitions
// of topic t keeps min(h, quota) of them; giving it the extra of t keeps one
// more partition exactly when h > q_t (a "gain" pair). So the assignment that
// keeps the most partitions is the matrix with the most gain pairs, which is a
// minimum-cost flow: source -> topic (capacity r_t) -> member (capacity 1, cost
// -1 for a gain pair, 0 otherwise) -> sink (capacity f), plus member ->
// overflow (capacity 1) -> sink (capacity R % N) for the f + 1 rows. A greedy
// choice of extras ("fewest extras so far first, ties to sticky members")
// cannot be exact: a member with one too many extras early on blocks a gain
// pair later, and when a member leaves that shows up as partitions moving
// between members that stayed. The flow gets the optimum, so such moves happen
// only when no balanced assignment avoids them.
//
// The topic -> member edges form a complete bipartite graph (topics x members,
// ten million edges for 10,000 one-partition topics and 1,000 members), so
// they are never materialised: only gain pairs and current extras are stored,
// and the searches enumerate "every other member" through a next-unvisited
// structure, which costs per topic only the members it must skip (its own
// extras and gain pairs). The flow runs primal-dual: a Dijkstra on reduced
// costs (bucketed; costs are tiny integers) fixes potentials, then depth-first
// rounds push flow along zero-reduced-cost paths until none is left. Costs are
// 0/-1, so there are only a few Dijkstra phases; a round is linear in members,
// topics and stored pairs.
//
// Once the matrix is fixed, each topic is dealt out: members keep their
// previous partitions up to their quota (lowest partition numbers first), and
// the remaining partitions, in ascending order, fill members below quota in id
// order.

namespace groupcoord::adapter {
namespace {

constexpr uint8_t kGain = 1;  // the member held more than q_t of the topic before
constexpr uint8_t kHas = 2;   // the member currently has the topic's extra
constexpr uint8_t kRack = 4;  // the extra would likely land in-rack (rack-aware only)

// Flags of (member, topic) pairs of the extras matrix. Open addressing: the
// pairs looked up most are in hot loops, and the table is never iterated, so
// its order cannot leak into the result.
class PairFlags {
 public:
  explicit PairFlags(size_t expected) {
    size_t cap = 16;
    while (cap < expected * 2 + 16) cap *= 2;
    keys_.assign(cap, kEmpty);
    values_.assign(cap, 0);
  }

  uint8_t get(int32_t row, int32_t col) const {
    const uint64_t key = makeKey(row, col);
    for (size_t at = slot(key);; at = (at + 1) & (keys_.size() - 1)) {
      if (keys_[at] == key) return values_[at];
      if (keys_[at] == kEmpty) return 0;
    }
  }

  void set(int32_t row, int32_t col, uint8_t bits) { values_[findOrInsert(makeKey(row, col))] |= bits; }

  void clear(int32_t row, int32_t col, uint8_t bits) {
    values_[findOrInsert(makeKey(row, col))] &= static_cast<uint8_t>(~bits);
  }

 private:
  static constexpr uint64_t kEmpty = std::numeric_limits<uint64_t>::max();

  static uint64_t makeKey(int32_t row, int32_t col) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(row)) << 32) | static_cast<uint32_t>(col);
  }

  size_t slot(uint64_t key) const {
    // splitmix64 finaliser: row-major keys would otherwise cluster.
    key += 0x9e3779b97f4a7c15ULL;
    key = (key ^ (key >> 30)) * 0xbf58476d1ce4e5b9ULL;
    key = (key ^ (key >> 27)) * 0x94d049bb133111ebULL;
    key ^= key >> 31;
    return static_cast<size_t>(key) & (keys_.size() - 1);
  }

  size_t findOrInsert(uint64_t key) {
    for (size_t at = slot(key);; at = (at + 1) & (keys_.size() - 1)) {
      if (keys_[at] == key) return at;
      if (keys_[at] == kEmpty) {
        if ((used_ + 1) * 2 > keys_.size()) {
          grow();
          return findOrInsert(key);
        }
        keys_[at] = key;
        ++used_;
        return at;
      }
    }
  }

  void grow() {
    std::vector<uint64_t> oldKeys = std::move(keys_);
    std::vector<uint8_t> oldValues = std::move(values_);
    keys_.assign(oldKeys.size() * 2, kEmpty);
    values_.assign(oldKeys.size() * 2, 0);
    used_ = 0;
    for (size_t i = 0; i < oldKeys.size(); ++i) {
      if (oldKeys[i] == kEmpty) continue;
      const size_t at = findOrInsert(oldKeys[i]);
      values_[at] = oldValues[i];
    }
  }

  std::vector<uint64_t> keys_;
  std::vector<uint8_t> values_;
  size_t used_ = 0;
};

// Positions 0..n-1 that can be taken once each; find(x) is the first position
// >= x not taken yet (n when none). Lets a topic enumerate "all members not
// visited yet" without rescanning the visited ones.
class NextFree {
 public:
  void reset(int32_t n) {
    parent_.resize(static_cast<size_t>(n) + 1);
    std::iota(parent_.begin(), parent_.end(), 0);
  }
  int32_t find(int32_t x) {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return x;
  }
  void take(int32_t x) { parent_[x] = x + 1; }

 private:
  std::vector<int32_t> parent_;
};

// Chooses which members get each topic's extra partition: the 0/1 matrix with
// `need[c]` ones in column c, f or f + 1 ones per row, and the most gain pairs.
// Rows are member indexes, columns index the topics that have extras.
//
// Rack-aware, `rackRows` names (member, topic) "rack pairs" too: among the
// matrices with the most gain pairs, the solver takes one with the most rack
// pairs. Costs are then -K for a gain pair and -1 for a rack pair, with K =
// min(rows, columns) + 1: a simple cycle of the residual graph crosses at most
// that many topic -> member edges, so no exchange can buy rack pairs with a
// gain pair. Without rack pairs K = 1 and every cost is as it was.
class ExtrasSolver {
 public:
  ExtrasSolver(int32_t rows, std::vector<int32_t> need, std::vector<std::vector<int32_t>> gainRows,
               std::vector<std::vector<int32_t>> rackRows = {})
      : rows_(rows),
        cols_(static_cast<int32_t>(need.size())),
        need_(std::move(need)),
        gainRows_(std::move(gainRows)),
        flags_(0) {
    int64_t total = 0;
    for (int32_t n : need_) total += n;
    total_ = total;
    floor_ = total / rows_;
    overflowSlots_ = total % rows_;
    rackRows.resize(static_cast<size_t>(cols_));
    size_t pairs = 0;
    bool anyRack = false;
    for (int32_t c = 0; c < cols_; ++c) {
      pairs += gainRows_[c].size() + rackRows[c].size();
      anyRack = anyRack || !rackRows[c].empty();
    }
    gainWeight_ = anyRack ? std::min<int64_t>(rows_, cols_) + 1 : 1;
    maxWeight_ = gainWeight_ + (anyRack ? 1 : 0);
    flags_ = PairFlags(pairs + static_cast<size_t>(total));
    // Special rows of a column: its gain and rack pairs, sorted, each once.
    specialRows_.resize(static_cast<size_t>(cols_));
    for (int32_t c = 0; c < cols_; ++c) {
      for (int32_t r : gainRows_[c]) flags_.set(r, c, kGain);
      for (int32_t r : rackRows[c]) flags_.set(r, c, kRack);
      auto& special = specialRows_[c];
      special.reserve(gainRows_[c].size() + rackRows[c].size());
      std::set_union(gainRows_[c].begin(), gainRows_[c].end(), rackRows[c].begin(), rackRows[c].end(),
                     std::back_inserter(special));
    }
  }

  // Rows holding each column's extra, each list sorted.
  std::vector<std::vector<int32_t>> solve() {
    used_.assign(cols_, 0);
    rowCols_.assign(rows_, {});
    over_.assign(rows_, 0);
    overPos_.assign(rows_, -1);
    overRows_.clear();
    overCount_ = 0;
    // Initial potentials make every reduced cost non-negative with no flow
    // yet: topic -> member costs -1 or 0, so members (and what follows them)
    // start one below the topics.
    potS_ = 0;
    potCol_.assign(cols_, 0);
    potRow_.assign(rows_, -maxWeight_);
    potO_ = -maxWeight_;
    potT_ = -maxWeight_;

    int64_t routed = 0;
    bool ok = true;
    while (routed < total_) {
      if (!runDijkstra()) {
        ok = false;
        break;
      }
      buildGroups();
      // A shortest path exists after every Dijkstra, so a phase that routes
      // nothing means a bug: stop rather than loop.
      int64_t phase = 0;
      while (int64_t got = runRound()) phase += got;
      if (phase == 0) {
        ok = false;
        break;
      }
      routed += phase;
    }
    if (!ok || !consistent()) return fallback();

    std::vector<std::vector<int32_t>> colRows(cols_);
    for (int32_t r = 0; r < rows_; ++r) {
      for (int32_t c : rowCols_[r]) colRows[c].push_back(r);
    }
    return colRows;
  }

 private:
  enum class Kind : uint8_t { Col, Row, Overflow };
  struct Frame {
    Kind kind;
    int32_t id;
    uint32_t step;
  };
  struct Group {
    int64_t potential;
    int32_t begin;
    int32_t end;
  };

  static constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;
  // Dijkstra node ids.
  static constexpr int32_t kS = 0;
  static constexpr int32_t kT = 1;
  static constexpr int32_t kO = 2;
  int32_t rowNode(int32_t r) const { return 3 + r; }
  int32_t colNode(int32_t c) const { return 3 + rows_ + c; }

  int64_t base(int32_t r) const { return static_cast<int64_t>(rowCols_[r].size()) - over_[r]; }
  // Cost of the topic -> member edge (r, c): -K for a gain pair, -1 for a
  // rack pair, both for both, 0 otherwise.
  int64_t cost(int32_t r, int32_t c) const {
    const uint8_t f = flags_.get(r, c);
    return -((f & kGain) ? gainWeight_ : 0) - ((f & kRack) ? 1 : 0);
  }

  // Rows sorted by potential: a topic -> member edge without gain has reduced
  // cost potCol - potRow, the same for every member of one potential, so the
  // searches treat each potential as one block.
  void buildGroups() {
    sorted_.resize(rows_);
    std::iota(sorted_.begin(), sorted_.end(), 0);
    std::stable_sort(sorted_.begin(), sorted_.end(),
                     [&](int32_t a, int32_t b) { return potRow_[a] < potRow_[b]; });
    posOf_.assign(rows_, 0);
    groups_.clear();
    for (int32_t p = 0; p < rows_; ++p) {
      posOf_[sorted_[p]] = p;
      if (groups_.empty() || groups_.back().potential != potRow_[sorted_[p]]) {
        if (!groups_.empty()) groups_.back().end = p;
        groups_.push_back({potRow_[sorted_[p]], p, rows_});
      }
    }
  }

  int32_t groupWithPotential(int64_t potential) const {
    auto it = std::lower_bound(groups_.begin(), groups_.end(), potential,
                               [](const Group& g, int64_t v) { return g.potential < v; });
    if (it == groups_.end() || it->potential != potential) return -1;
    return static_cast<int32_t>(it - groups_.begin());
  }

  // Shortest reduced distances from the source (Dial's buckets; reduced costs
  // are small non-negative integers), then potentials += distance, capped at
  // the sink's, which keeps every reduced cost non-negative.
  bool runDijkstra() {
    buildGroups();
    const size_t nodes = 3 + static_cast<size_t>(rows_) + static_cast<size_t>(cols_);
    std::vector<int64_t> dist(nodes, kInf);
    std::vector<uint8_t> done(nodes, 0);
    std::vector<std::vector<int32_t>> nodeBuckets;
    std::vector<std::vector<std::pair<int32_t, int32_t>>> eventBuckets;  // (column, group)
    NextFree unsettled;
    unsettled.reset(rows_);
    // A distance this large means a bug, not a graph: give up and fall back.
    const int64_t limit = (4 * static_cast<int64_t>(nodes) + 64) * maxWeight_;
    bool overLimit = false;

    auto push = [&](int32_t node, int64_t d) {
      if (done[node] || d >= dist[node]) return;
      if (d > limit) {
        overLimit = true;
        return;
      }
      dist[node] = d;
      if (nodeBuckets.size() <= static_cast<size_t>(d)) nodeBuckets.resize(d + 1);
      nodeBuckets[d].push_back(node);
    };
    auto pushEvent = [&](int32_t col, int32_t group, int64_t d) {
      if (d > limit) {
        overLimit = true;
        return;
      }
      if (eventBuckets.size() <= static_cast<size_t>(d)) eventBuckets.resize(d + 1);
      eventBuckets[d].push_back({col, group});
    };
    auto settle = [&](int32_t node, int64_t d) {
      done[node] = 1;
      dist[node] = d;
      if (node == kT) return;
      if (node == kS) {
        for (int32_t c = 0; c < cols_; ++c) {
          if (used_[c] < need_[c]) push(colNode(c), d + potS_ - potCol_[c]);
        }
      } else if (node == kO) {
        if (overCount_ < overflowSlots_) push(kT, d + potO_ - potT_);
        for (int32_t r : overRows_) push(rowNode(r), d + potO_ - potRow_[r]);
      } else if (node < 3 + rows_) {
        const int32_t r = node - 3;
        unsettled.take(posOf_[r]);
        if (base(r) < floor_) push(kT, d + potRow_[r] - potT_);
        if (!over_[r]) push(kO, d + potRow_[r] - potO_);
        for (int32_t c : rowCols_[r]) push(colNode(c), d - cost(r, c) + potRow_[r] - potCol_[c]);
      } else {
        const int32_t c = node - 3 - rows_;
        for (int32_t r : specialRows_[c]) {
          if (!(flags_.get(r, c) & kHas)) push(rowNode(r), d + cost(r, c) + potCol_[c] - potRow_[r]);
        }
        for (int32_t g = 0; g < static_cast<int32_t>(groups_.size()); ++g) {
          // A group above the topic's potential can hold no member this
          // topic may reach (its reduced cost would be negative).
          if (groups_[g].potential > potCol_[c]) continue;
          pushEvent(c, g, d + potCol_[c] - groups_[g].potential);
        }
      }
    };

    push(kS, 0);
    int64_t distT = -1;
    for (size_t d = 0; distT < 0; ++d) {
      if (overLimit || (d >= nodeBuckets.size() && d >= eventBuckets.size())) return false;
      const int64_t dd = static_cast<int64_t>(d);
      for (;;) {
        if (d < nodeBuckets.size() && !nodeBuckets[d].empty()) {
          const int32_t node = nodeBuckets[d].back();
          nodeBuckets[d].pop_back();
          if (done[node] || dist[node] != dd) continue;
          settle(node, dd);
          if (node == kT) {
            distT = dd;
            break;
          }
          continue;
        }
        if (d < eventBuckets.size() && !eventBuckets[d].empty()) {
          const auto [c, g] = eventBuckets[d].back();
          eventBuckets[d].pop_back();
          // Every member of the block not settled yet, other than the
          // topic's own extras and special pairs, is reached at this distance.
          for (int32_t p = unsettled.find(groups_[g].begin); p < groups_[g].end; p = unsettled.find(p + 1)) {
            const int32_t r = sorted_[p];
            if (flags_.get(r, c) != 0) continue;
            settle(rowNode(r), dd);
          }
          continue;
        }
        break;
      }
    }

    auto delta = [&](int32_t node) { return done[node] ? std::min(dist[node], distT) : distT; };
    potS_ += delta(kS);
    potT_ += delta(kT);
    potO_ += delta(kO);
    for (int32_t r = 0; r < rows_; ++r) potRow_[r] += delta(rowNode(r));
    for (int32_t c = 0; c < cols_; ++c) potCol_[c] += delta(colNode(c));
    return true;
  }

  // One round of depth-first searches over zero-reduced-cost edges. Members
  // that end a path at the sink stay available; any other member is visited
  // at most once per round, which bounds a round's work. Returns the units
  // routed.
  int64_t runRound() {
    visited_.assign(rows_, 0);
    colDead_.assign(cols_, 0);
    overflowDead_ = false;
    gainCursor_.assign(cols_, 0);
    fillCursor_.assign(cols_, -1);
    admissible_.assign(cols_, -1);
    for (int32_t c = 0; c < cols_; ++c) admissible_[c] = groupWithPotential(potCol_[c]);
    free_.reset(rows_);
    overSnapshot_ = overRows_;
    overCursor_ = 0;
    int64_t routed = 0;
    for (int32_t c = 0; c < cols_; ++c) {
      if (potCol_[c] != potS_) continue;
      while (used_[c] < need_[c] && !colDead_[c]) {
        if (!augmentFrom(c)) break;
        ++routed;
      }
    }
    return routed;
  }

  bool canEnd(int32_t r) const { return base(r) < floor_ && potRow_[r] == potT_; }

  void visit(int32_t r) {
    visited_[r] = 1;
    free_.take(posOf_[r]);
  }

  // Next member topic c can hand its extra to along a zero-reduced-cost edge:
  // special pairs first, then any other member of the matching potential block.
  // Cursors only move forward: within a round a member not visited keeps its
  // flags, so what a cursor passed stays unusable.
  int32_t nextRow(int32_t c) {
    const auto& special = specialRows_[c];
    while (gainCursor_[c] < static_cast<int32_t>(special.size())) {
      const int32_t r = special[gainCursor_[c]++];
      if (!visited_[r] && !(flags_.get(r, c) & kHas) && potRow_[r] == potCol_[c] + cost(r, c)) return r;
    }
    const int32_t g = admissible_[c];
    if (g < 0) return -1;
    int32_t p = free_.find(std::max(fillCursor_[c], groups_[g].begin));
    while (p < groups_[g].end) {
      const int32_t r = sorted_[p];
      if (flags_.get(r, c) == 0) {
        fillCursor_[c] = p + 1;
        return r;
      }
      p = free_.find(p + 1);
    }
    fillCursor_[c] = groups_[g].end;
    return -1;
  }

  int32_t nextOverflowRow() {
    while (overCursor_ < overSnapshot_.size()) {
      const int32_t r = overSnapshot_[overCursor_++];
      if (!visited_[r] && over_[r] && potRow_[r] == potO_) return r;
    }
    return -1;
  }

  // Iterative, so a long alternating path cannot exhaust a thread's stack.
  bool augmentFrom(int32_t startCol) {
    stack_.clear();
    stack_.push_back({Kind::Col, startCol, 0});
    while (!stack_.empty()) {
      Frame& top = stack_.back();
      if (top.kind == Kind::Col) {
        const int32_t c = top.id;
        if (colDead_[c]) {
          stack_.pop_back();
          continue;
        }
        const int32_t r = nextRow(c);
        if (r < 0) {
          colDead_[c] = 1;
          stack_.pop_back();
          continue;
        }
        if (canEnd(r)) {
          commit(r);
          return true;
        }
        visit(r);
        stack_.push_back({Kind::Row, r, 0});
      } else if (top.kind == Kind::Row) {
        const int32_t r = top.id;
        if (top.step == 0) {
          top.step = 1;
          if (!over_[r] && !overflowDead_ && potRow_[r] == potO_) stack_.push_back({Kind::Overflow, -1, 0});
          continue;
        }
        // Give up one of this member's current extras: that topic must then
        // place it elsewhere.
        bool pushed = false;
        while (top.step - 1 < rowCols_[r].size()) {
          const int32_t c = rowCols_[r][top.step - 1];
          ++top.step;
          if (colDead_[c]) continue;
          if (-cost(r, c) + potRow_[r] - potCol_[c] != 0) continue;
          stack_.push_back({Kind::Col, c, 0});
          pushed = true;
          break;
        }
        if (!pushed) stack_.pop_back();
      } else {
        if (overflowDead_) {
          stack_.pop_back();
          continue;
        }
        if (top.step == 0) {
          top.step = 1;
          if (overCount_ < overflowSlots_ && potO_ == potT_) {
            commit(-1);
            return true;
          }
        }
        // Take the "f + 1" slot from a member that has it: that member must
        // then shed a unit.
        const int32_t r = nextOverflowRow();
        if (r < 0) {
          overflowDead_ = true;
          stack_.pop_back();
          continue;
        }
        if (canEnd(r)) {
          commit(r);
          return true;
        }
        visit(r);
        stack_.push_back({Kind::Row, r, 0});
      }
    }
    return false;
  }

  // Applies the path on the stack (source -> stack... -> endRow -> sink, or
  // -> overflow -> sink when endRow < 0).
  void commit(int32_t endRow) {
    ++used_[stack_.front().id];
    for (size_t i = 0; i < stack_.size(); ++i) {
      const Frame& a = stack_[i];
      Frame b{Kind::Row, endRow, 0};
      if (i + 1 < stack_.size()) {
        b = stack_[i + 1];
      } else if (endRow < 0) {
        break;  // overflow -> sink: the member -> overflow step already counted
      }
      if (a.kind == Kind::Col && b.kind == Kind::Row) {
        flags_.set(b.id, a.id, kHas);
        rowCols_[b.id].push_back(a.id);
      } else if (a.kind == Kind::Row && b.kind == Kind::Col) {
        flags_.clear(a.id, b.id, kHas);
        auto& cols = rowCols_[a.id];
        cols.erase(std::find(cols.begin(), cols.end(), b.id));
      } else if (a.kind == Kind::Row && b.kind == Kind::Overflow) {
        over_[a.id] = 1;
        ++overCount_;
        overPos_[a.id] = static_cast<int32_t>(overRows_.size());
        overRows_.push_back(a.id);
      } else if (a.kind == Kind::Overflow && b.kind == Kind::Row) {
        over_[b.id] = 0;
        --overCount_;
        const int32_t at = overPos_[b.id];
        overRows_[at] = overRows_.back();
        overPos_[overRows_[at]] = at;
        overRows_.pop_back();
        overPos_[b.id] = -1;
      }
    }
  }

  bool consistent() const {
    for (int32_t c = 0; c < cols_; ++c) {
      if (used_[c] != need_[c]) return false;
    }
    int64_t high = 0;
    for (int32_t r = 0; r < rows_; ++r) {
      const int64_t n = static_cast<int64_t>(rowCols_[r].size());
      if (n < floor_ || n > floor_ + 1) return false;
      high += n - floor_;
    }
    return high == overflowSlots_;
  }

  // Never expected to run (the flow always completes: a balanced matrix
  // always exists); it keeps the balance guarantee even if the flow had a
  // bug, at the price of exact stickiness. Topic by topic, the members with
  // the fewest extras so far take the extra (which keeps every two members
  // within one of each other), gain pairs first among equals, then by index.
  std::vector<std::vector<int32_t>> fallback() const {
    std::vector<std::vector<int32_t>> colRows(cols_);
    std::vector<int64_t> count(rows_, 0);
    std::vector<uint8_t> taken(rows_, 0);
    std::set<std::pair<int64_t, int32_t>> order;  // (extras so far, row)
    for (int32_t r = 0; r < rows_; ++r) order.insert({0, r});
    for (int32_t c = 0; c < cols_; ++c) {
      auto& picked = colRows[c];
      const auto want = static_cast<size_t>(need_[c]);
      const int64_t lowest = order.begin()->first;
      for (int32_t r : gainRows_[c]) {
        if (picked.size() < want && count[r] == lowest) {
          picked.push_back(r);
          taken[r] = 1;
        }
      }
      for (auto it = order.begin(); it != order.end() && picked.size() < want; ++it) {
        if (taken[it->second]) continue;
        picked.push_back(it->second);
        taken[it->second] = 1;
      }
      for (int32_t r : picked) {
        order.erase({count[r], r});
        order.insert({++count[r], r});
        taken[r] = 0;
      }
      std::sort(picked.begin(), picked.end());
    }
    return colRows;
  }

  int32_t rows_;
  int32_t cols_;
  std::vector<int32_t> need_;
  std::vector<std::vector<int32_t>> gainRows_;
  std::vector<std::vector<int32_t>> specialRows_;
  PairFlags flags_;
  int64_t gainWeight_ = 1;
  int64_t maxWeight_ = 1;
  int64_t total_ = 0;
  int64_t floor_ = 0;
  int64_t overflowSlots_ = 0;

  std::vector<int32_t> used_;
  std::vector<std::vector<int32_t>> rowCols_;
  std::vector<uint8_t> over_;
  std::vector<int32_t> overPos_;
  std::vector<int32_t> overRows_;
  int64_t overCount_ = 0;

  int64_t potS_ = 0;
  int64_t potT_ = 0;
  int64_t potO_ = 0;
  std::vector<int64_t> potRow_;
  std::vector<int64_t> potCol_;

  std::vector<int32_t> sorted_;
  std::vector<int32_t> posOf_;
  std::vector<Group> groups_;

  std::vector<uint8_t> visited_;
  std::vector<uint8_t> colDead_;
  bool overflowDead_ = false;
  std::vector<int32_t> gainCursor_;
  std::vector<int32_t> fillCursor_;
  std::vector<int32_t> admissible_;
  std::vector<int32_t> overSnapshot_;
  size_t overCursor_ = 0;
  NextFree free_;
  std::vector<Frame> stack_;
};

struct Topic {
  const std::string* name;
  int32_t count;
  int32_t base;    // q_t: what every member gets
  int32_t extras;  // r_t: how many members get one more
  int32_t column;  // index in the extras matrix, -1 without extras
  size_t first;    // where this topic's partitions start in the owner array
  int32_t racked = -1;  // index in Racks' partition tables, -1: no rack counts here
};

// Racks as small numbers, in name order; only racks some member has count,
// since a partition can land in-rack only there.
class Racks {
 public:
  Racks(const std::vector<std::string>& ids, const RackInfo& info) : info_(info), memberRack_(ids.size(), -1) {
    std::map<std::string_view, int32_t> byName;
    std::vector<const std::string*> named(ids.size(), nullptr);
    for (size_t r = 0; r < ids.size(); ++r) {
      auto it = info.members.find(ids[r]);
      if (it == info.members.end() || it->second.empty()) continue;
      named[r] = &it->second;
      byName.emplace(it->second, 0);
    }
    int32_t next = 0;
    for (auto& [name, k] : byName) k = next++;
    byName_ = std::move(byName);
    rowsOf_.resize(static_cast<size_t>(next));
    for (size_t r = 0; r < ids.size(); ++r) {
      if (named[r] == nullptr) continue;
      memberRack_[r] = byName_.at(*named[r]);
      rowsOf_[memberRack_[r]].push_back(static_cast<int32_t>(r));
    }
  }

  bool any() const { return !rowsOf_.empty(); }
  int32_t count() const { return static_cast<int32_t>(rowsOf_.size()); }
  int32_t of(int32_t row) const { return memberRack_[row]; }
  const std::vector<int32_t>& rows(int32_t rack) const { return rowsOf_[rack]; }

  // Reads the topic's replica racks; returns its index for partition(), or
  // -1 when none of its partitions has a replica in a member's rack.
  int32_t addTopic(const std::string& topic, int32_t count) {
    auto it = info_.replicas.find(topic);
    if (it == info_.replicas.end()) return -1;
    std::vector<std::vector<int32_t>> table(static_cast<size_t>(count));
    bool any = false;
    for (size_t p = 0; p < table.size() && p < it->second.size(); ++p) {
      for (const auto& name : it->second[p]) {  // a set: names ascending, so numbers ascending
        auto k = byName_.find(name);
        if (k == byName_.end()) continue;
        table[p].push_back(k->second);
        any = true;
      }
    }
    if (!any) return -1;
    tables_.push_back(std::move(table));
    return static_cast<int32_t>(tables_.size() - 1);
  }

  // Racks (ascending) of partition p of a topic that addTopic() numbered.
  const std::vector<int32_t>& partition(int32_t racked, int32_t p) const { return tables_[racked][p]; }

  bool inRack(int32_t row, int32_t racked, int32_t p) const {
    if (racked < 0 || memberRack_[row] < 0) return false;
    const auto& ks = tables_[racked][p];
    return std::binary_search(ks.begin(), ks.end(), memberRack_[row]);
  }

 private:
  const RackInfo& info_;
  std::map<std::string_view, int32_t> byName_;
  std::vector<int32_t> memberRack_;
  std::vector<std::vector<int32_t>> rowsOf_;
  std::vector<std::vector<std::vector<int32_t>>> tables_;
};

// Rack pairs of one topic's column: for each rack whose replicas of the topic
// outnumber what its members' base quotas take, as many of its members as
// that surplus (at most all of them) are marked, the rack's gain pairs first,
// then from an offset that moves with the column so that a rack's marks
// spread over its members across topics.
std::vector<int32_t> rackPairs(const Racks& racks, const Topic& topic, const std::vector<int32_t>& gains) {
  std::vector<int64_t> local(static_cast<size_t>(racks.count()), 0);
  for (int32_t p = 0; p < topic.count; ++p) {
    for (int32_t k : racks.partition(topic.racked, p)) ++local[k];
  }
  std::vector<int32_t> marked;
  for (int32_t k = 0; k < racks.count(); ++k) {
    const auto& rows = racks.rows(k);
    const int64_t members = static_cast<int64_t>(rows.size());
    const int64_t surplus = std::min(local[k] - static_cast<int64_t>(topic.base) * members, members);
    if (surplus <= 0) continue;
    int64_t left = surplus;
    for (int32_t r : gains) {
      if (left > 0 && racks.of(r) == k) {
        marked.push_back(r);
        --left;
      }
    }
    const size_t offset = static_cast<size_t>(topic.column) % rows.size();
    for (size_t i = 0; i < rows.size() && left > 0; ++i) {
      const int32_t r = rows[(offset + i) % rows.size()];
      if (std::binary_search(gains.begin(), gains.end(), r)) continue;
      marked.push_back(r);
      --left;
    }
  }
  std::sort(marked.begin(), marked.end());
  return marked;
}

// Deals out the free partitions of one topic, rack-aware: a maximum flow from
// classes of partitions (same racks) to racks (capacity: what the rack's
// members still take) fixes how many of each class go to each rack, then each
// rack's members in id order take them, and what is left fills the members
// still below quota in `candidates` order. `room[r]` is what member r still
// takes; it is consumed.
void dealInRack(const Racks& racks, const Topic& topic, const std::vector<int32_t>& spare,
                const std::vector<int32_t>& candidates, std::vector<int32_t>& room,
                const std::vector<std::vector<protocol::TopicPartition>*>& slots) {
  const int32_t nr = racks.count();
  std::vector<int64_t> rackRoom(static_cast<size_t>(nr), 0);
  for (int32_t r : candidates) {
    if (racks.of(r) >= 0) rackRoom[racks.of(r)] += room[r];
  }
  // Classes in order of their rack lists (a map: deterministic).
  std::map<std::vector<int32_t>, std::vector<int32_t>> classes;
  for (int32_t p : spare) {
    const auto& ks = racks.partition(topic.racked, p);
    if (!ks.empty()) classes[ks].push_back(p);
  }
  std::vector<const std::vector<int32_t>*> classRacks;
  std::vector<const std::vector<int32_t>*> classParts;
  for (auto& [ks, ps] : classes) {
    classRacks.push_back(&ks);
    classParts.push_back(&ps);
  }
  const int32_t nc = static_cast<int32_t>(classRacks.size());
  std::vector<int64_t> sent(static_cast<size_t>(nc), 0);
  std::vector<int64_t> taken(static_cast<size_t>(nr), 0);
  std::vector<std::vector<int64_t>> flow(static_cast<size_t>(nc), std::vector<int64_t>(static_cast<size_t>(nr), 0));
  // Augmenting paths source -> class -> rack (-> class -> rack)* -> sink,
  // breadth first; nodes 0..nc-1 are classes, nc..nc+nr-1 racks.
  for (;;) {
    std::vector<int32_t> from(static_cast<size_t>(nc + nr), -2);
    std::vector<int32_t> queue;
    for (int32_t c = 0; c < nc; ++c) {
      if (sent[c] < static_cast<int64_t>(classParts[c]->size())) {
        from[c] = -1;
        queue.push_back(c);
      }
    }
    int32_t end = -1;
    for (size_t at = 0; at < queue.size() && end < 0; ++at) {
      const int32_t u = queue[at];
      if (u < nc) {
        for (int32_t k : *classRacks[u]) {
          if (from[nc + k] != -2) continue;
          from[nc + k] = u;
          if (taken[k] < rackRoom[k]) {
            end = nc + k;
            break;
          }
          queue.push_back(nc + k);
        }
      } else {
        const int32_t k = u - nc;
        for (int32_t c = 0; c < nc; ++c) {
          if (from[c] == -2 && flow[c][k] > 0) {
            from[c] = u;
            queue.push_back(c);
          }
        }
      }
    }
    if (end < 0) break;
    // Bottleneck along the path.
    int64_t amount = rackRoom[end - nc] - taken[end - nc];
    int32_t start = end;
    for (; from[start] != -1; start = from[start]) {
      const int32_t u = from[start];
      if (u >= nc) amount = std::min(amount, flow[start][u - nc]);  // rack u -> class undoes flow
    }
    amount = std::min(amount, static_cast<int64_t>(classParts[start]->size()) - sent[start]);
    int32_t v = end;
    while (from[v] != -1) {
      const int32_t u = from[v];
      if (u < nc) {
        flow[u][v - nc] += amount;
      } else {
        flow[v][u - nc] -= amount;
      }
      v = u;
    }
    sent[v] += amount;
    taken[end - nc] += amount;
  }

  std::vector<uint8_t> placed(static_cast<size_t>(topic.count), 0);
  std::vector<size_t> cursor(static_cast<size_t>(nr), 0);
  for (int32_t c = 0; c < nc; ++c) {
    size_t next = 0;
    for (int32_t k : *classRacks[c]) {
      const auto& rows = racks.rows(k);
      for (int64_t i = 0; i < flow[c][k]; ++i) {
        while (room[rows[cursor[k]]] == 0) ++cursor[k];
        const int32_t r = rows[cursor[k]];
        const int32_t p = (*classParts[c])[next++];
        slots[r]->push_back({*topic.name, p});
        placed[p] = 1;
        --room[r];
      }
    }
  }
  size_t next = 0;
  for (int32_t r : candidates) {
    for (; room[r] > 0; --room[r]) {
      while (next < spare.size() && placed[spare[next]]) ++next;
      if (next == spare.size()) break;
      slots[r]->push_back({*topic.name, spare[next++]});
    }
  }
}

Assignment assign(const std::vector<std::string>& members, const std::map<std::string, int32_t>& partitions,
                  const Assignment& previous, const RackInfo& rackInfo) {
  std::vector<std::string> ids(members);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  Assignment result;
  if (ids.empty()) return result;
  const int32_t n = static_cast<int32_t>(ids.size());

  std::vector<std::vector<protocol::TopicPartition>*> slots;
  slots.reserve(ids.size());
  for (const auto& id : ids) slots.push_back(&result.emplace_hint(result.end(), id, std::vector<protocol::TopicPartition>{})->second);

  Racks racks(ids, rackInfo);

  // Previous owner (member index, -1 if none) of every partition, all topics
  // in one array. The name index is a hash map: it is only looked up, never
  // iterated, so it cannot affect the result, and with thousands of topics
  // ordered-map lookups were most of the time spent outside the flow.
  std::vector<Topic> topics;
  std::unordered_map<std::string_view, size_t> topicIndex;
  size_t totalPartitions = 0;
  for (const auto& [name, count] : partitions) {
    if (count <= 0) continue;
    topicIndex.emplace(name, topics.size());
    topics.push_back({&name, count, count / n, count % n, -1, totalPartitions});
    if (racks.any()) topics.back().racked = racks.addTopic(name, count);
    totalPartitions += static_cast<size_t>(count);
  }
  std::vector<int32_t> owner(totalPartitions, -1);

  // Who held what: the map is in id order, so a partition claimed twice goes
  // to the smallest current id.
  for (const auto& [member, held] : previous) {
    auto m = std::lower_bound(ids.begin(), ids.end(), member);
    if (m == ids.end() || *m != member) continue;
    const int32_t row = static_cast<int32_t>(m - ids.begin());
    for (const auto& tp : held) {
      auto t = topicIndex.find(tp.topic);
      if (t == topicIndex.end()) continue;
      const Topic& topic = topics[t->second];
      if (tp.partition < 0 || tp.partition >= topic.count) continue;
      int32_t& o = owner[topic.first + static_cast<size_t>(tp.partition)];
      if (o < 0) o = row;
    }
  }

  // Gain pairs: members that held more than q_t of a topic with extras; rack
  // pairs where racks count.
  std::vector<int32_t> need;
  std::vector<std::vector<int32_t>> gainRows;
  std::vector<std::vector<int32_t>> rackRows;
  std::vector<int32_t> held(ids.size(), 0);
  std::vector<int32_t> touched;
  for (Topic& topic : topics) {
    if (topic.extras == 0) continue;
    topic.column = static_cast<int32_t>(need.size());
    need.push_back(topic.extras);
    std::vector<int32_t> gains;
    for (int32_t p = 0; p < topic.count; ++p) {
      const int32_t o = owner[topic.first + static_cast<size_t>(p)];
      if (o < 0) continue;
      if (held[o]++ == 0) touched.push_back(o);
    }
    for (int32_t r : touched) {
      if (held[r] > topic.base) gains.push_back(r);
      held[r] = 0;
    }
    touched.clear();
    std::sort(gains.begin(), gains.end());
    if (topic.racked >= 0) {
      rackRows.resize(need.size());
      rackRows.back() = rackPairs(racks, topic, gains);
    }
    gainRows.push_back(std::move(gains));
  }

  std::vector<std::vector<int32_t>> colRows;
  if (!need.empty()) colRows = ExtrasSolver(n, std::move(need), std::move(gainRows), std::move(rackRows)).solve();

  // Deal each topic out: keep previous partitions up to quota, then fill.
  std::vector<uint8_t> extra(ids.size(), 0);
  std::vector<int32_t> spare;
  std::vector<int32_t> room;
  std::vector<int32_t> everyone;
  const std::vector<int32_t> kNone;
  for (const Topic& topic : topics) {
    const std::vector<int32_t>& withExtra = topic.column >= 0 ? colRows[topic.column] : kNone;
    for (int32_t r : withExtra) extra[r] = 1;
    spare.clear();
    if (topic.racked >= 0) {
      // Rack-aware: of what a member held, its in-rack partitions are kept
      // first; as many are kept as without racks.
      std::vector<uint8_t> kept(static_cast<size_t>(topic.count), 0);
      for (int pass = 0; pass < 2; ++pass) {
        for (int32_t p = 0; p < topic.count; ++p) {
          const int32_t o = owner[topic.first + static_cast<size_t>(p)];
          if (o < 0 || kept[p] || (pass == 0 && !racks.inRack(o, topic.racked, p))) continue;
          if (held[o] < topic.base + extra[o]) {
            if (held[o]++ == 0) touched.push_back(o);
            slots[o]->push_back({*topic.name, p});
            kept[p] = 1;
          }
        }
      }
      for (int32_t p = 0; p < topic.count; ++p) {
        if (!kept[p]) spare.push_back(p);
      }
      if (topic.base > 0 && everyone.empty()) {
        everyone.resize(ids.size());
        std::iota(everyone.begin(), everyone.end(), 0);
      }
      const std::vector<int32_t>& candidates = topic.base > 0 ? everyone : withExtra;
      room.assign(ids.size(), 0);
      for (int32_t r : candidates) room[r] = topic.base + extra[r] - held[r];
      dealInRack(racks, topic, spare, candidates, room, slots);
    } else {
      for (int32_t p = 0; p < topic.count; ++p) {
        const int32_t o = owner[topic.first + static_cast<size_t>(p)];
        if (o >= 0 && held[o] < topic.base + extra[o]) {
          if (held[o]++ == 0) touched.push_back(o);
          slots[o]->push_back({*topic.name, p});
        } else {
          spare.push_back(p);
        }
      }
      size_t next = 0;
      auto fill = [&](int32_t r) {
        for (int32_t k = held[r]; k < topic.base + extra[r] && next < spare.size(); ++k) {
          slots[r]->push_back({*topic.name, spare[next++]});
        }
      };
      if (topic.base > 0) {
        for (int32_t r = 0; r < n; ++r) fill(r);  // count >= n here, so this is O(count)
      } else {
        for (int32_t r : withExtra) fill(r);
      }
    }
    for (int32_t r : touched) held[r] = 0;
    touched.clear();
    for (int32_t r : withExtra) extra[r] = 0;
  }

  for (auto* s : slots) std::sort(s->begin(), s->end());
  return result;
}

}  // namespace

Assignment assignPartitions(const std::vector<std::string>& members,
                            const std::map<std::string, int32_t>& partitions,
                            const Assignment& previous) {
  return assign(members, partitions, previous, RackInfo{});
}

Assignment assignPartitions(const std::vector<std::string>& members,
                            const std::map<std::string, int32_t>& partitions,
                            const Assignment& previous,
                            const RackInfo& racks) {
  return assign(members, partitions, previous, racks);
}

size_t countInRack(const Assignment& assignment, const RackInfo& racks) {
  size_t in = 0;
  for (const auto& [member, held] : assignment) {
    auto rack = racks.members.find(member);
    if (rack == racks.members.end() || rack->second.empty()) continue;
    for (const auto& tp : held) {
      auto topic = racks.replicas.find(tp.topic);
      if (topic == racks.replicas.end() || tp.partition < 0 ||
          static_cast<size_t>(tp.partition) >= topic->second.size())
        continue;
      if (topic->second[static_cast<size_t>(tp.partition)].count(rack->second)) ++in;
    }
  }
  return in;
}

size_t countMoves(const Assignment& before, const Assignment& after) {
  // The claims each member held that its `after` no longer gives it (one
  // walk: both are sorted by member), then, for each partition `after`
  // gives, whether such a claim makes it a move. No index of every
  // partition: in a 10,000-member group building one took longer than the
  // assignment itself.
  using Ref = const protocol::TopicPartition*;
  auto less = [](Ref x, Ref y) { return *x < *y; };
  auto sortedRefs = [&](const std::vector<protocol::TopicPartition>* ps, std::vector<Ref>& out) {
    out.clear();
    if (ps != nullptr) {
      for (const auto& tp : *ps) out.push_back(&tp);
    }
    std::sort(out.begin(), out.end(), less);
  };
  auto find = [](const Assignment& in, Assignment::const_iterator& it, const std::string& member) {
    while (it != in.end() && it->first < member) ++it;
    return it != in.end() && it->first == member ? &it->second : nullptr;
  };
  struct Claim {
    Ref partition;
    const std::string* member;
  };
  std::vector<Claim> gone;
  std::vector<Ref> refs;
  auto a = after.begin();
  for (const auto& [member, held] : before) {
    sortedRefs(find(after, a, member), refs);
    for (const auto& tp : held) {
      if (!std::binary_search(refs.begin(), refs.end(), &tp, less)) gone.push_back({&tp, &member});
    }
  }
  if (gone.empty()) return 0;
  std::sort(gone.begin(), gone.end(), [](const Claim& x, const Claim& y) {
    return *x.partition != *y.partition ? *x.partition < *y.partition : *x.member < *y.member;
  });
  auto claimLess = [](const Claim& c, Ref p) { return *c.partition < *p; };
  size_t moves = 0;
  auto b = before.begin();
  for (const auto& [member, ps] : after) {
    sortedRefs(find(before, b, member), refs);  // what it held, and keeps
    for (const auto& tp : ps) {
      auto first = std::lower_bound(gone.begin(), gone.end(), &tp, claimLess);
      if (first == gone.end() || *first->partition != tp) continue;  // nobody else held it
      // Its holder was the smallest id claiming it: `first`, unless this
      // member held it too, with a smaller id.
      const bool keptByOwner = std::binary_search(refs.begin(), refs.end(), &tp, less) && member < *first->member;
      if (!keptByOwner) ++moves;
    }
  }
  return moves;
}

}  // namespace groupcoord::adapter
