#pragma once

// groupcoordd's HTTP endpoints, on a port of their own:
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
//   GET /api/servers       the servers with their load and the groups that should
//                          move (the document of `groupctl servers --output json`)
//
// With credentials, those require HTTP Basic credentials of an admin (401
// with WWW-Authenticate otherwise); /metrics and /health/* stay open. A
// bad group name answers 404, a failure to get the answer a JSON (or HTML)
// error with its name and a sentence. With TLS files the port speaks
// HTTPS only (TLS 1.2 and newer), with this server's certificate.
//
// Any other path answers 404, any other method 405 (with Allow: GET), a GET
// with a body 400, and a head that is not HTTP/1.x or is over its limits
// (server/HttpHead.h) 400; each of those closes the connection.
//
// How it stays up under slow and idle clients (docs/design.md, "The HTTP
// port"): one thread runs every connection on a reactor (server/net/Reactor.h),
// reading heads and writing answers without blocking, and holds each to a deadline:
// headTimeout from a head's first byte (for HTTPS, from the accept: the
// handshake counts) and idleTimeout between requests. The connections are
// capped overall and per source address; a new connection past a cap takes
// the place of the one of that address (or, past the overall cap, of any
// address) that has waited longest for a head, and only when none is
// waiting is the newcomer refused. /health/* is answered by that thread
// itself, /metrics by a thread of its own, and the status pages by a pool
// of statusThreads with a bounded queue (503 past it), so a slow status
// page never holds up a probe or a scrape.
//
// Threads: start() and stop() from one owning thread. `readiness` runs on
// the connection thread, the registry's collect functions on the /metrics
// thread, the StatusSource on the pool.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/Options.h"
#include "common/Permissions.h"
#include "metrics/Registry.h"
#include "server/StatusSource.h"

namespace groupcoord::server {

class CredentialStore;

struct HttpOptions {
  std::string address = "127.0.0.1";  // numeric IPv4 or IPv6, or a resolvable name
  uint16_t port = 0;                   // 0: any free port; port() tells which
  int statusThreads = options::defaultInt("http.status.threads");  // threads answering the status pages and /api/
  int statusQueue = options::defaultInt("http.status.queue");  // status requests waiting for one; past it 503
  int maxConnections = options::defaultInt("http.max.connections");  // open HTTP connections, all addresses
  int maxConnectionsPerSource = options::defaultInt("http.max.connections.per.source");  // from one source address
  int maxRequestsPerConnection = 100;  // then the connection closes after its answer
  std::chrono::milliseconds headTimeout{options::defaultInt("http.head.timeout.ms")};   // a whole request head, from its first byte
  std::chrono::milliseconds idleTimeout{options::defaultInt("http.idle.timeout.ms")};   // between requests (and before the first)
  std::chrono::milliseconds writeTimeout{options::defaultInt("http.write.timeout.ms")};  // an answer going out with no progress
  // Null: no status page (/ and /api/ answer 404).
  std::shared_ptr<StatusSource> status;
  // Set: the status page and /api/ need an admin's Basic credentials.
  std::shared_ptr<const CredentialStore> credentials;
  // Set too (auth.permissions.file): any user of the credentials may look,
  // and sees only the groups the rules in force let it describe.
  std::function<std::shared_ptr<const permissions::Policy>()> permissions;
  // Both set: HTTPS with this PEM certificate chain and key.
  std::string tlsCertificateFile;
  std::string tlsKeyFile;
};

// Why the port closed connections it did not want to keep, counted since
// start (metrics family groupcoord_http_connections_closed_total).
enum class HttpClose : int {
  HeadTimeout,      // no whole head within headTimeout
  IdleTimeout,      // nothing within idleTimeout between requests
  WriteTimeout,     // the answer made no progress within writeTimeout
  Displaced,        // a newer connection past a cap took its place
  Refused,          // past a cap with no connection to displace
  BadRequest,       // a head refused with 400 (or a method, or a GET with a body)
  TlsFailed,        // the TLS handshake failed
  kCount
};
const char* httpCloseName(HttpClose reason);

struct HttpStats {
  uint64_t connectionsOpen = 0;
  uint64_t connectionsAccepted = 0;
  uint64_t requests = 0;
  uint64_t statusBusy = 0;  // status requests answered 503 for a full queue
  uint64_t closed[static_cast<int>(HttpClose::kCount)] = {};
};

// The HTTP port's families (groupcoord_http_*) reading `stats`.
void registerHttpMetrics(metrics::Registry& registry, std::function<HttpStats()> stats);

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
  // Any thread, after start().
  HttpStats stats() const;

 private:
  struct Impl;
  HttpOptions options_;
  const metrics::Registry& registry_;
  std::function<std::string()> readiness_;
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
};

}  // namespace groupcoord::server
