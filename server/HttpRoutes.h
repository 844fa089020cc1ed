#pragma once

// What groupcoordd's HTTP port answers to a request head (the endpoints are
// listed in server/HttpServer.h), apart from the sockets: which thread
// answers it, and the answer.

#include <functional>
#include <string>

#include "metrics/Registry.h"
#include "server/HttpHead.h"
#include "server/HttpServer.h"

namespace groupcoord::server {

// Which thread answers a head: the connection thread (at once: /health/*
// and every refusal), the /metrics thread, or the status pool.
enum class HttpLane { Now, Metrics, Status };
HttpLane laneOf(const HttpRequestHead& head, bool statusPage);

struct HttpContext {
  const HttpOptions& options;
  const metrics::Registry& registry;
  const std::function<std::string()>& readiness;
};

// The answer to `head`. On the status lane it may wait for another server.
HttpAnswer answerRequest(const HttpRequestHead& head, const HttpContext& context);

}  // namespace groupcoord::server
