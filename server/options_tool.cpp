// groupcoord-options: prints the files that come from the option table
// (server/OptionDocs.h) into a checkout, or checks that they are current.
//
//   groupcoord-options --check DIR   exit 1 naming every stale file
//   groupcoord-options --write DIR   write the stale ones
//   groupcoord-options --print NAME  properties | markdown | first-table

#include <iostream>
#include <string>

#include "server/OptionDocs.h"

namespace {

constexpr const char* kUsage =
    "usage: groupcoord-options --check DIR | --write DIR | --print properties|markdown|first-table\n"
    "  --check DIR  compare packaging/groupcoordd.properties, docs/options.md and README.md's table of first\n"
    "               options in the checkout DIR with what common/Options.h prints; exit 1 naming each stale one\n"
    "  --write DIR  write those that differ\n"
    "  --print ...  print one to standard output\n";


}  // namespace

int main(int argc, char** argv) {
  using namespace groupcoord::server;
  if (argc != 3) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string mode = argv[1];
  const std::string arg = argv[2];
  if (mode == "--print") {
    if (arg == "properties") {
      std::cout << propertiesFile();
    } else if (arg == "markdown") {
      std::cout << optionsMarkdown();
    } else if (arg == "first-table") {
      std::cout << firstOptionsTable();
    } else {
      std::cerr << "groupcoord-options: nothing called '" << arg << "' to print\n" << kUsage;
      return 2;
    }
    return 0;
  }
  if (mode != "--check" && mode != "--write") {
    std::cerr << kUsage;
    return 2;
  }
  return groupcoord::generated::syncFiles(arg, generatedFiles(arg), mode == "--write", "groupcoord-options",
                                         "common/Options.h");
}
