#pragma once

// groupcoordd's HTTP endpoints, on a port of their own (Poco's HTTPServer):
//
//   GET /metrics       200, the registry in the Prometheus text format
//   GET /health/live   200 "live" while the process serves HTTP at all
//   GET /health/ready  200 "ready", or 503 with a one-line reason
//
// and, with a StatusSource (server/StatusSource.h), the status page and its
// JSON (server/StatusPage.h):
//
//   GET /                  the fleet: servers, the groups each controls, every group
//   GET /groups/<name>     one group: members, partitions, offsets, history
//   GET /api/fleet         the servers as JSON
//   GET /api/groups        every group as JSON
//   GET /api/groups/<name> one group in full (the DescribeGroup answer) as JSON
//
// With credentials, those require HTTP Basic credentials of an admin (401
// with WWW-Authenticate otherwise); /metrics and /health/* stay open. A
// bad group name answers 404, a failure to get the answer a JSON (or HTML)
// error with its name and a sentence. With TLS files the port speaks
// HTTPS only (TLS 1.2 and newer), with this server's certificate.
//
// Any other path answers 404, any other method 405 (with Allow: GET), a GET
// with a body 400, and a request Poco's parser refuses (an over-long URI or
// header, too many header fields, malformed lines) 400. The server has a
// fixed number of threads (maxThreads) and a bounded queue of accepted
// connections waiting for one (maxQueued; past it, connections are closed);
// a connection silent for `timeout` is closed.
//
// Threads: start() and stop() from one owning thread. The registry's
// collect functions and `readiness` run on the HTTP threads.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "metrics/Registry.h"
#include "server/StatusSource.h"

namespace groupcoord::server {

class CredentialStore;

struct HttpOptions {
  std::string address = "127.0.0.1";  // numeric IPv4 or IPv6, or a resolvable name
  uint16_t port = 0;                   // 0: any free port; port() tells which
  int maxThreads = 2;
  int maxQueued = 32;
  std::chrono::milliseconds timeout{5000};
  // Null: no status page (/ and /api/ answer 404).
  std::shared_ptr<StatusSource> status;
  // Set: the status page and /api/ need an admin's Basic credentials.
  std::shared_ptr<const CredentialStore> credentials;
  // Both set: HTTPS with this PEM certificate chain and key.
  std::string tlsCertificateFile;
  std::string tlsKeyFile;
};

class HttpServer {
 public:
  // readiness(): "" when ready, else one line saying why not. Both must
  // outlive the server (until stop() returns).
  HttpServer(HttpOptions options, const metrics::Registry& registry, std::function<std::string()> readiness);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts serving. false with *error set when that fails.
  bool start(std::string* error);
  // Stops accepting, ends open connections, joins the threads. Idempotent.
  void stop();
  // The bound port (after start()), else 0.
  uint16_t port() const { return port_; }

 private:
  struct Impl;
  HttpOptions options_;
  const metrics::Registry& registry_;
  std::function<std::string()> readiness_;
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
};

}  // namespace groupcoord::server
