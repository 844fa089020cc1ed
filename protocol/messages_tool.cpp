// groupcoord-messages: prints what comes from the messages' descriptions
// (protocol/MessageDocs.h) into a checkout, or checks that it is current.
//
//   groupcoord-messages --check DIR   exit 1 naming every stale file
//   groupcoord-messages --write DIR   write the stale ones
//   groupcoord-messages --print NAME  python | a block of docs/protocol.md ("Heartbeat", "MemberState")

#include <iostream>
#include <string>
#include <vector>

#include "common/GeneratedFiles.h"
#include "protocol/MessageDocs.h"

namespace {

constexpr const char* kUsage =
    "usage: groupcoord-messages --check DIR | --write DIR | --print python|NAME\n"
    "  --check DIR   compare python/groupcoord/_layouts.py and the field tables of docs/protocol.md in the\n"
    "                checkout DIR with what protocol/Messages.h describes; exit 1 naming each stale file\n"
    "  --write DIR   write those that differ\n"
    "  --print NAME  print the Python table (python), or one block of docs/protocol.md: an API\n"
    "                (Heartbeat), a structure (MemberState) or 'shared structures'\n";

}  // namespace

int main(int argc, char** argv) {
  using namespace groupcoord::protocol::docs;
  if (argc != 3) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string mode = argv[1];
  const std::string arg = argv[2];
  if (mode == "--print") {
    const std::string text = arg == "python" ? pythonLayouts() : fieldsBlock(arg);
    if (text.empty()) {
      std::cerr << "groupcoord-messages: nothing called '" << arg << "' to print\n" << kUsage;
      return 2;
    }
    std::cout << text;
    return 0;
  }
  if (mode != "--check" && mode != "--write") {
    std::cerr << kUsage;
    return 2;
  }
  std::string error;
  std::vector<groupcoord::generated::GeneratedFile> files{
      {"python/groupcoord/_layouts.py", pythonLayouts(), ""},
      {"docs/protocol.md", withFieldBlocks(groupcoord::generated::fileText(arg + "/docs/protocol.md"), &error), ""}};
  files[1].error = error;
  return groupcoord::generated::syncFiles(arg, files, mode == "--write", "groupcoord-messages", "protocol/Messages.h");
}
