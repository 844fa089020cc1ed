// DescribeServers (docs/protocol.md, "12 DescribeServers"): the fleet's
// placement as this server computes it (docs/design.md, "Placement"), with
// where clients reach each live server.

#include <algorithm>
#include <cstdint>
#include <limits>

#include "adapter/Coordinator.h"
#include "protocol/Codec.h"

namespace groupcoord::adapter {

using protocol::Caller;
using protocol::ErrorCode;
using protocol::ResponseCallback;

namespace {

// The wire's numbers are signed; a weight beyond int64 cannot happen, but
// is held at the largest rather than turned negative.
int64_t wireInt64(uint64_t v) {
  return static_cast<int64_t>(std::min<uint64_t>(v, static_cast<uint64_t>(std::numeric_limits<int64_t>::max())));
}

int32_t wireInt32(uint64_t v) {
  return static_cast<int32_t>(std::min<uint64_t>(v, static_cast<uint64_t>(std::numeric_limits<int32_t>::max())));
}

}  // namespace

void Coordinator::route(const Caller& caller, const protocol::RequestHeader&, protocol::DescribeServersRequest r,
                        ResponseCallback& done) {
  // Without ZooKeeper the view is whatever was last read, with no way to
  // tell how old: the caller is told to retry (here or on another server).
  if (!connected_) {
    return done(protocol::errorResponse(protocol::Request(r), ErrorCode::CONTROLLER_NOT_AVAILABLE));
  }
  const PlacementView view = placementView();
  protocol::DescribeServersResponse out;
  out.server = view.server >= 0 ? view.server : config_.serverId;
  out.epsilonPermille = wireInt32(view.epsilonPermille);
  out.marginPermille = wireInt32(view.marginPermille);
  out.weighting = view.weighting;
  out.groupWeight = wireInt64(view.groupWeight);
  out.total = wireInt64(view.total);
  out.bound = wireInt64(view.bound);
  out.complete = view.complete;
  // A caller inside the servers' network (the internal listener) is given
  // the internal addresses, as every controller address it is answered.
  const Reach reach = caller.internal ? Reach::Internal : Reach::Client;
  out.servers.reserve(view.servers.size());
  for (const auto& s : view.servers) {
    const protocol::Broker at = servers_.brokerOf(s.id, reach);
    protocol::ServerPlacement p;
    p.id = s.id;
    p.host = at.host;  // "" while its address has not been read yet
    p.port = at.port;
    p.drained = s.drained;
    p.settled = s.settled;
    p.candidate = s.candidate;
    p.load = wireInt64(s.load);
    p.groups = wireInt32(s.groups);
    p.placed = wireInt64(s.placed);
    out.servers.push_back(std::move(p));
  }
  out.moves.reserve(view.moves.size());
  for (const auto& m : view.moves) {
    out.moves.push_back(protocol::GroupMove{m.group, wireInt64(m.weight), m.controller, m.target});
  }
  done(std::move(out));
}

}  // namespace groupcoord::adapter
