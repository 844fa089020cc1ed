#include "support/TestCertificates.h"

#include <cstdlib>
#include <fstream>
#include <vector>

namespace groupcoord::testing {

std::string makeTestCertificates(const std::string& d) {
  {
    std::ofstream san(d + "/san.cnf", std::ios::trunc);
    san << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
  }
  const std::string signedByCa = " -CA " + d + "/ca.pem -CAkey " + d + "/ca.key -CAcreateserial -days 2 ";
  const std::vector<std::string> steps{
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=groupcoord-test-ca -keyout " + d + "/ca.key -out " +
          d + "/ca.pem",
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=groupcoord-other-ca -keyout " + d +
          "/other.key -out " + d + "/other.pem",
      "openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout " + d + "/server.key -out " + d + "/server.csr",
      "openssl x509 -req -in " + d + "/server.csr" + signedByCa + "-extfile " + d + "/san.cnf -out " + d + "/server.pem",
      "openssl req -newkey rsa:2048 -nodes -subj /CN=groupcoord-test-client -keyout " + d + "/client.key -out " + d +
          "/client.csr",
      "openssl x509 -req -in " + d + "/client.csr" + signedByCa + "-out " + d + "/client.pem",
  };
  for (const auto& step : steps) {
    if (std::system((step + " >/dev/null 2>&1").c_str()) != 0) return step;
  }
  return "";
}

}  // namespace groupcoord::testing
