#pragma once

// Path rules shared by zk::Session and zk::FakeClient, so both reject the
// same malformed paths with Error::BadArguments before anything is sent.

#include <string>
#include <string_view>

namespace groupcoord::zk {

// ZooKeeper's rules: absolute ("/" or "/a/b"), no empty component ("//"),
// no trailing '/', no "." or ".." component, no NUL or other control
// character. A sequential create may end in '/' or in "."/".." because the
// server appends the sequence number to it.
bool isValidPath(std::string_view path, bool sequential = false);

// "/a/b" -> "/a"; "/a" -> "/"; "/" -> "". Expects a valid path.
std::string parentPath(std::string_view path);

// "/a/b" -> "b"; "/" -> "". Expects a valid path.
std::string_view baseName(std::string_view path);

// joinPath("/a", "b") -> "/a/b"; joinPath("/", "b") -> "/b".
std::string joinPath(std::string_view parent, std::string_view name);

}  // namespace groupcoord::zk
