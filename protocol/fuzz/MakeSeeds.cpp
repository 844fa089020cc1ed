// Writes the codec tests' sample messages (tests/protocol/Samples.h) as seed
// inputs for the fuzzer: each request and response as a whole frame and as a
// bare body. scripts/fuzz.sh runs it into a scratch corpus beside the
// committed one (protocol/fuzz/corpus/, made from the shared vectors).
//
//   groupcoord_fuzz_seeds DIR

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "protocol/Codec.h"
#include "protocol/Samples.h"

namespace {

std::string slug(const std::string& name) {
  std::string out;
  for (const char c : name) out.push_back((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ? c : '-');
  return out;
}

bool writeFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(f);
}

// The frame, and the frame without its 4-byte Size.
bool writeBoth(const std::string& dir, const std::string& name, const std::vector<uint8_t>& frame) {
  return writeFile(dir + "/" + name + ".frame", frame) &&
         writeFile(dir + "/" + name + ".body", std::vector<uint8_t>(frame.begin() + 4, frame.end()));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace groupcoord::protocol;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR (an existing directory)\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  int written = 0;
  for (const auto& s : testing::requestSamples()) {
    std::vector<uint8_t> frame;
    encodeRequest(s.header, s.request, frame);
    if (!writeBoth(dir, "sample-request-" + slug(s.name), frame)) {
      std::fprintf(stderr, "cannot write seeds into %s\n", dir.c_str());
      return 1;
    }
    written += 2;
  }
  for (const auto& s : testing::responseSamples()) {
    std::vector<uint8_t> frame;
    encodeResponse(s.header, s.response, frame);
    if (!writeBoth(dir, "sample-response-" + slug(s.name), frame)) {
      std::fprintf(stderr, "cannot write seeds into %s\n", dir.c_str());
      return 1;
    }
    written += 2;
  }
  std::printf("%d seed files written to %s\n", written, dir.c_str());
  return 0;
}
