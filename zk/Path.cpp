#include "zk/Path.h"

namespace groupcoord::zk {

bool isValidPath(std::string_view path, bool sequential) {
  if (path.empty() || path.front() != '/') return false;
  if (path.size() == 1) return true;
  if (path.back() == '/' && !sequential) return false;

  // Walk the components between slashes.
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    bool last = end == std::string_view::npos;
    if (last) end = path.size();
    std::string_view component = path.substr(start, end - start);
    if (component.empty()) {
      // "//" inside, or the trailing '/' a sequential create may have.
      if (!(last && sequential)) return false;
      if (end != path.size()) return false;
    }
    if ((component == "." || component == "..") && !(last && sequential)) return false;
    for (unsigned char c : component) {
      // NUL would silently cut the path short in the C client; the server
      // refuses the other control characters and DEL.
      if (c < 0x20 || c == 0x7f) return false;
    }
    if (last) break;
    start = end + 1;
    if (start == path.size()) {
      // Trailing '/' (only reachable for sequential creates).
      break;
    }
  }
  return true;
}

std::string parentPath(std::string_view path) {
  if (path.size() <= 1) return {};
  size_t slash = path.rfind('/');
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

std::string_view baseName(std::string_view path) {
  if (path.size() <= 1) return {};
  return path.substr(path.rfind('/') + 1);
}

std::string joinPath(std::string_view parent, std::string_view name) {
  std::string out(parent);
  if (out.empty() || out.back() != '/') out.push_back('/');
  out.append(name);
  return out;
}

}  // namespace groupcoord::zk
