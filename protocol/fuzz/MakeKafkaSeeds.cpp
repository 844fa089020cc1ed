// Writes the Kafka fuzzer's seeds: each sample request of
// tests/protocol/KafkaSamples.h at every served version, as a whole frame
// and as a bare body, with the ApiVersions answer at each of its versions.
// scripts/fuzz.sh runs it into a scratch corpus beside the committed one
// (protocol/fuzz/kafka-corpus/, which also keeps frames Kafka clients sent).
//
//   groupcoord_fuzz_kafka_seeds DIR

#include <cstdio>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

#include "protocol/KafkaSamples.h"
#include "protocol/kafka/Codec.h"

namespace {

bool writeFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(f);
}

// The frame, and the frame without its 4-byte Size.
bool writeBoth(const std::string& path, const std::vector<uint8_t>& frame) {
  return writeFile(path + ".frame", frame) &&
         writeFile(path + ".body", std::vector<uint8_t>(frame.begin() + 4, frame.end()));
}

}  // namespace

int main(int argc, char** argv) {
  namespace kafka = groupcoord::protocol::kafka;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR (an existing directory)\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  int written = 0;
  bool ok = true;
  for (const kafka::Request& q : kafka::samples::requestSamples()) {
    const auto [oldest, newest] = kafka::samples::versionRange(q);
    const int16_t key = std::visit([](const auto& m) { return static_cast<int16_t>(m.kApiKey); }, q);
    for (int16_t v = oldest; v <= newest; ++v) {
      std::vector<uint8_t> frame;
      kafka::encodeRequest(kafka::RequestHeader{key, v, 7, "seed"}, q, frame);
      ok = ok && writeBoth(dir + "/request-" + std::string(kafka::apiName(key)) + "-v" + std::to_string(v), frame);
      written += 2;
    }
  }
  for (int16_t v = 0; v <= kafka::ApiVersionsResponse::kMaxVersion; ++v) {
    std::vector<uint8_t> frame;
    kafka::encodeResponse(7, v, kafka::apiVersionsResponse(), frame);
    ok = ok && writeBoth(dir + "/response-ApiVersions-v" + std::to_string(v), frame);
    written += 2;
  }
  if (!ok) {
    std::fprintf(stderr, "cannot write seeds into %s\n", dir.c_str());
    return 1;
  }
  std::printf("%d seed files written to %s\n", written, dir.c_str());
  return 0;
}
