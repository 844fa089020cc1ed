// Uses the installed headers and library: builds an Admin (no server
// needed) and encodes a request with the codec.
#include <client/Admin.h>
#include <client/Consumer.h>
#include <protocol/Codec.h>

#include <iostream>

int main() {
  groupcoord::client::Admin admin({{"127.0.0.1", 7400}});
  std::vector<uint8_t> frame;
  groupcoord::protocol::encodeRequest({}, groupcoord::protocol::ListGroupsRequest{}, frame);
  std::cout << "encoded a ListGroups frame of " << frame.size() << " bytes" << std::endl;
  return frame.size() == 22 ? 0 : 1;
}
