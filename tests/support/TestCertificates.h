#pragma once

// Certificates for the TLS tests, made with the openssl command line in a
// directory of the test's: ca.pem (ca.key), the CA that signs the rest;
// other.pem, a second CA that signed nothing; server.pem (server.key) for
// localhost and 127.0.0.1; client.pem (client.key), a client certificate.

#include <string>

namespace groupcoord::testing {

// "" when every file was made, else the openssl command that failed.
std::string makeTestCertificates(const std::string& dir);

}  // namespace groupcoord::testing
