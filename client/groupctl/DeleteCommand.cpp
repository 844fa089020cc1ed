#include "client/groupctl/Commands.h"

#include <iostream>

namespace groupcoord::groupctl {

using nlohmann::json;

int DeleteCommand::run() {
  allowOnly(args_, "delete", {});
  const std::string group = groupArg("delete");
  auto s = admin().deleteGroup(group);
  if (!s.ok()) return fail(s, group);
  if (json_)
    std::cout << json{{"group", group}, {"deleted", true}}.dump(2) << "\n";
  else
    std::cout << "deleted group " << group << "\n";
  return kExitOk;
}

}  // namespace groupcoord::groupctl
