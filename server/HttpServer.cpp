#include "server/HttpServer.h"

#include <Poco/Exception.h>
#include <Poco/Net/HTTPRequestHandler.h>
#include <Poco/Net/HTTPRequestHandlerFactory.h>
#include <Poco/Net/HTTPServer.h>
#include <Poco/Net/HTTPServerParams.h>
#include <Poco/Net/HTTPServerRequest.h>
#include <Poco/Net/HTTPServerResponse.h>
#include <Poco/Net/ServerSocket.h>
#include <Poco/Net/SocketAddress.h>
#include <Poco/ThreadPool.h>
#include <spdlog/spdlog.h>

#include <ostream>

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

class EndpointHandler final : public Poco::Net::HTTPRequestHandler {
 public:
  EndpointHandler(const metrics::Registry& registry, const std::function<std::string()>& readiness)
      : registry_(registry), readiness_(readiness) {}

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
  void serve(Poco::Net::HTTPServerRequest& request, Poco::Net::HTTPServerResponse& response) {
    static const std::string kText = "text/plain; charset=utf-8";
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
    } else {
      reply(response, HTTPResponse::HTTP_NOT_FOUND, kText, "not found: serving /metrics, /health/live, /health/ready\n");
    }
  }

  const metrics::Registry& registry_;
  const std::function<std::string()>& readiness_;
};

class EndpointFactory final : public Poco::Net::HTTPRequestHandlerFactory {
 public:
  EndpointFactory(const metrics::Registry& registry, const std::function<std::string()>& readiness)
      : registry_(registry), readiness_(readiness) {}
  Poco::Net::HTTPRequestHandler* createRequestHandler(const Poco::Net::HTTPServerRequest&) override {
    return new EndpointHandler(registry_, readiness_);
  }

 private:
  const metrics::Registry& registry_;
  const std::function<std::string()>& readiness_;
};

}  // namespace

struct HttpServer::Impl {
  Poco::ThreadPool pool;
  std::unique_ptr<Poco::Net::HTTPServer> server;
  explicit Impl(int maxThreads) : pool("gc-http", 1, maxThreads) {}
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
    Poco::Net::ServerSocket socket;
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
    impl->server = std::make_unique<Poco::Net::HTTPServer>(new EndpointFactory(registry_, readiness_), impl->pool,
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
