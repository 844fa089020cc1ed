#pragma once

// Files of the repository that are printed from a table in the code (the
// options from common/Options.h, the field tables from protocol/Messages.h):
// the tools that write them and the tests that check them share this.

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace groupcoord::generated {

// One file of a checkout and what the code says it must hold.
struct GeneratedFile {
  std::string path;   // relative to the checkout, "packaging/groupcoordd.properties"
  std::string want;   // its whole content
  std::string error;  // set when the content could not be worked out (a marker missing)
};

// The whole content of the file at `path`; "" when it cannot be read.
inline std::string fileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Writes (`write`) or checks each file under the checkout `root`, saying on
// standard output what it wrote and on standard error what is stale, named
// by `tool` and the `source` it is printed from. The exit status for the
// tool: 0 when every file is current or was written, 1 otherwise.
inline int syncFiles(const std::string& root, const std::vector<GeneratedFile>& files, bool write,
                     std::string_view tool, std::string_view source) {
  int stale = 0;
  for (const GeneratedFile& f : files) {
    if (!f.error.empty()) {
      std::cerr << tool << ": " << f.error << '\n';
      return 1;
    }
    const std::string path = root + "/" + f.path;
    if (fileText(path) == f.want) continue;
    if (!write) {
      std::cerr << f.path << " is not what " << source << " prints: run scripts/dev.sh generate\n";
      ++stale;
      continue;
    }
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << f.want;
    if (!out) {
      std::cerr << tool << ": cannot write " << path << '\n';
      return 1;
    }
    std::cout << "wrote " << f.path << '\n';
  }
  return stale == 0 ? 0 : 1;
}

}  // namespace groupcoord::generated
