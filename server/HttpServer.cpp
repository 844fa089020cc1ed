#include "server/HttpServer.h"

#include <Poco/Exception.h>
#include <Poco/Net/Context.h>
#include <Poco/Net/HTTPBasicCredentials.h>
#include <Poco/Net/HTTPRequestHandler.h>
#include <Poco/Net/HTTPRequestHandlerFactory.h>
#include <Poco/Net/HTTPServer.h>
#include <Poco/Net/HTTPServerParams.h>
#include <Poco/Net/HTTPServerRequest.h>
#include <Poco/Net/HTTPServerResponse.h>
#include <Poco/Net/SSLManager.h>
#include <Poco/Net/SecureServerSocket.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/SocketAddress.h>
#include <Poco/ThreadPool.h>
#include <Poco/URI.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>
#include <ostream>

#include "protocol/Codec.h"
#include "server/Auth.h"
#include "server/StatusPage.h"

namespace groupcoord::server {

namespace {

using Poco::Net::HTTPResponse;

void reply(Poco::Net::HTTPServerResponse& response, HTTPResponse::HTTPStatus status, const std::string& contentType,
           const std::string& body, bool keepAlive = true) {
  response.setStatus(status);
  response.setContentType(contentType);
  response.set("Cache-Control", "no-store");
  response.setContentLength(static_cast<std::streamsize>(body.size()));
  if (!keepAlive) response.setKeepAlive(false);
  response.send() << body;
}

// What the status routes are asked for.
struct StatusRoute {
  enum Kind { Fleet, Group, ApiFleet, ApiGroups, ApiGroup, BadGroup, None } kind = None;
  std::string group;
  bool api() const { return kind == ApiFleet || kind == ApiGroups || kind == ApiGroup; }
};

// A group's name from the rest of the path: percent-decoded, then held to
// the protocol's rule for names. Empty when it is not a valid name.
std::string groupFromPath(const std::string& rest) {
  std::string name;
  try {
    Poco::URI::decode(rest, name);
  } catch (const Poco::Exception&) {
    return "";
  }
  return protocol::isValidName(name) ? name : "";
}

StatusRoute statusRoute(const std::string& path) {
  StatusRoute r;
  auto group = [&](size_t prefix, StatusRoute::Kind kind) {
    r.group = groupFromPath(path.substr(prefix));
    r.kind = r.group.empty() ? StatusRoute::BadGroup : kind;
  };
  static const std::string kGroups = "/groups/";
  static const std::string kApiGroups = "/api/groups/";
  if (path == "/") {
    r.kind = StatusRoute::Fleet;
  } else if (path == "/api/fleet") {
    r.kind = StatusRoute::ApiFleet;
  } else if (path == "/api/groups") {
    r.kind = StatusRoute::ApiGroups;
  } else if (path.rfind(kGroups, 0) == 0) {
    group(kGroups.size(), StatusRoute::Group);
  } else if (path.rfind(kApiGroups, 0) == 0) {
    group(kApiGroups.size(), StatusRoute::ApiGroup);
    if (r.kind == StatusRoute::BadGroup) r.group = "api";
  }
  return r;
}

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class EndpointHandler final : public Poco::Net::HTTPRequestHandler {
 public:
  EndpointHandler(const HttpOptions& options, const metrics::Registry& registry,
                  const std::function<std::string()>& readiness)
      : options_(options), registry_(registry), readiness_(readiness) {}

  void handleRequest(Poco::Net::HTTPServerRequest& request, Poco::Net::HTTPServerResponse& response) override {
    // Nothing may escape into Poco's thread: a client that went away
    // mid-answer is simply gone.
    try {
      serve(request, response);
    } catch (const Poco::Exception& e) {
      spdlog::debug("HTTP: answering {} failed: {}", request.getURI(), e.displayText());
    } catch (const std::exception& e) {
      spdlog::debug("HTTP: answering {} failed: {}", request.getURI(), e.what());
    }
  }

 private:
  static constexpr const char* kText = "text/plain; charset=utf-8";
  static constexpr const char* kHtml = "text/html; charset=utf-8";
  static constexpr const char* kJson = "application/json";

  void serve(Poco::Net::HTTPServerRequest& request, Poco::Net::HTTPServerResponse& response) {
    std::string path = request.getURI();
    if (const size_t q = path.find('?'); q != std::string::npos) path.resize(q);

    if (request.getMethod() != Poco::Net::HTTPRequest::HTTP_GET) {
      // The body, if any, is not read: the connection closes after the answer.
      response.set("Allow", "GET");
      reply(response, HTTPResponse::HTTP_METHOD_NOT_ALLOWED, kText, "method not allowed: only GET is served\n",
            false);
      return;
    }
    if ((request.hasContentLength() && request.getContentLength64() > 0) || request.getChunkedTransferEncoding()) {
      reply(response, HTTPResponse::HTTP_BAD_REQUEST, kText, "a GET request carries no body\n", false);
      return;
    }
    if (path == "/metrics") {
      reply(response, HTTPResponse::HTTP_OK, metrics::kTextContentType, registry_.render());
    } else if (path == "/health/live") {
      reply(response, HTTPResponse::HTTP_OK, kText, "live\n");
    } else if (path == "/health/ready") {
      const std::string why = readiness_();
      if (why.empty()) {
        reply(response, HTTPResponse::HTTP_OK, kText, "ready\n");
      } else {
        reply(response, HTTPResponse::HTTP_SERVICE_UNAVAILABLE, kText, "not ready: " + why + "\n");
      }
    } else if (StatusRoute route = statusRoute(path); options_.status && route.kind != StatusRoute::None) {
      serveStatus(request, response, route);
    } else {
      reply(response, HTTPResponse::HTTP_NOT_FOUND, kText,
            options_.status ? "not found: serving /, /groups/NAME, /api/fleet, /api/groups, /api/groups/NAME, "
                              "/metrics, /health/live, /health/ready\n"
                            : "not found: serving /metrics, /health/live, /health/ready\n");
    }
  }

  // The admin's credentials when the request carries them (or when no
  // credentials are configured); nullopt after answering 401.
  std::optional<Viewer> authorize(Poco::Net::HTTPServerRequest& request, Poco::Net::HTTPServerResponse& response,
                                  bool api) {
    if (!options_.credentials) return Viewer{};
    std::string why = "credentials of an admin are needed (HTTP Basic)";
    if (request.hasCredentials()) {
      try {
        Poco::Net::HTTPBasicCredentials basic(request);
        const auto role = options_.credentials->verify(basic.getUsername(), basic.getPassword());
        if (role == Role::Admin) return Viewer{basic.getUsername(), basic.getPassword()};
        why = role ? "this user is not an admin" : "unknown user or wrong secret";
      } catch (const Poco::Exception&) {
        why = "only HTTP Basic credentials are accepted";
      }
    }
    response.set("WWW-Authenticate", "Basic realm=\"groupcoord\"");
    const StatusError error{protocol::ErrorCode::NOT_AUTHORIZED, why};
    reply(response, HTTPResponse::HTTP_UNAUTHORIZED, api ? kJson : kHtml,
          api ? errorJson(error) : renderErrorPage(401, error));
    return std::nullopt;
  }

  void serveStatus(Poco::Net::HTTPServerRequest& request, Poco::Net::HTTPServerResponse& response,
                   const StatusRoute& route) {
    const bool api = route.api() || (route.kind == StatusRoute::BadGroup && route.group == "api");
    const auto viewer = authorize(request, response, api);
    if (!viewer) return;
    auto fail = [&](const StatusError& error, int status) {
      reply(response, static_cast<HTTPResponse::HTTPStatus>(status), api ? kJson : kHtml,
            api ? errorJson(error) : renderErrorPage(status, error));
    };
    switch (route.kind) {
      case StatusRoute::BadGroup:
        return fail({protocol::ErrorCode::INVALID_GROUP_NAME,
                     "no such group: a group's name is 1 to 249 of A-Z, a-z, 0-9, '.', '_' and '-'"},
                    404);
      case StatusRoute::Fleet:
      case StatusRoute::ApiFleet:
      case StatusRoute::ApiGroups: {
        auto fleet = options_.status->fleet();
        if (!fleet.ok()) return fail(fleet.error, httpStatusOf(fleet.error));
        if (route.kind == StatusRoute::Fleet) {
          return reply(response, HTTPResponse::HTTP_OK, kHtml, renderFleetPage(fleet.value, nowMs()));
        }
        return reply(response, HTTPResponse::HTTP_OK, kJson,
                     route.kind == StatusRoute::ApiFleet ? fleetJson(fleet.value) : groupsJson(fleet.value));
      }
      case StatusRoute::Group:
      case StatusRoute::ApiGroup: {
        auto group = options_.status->group(route.group, *viewer);
        if (!group.ok()) return fail(group.error, httpStatusOf(group.error));
        return reply(response, HTTPResponse::HTTP_OK, api ? kJson : kHtml,
                     api ? groupJson(group.value) : renderGroupPage(group.value, nowMs()));
      }
      case StatusRoute::None:
        break;
    }
  }

  const HttpOptions& options_;
  const metrics::Registry& registry_;
  const std::function<std::string()>& readiness_;
};

class EndpointFactory final : public Poco::Net::HTTPRequestHandlerFactory {
 public:
  EndpointFactory(const HttpOptions& options, const metrics::Registry& registry,
                  const std::function<std::string()>& readiness)
      : options_(options), registry_(registry), readiness_(readiness) {}
  Poco::Net::HTTPRequestHandler* createRequestHandler(const Poco::Net::HTTPServerRequest&) override {
    return new EndpointHandler(options_, registry_, readiness_);
  }

 private:
  const HttpOptions& options_;
  const metrics::Registry& registry_;
  const std::function<std::string()>& readiness_;
};

// The HTTPS socket's context: this server's certificate and key, TLS 1.2
// and newer, no client certificate asked for (the status page
// authenticates with HTTP Basic).
Poco::Net::Context::Ptr serverTlsContext(const HttpOptions& options) {
  Poco::Net::Context::Params params;
  params.certificateFile = options.tlsCertificateFile;
  params.privateKeyFile = options.tlsKeyFile;
  params.verificationMode = Poco::Net::Context::VERIFY_NONE;
  params.cipherList = "HIGH:!aNULL:!eNULL:!MD5:!RC4";
  Poco::Net::Context::Ptr context = new Poco::Net::Context(Poco::Net::Context::TLS_SERVER_USE, params);
  context->requireMinimumProtocol(Poco::Net::Context::PROTO_TLSV1_2);
  return context;
}

}  // namespace

struct HttpServer::Impl {
  Poco::ThreadPool pool;
  std::unique_ptr<Poco::Net::HTTPServer> server;
  bool tls = false;  // Poco::Net::initializeSSL() was called for it
  explicit Impl(int maxThreads) : pool("gc-http", 1, maxThreads) {}
  ~Impl() {
    server.reset();
    if (tls) Poco::Net::uninitializeSSL();
  }
};

HttpServer::HttpServer(HttpOptions options, const metrics::Registry& registry, std::function<std::string()> readiness)
    : options_(std::move(options)), registry_(registry), readiness_(std::move(readiness)) {
  if (!readiness_) readiness_ = [] { return std::string(); };
}

HttpServer::~HttpServer() { stop(); }

bool HttpServer::start(std::string* error) {
  if (impl_) return true;
  const int threads = std::max(1, options_.maxThreads);
  try {
    auto impl = std::make_unique<Impl>(threads);
    const bool tls = !options_.tlsCertificateFile.empty();
    if (tls) {
      Poco::Net::initializeSSL();
      impl->tls = true;
    }
    Poco::Net::ServerSocket socket;
    if (tls) socket = Poco::Net::SecureServerSocket(serverTlsContext(options_));
    // SO_REUSEADDR without SO_REUSEPORT (Poco's two-argument bind sets
    // both): a second server on a busy port must fail, not share it.
    socket.bind(Poco::Net::SocketAddress(options_.address, options_.port), true, false);
    socket.listen(64);
    const uint16_t bound = socket.address().port();

    Poco::Net::HTTPServerParams::Ptr params = new Poco::Net::HTTPServerParams;
    params->setMaxThreads(threads);
    params->setMaxQueued(std::max(1, options_.maxQueued));
    const Poco::Timespan timeout(static_cast<Poco::Timespan::TimeDiff>(options_.timeout.count()) * 1000);
    params->setTimeout(timeout);
    params->setKeepAlive(true);
    params->setKeepAliveTimeout(timeout);
    params->setMaxKeepAliveRequests(100);
    params->setServerName("groupcoordd");
    impl->server = std::make_unique<Poco::Net::HTTPServer>(new EndpointFactory(options_, registry_, readiness_), impl->pool,
                                                           socket, params);
    impl->server->start();
    port_ = bound;
    impl_ = std::move(impl);
  } catch (const Poco::Exception& e) {
    *error = "cannot serve HTTP on " + options_.address + ":" + std::to_string(options_.port) + ": " + e.displayText();
    return false;
  } catch (const std::exception& e) {
    *error = "cannot serve HTTP on " + options_.address + ":" + std::to_string(options_.port) + ": " + e.what();
    return false;
  }
  return true;
}

void HttpServer::stop() {
  if (!impl_) return;
  try {
    impl_->server->stopAll(true);
    impl_->pool.joinAll();
  } catch (const Poco::Exception& e) {
    spdlog::warn("HTTP server: stopping it failed: {}", e.displayText());
  }
  impl_.reset();
}

}  // namespace groupcoord::server
