#pragma once

// The HTTP/1.x request head and answer of groupcoordd's HTTP port
// (server/HttpServer.h), as pure functions of bytes: no sockets, no clock.
//
// A head is the request line and the header fields up to the blank line
// (RFC 9112 section 2.1). parseHead() looks at what has arrived so far and
// says whether the head is complete, still arriving, or refused; it never
// reads a body (the port serves GET only, and a GET with a body is refused
// by the caller).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace groupcoord::server {

struct HttpHeadLimits {
  size_t maxHeadBytes = 16384;  // request line, fields and the blank line
  size_t maxFields = 100;
};

struct HttpRequestHead {
  std::string method;
  std::string target;  // as sent: path and query
  int minorVersion = 1;  // HTTP/1.<minorVersion>
  std::vector<std::pair<std::string, std::string>> fields;  // names lower-cased, values trimmed

  // The first field of that (lower-case) name, or nullopt.
  std::optional<std::string_view> field(std::string_view lowerName) const;
  // The path without the query.
  std::string path() const;
  // Whether the client asked to keep the connection: HTTP/1.1 unless
  // "Connection: close", HTTP/1.0 only with "Connection: keep-alive".
  bool wantsKeepAlive() const;
  // A body announced by Content-Length (other than 0) or Transfer-Encoding.
  bool announcesBody() const;
};

struct HeadParse {
  enum State { Incomplete, Complete, Refused } state = Incomplete;
  size_t length = 0;    // Complete: bytes of the head, blank line included
  HttpRequestHead head;  // Complete: the head
  std::string why;       // Refused: one line for the 400 answer's body
};

// What `bytes` (the start of a connection's unread input) holds.
HeadParse parseHead(std::string_view bytes, const HttpHeadLimits& limits);

struct HttpAnswer {
  int status = 200;
  std::string contentType = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> fields;  // extra header fields
  bool close = false;  // the connection closes after this answer
};

// The reason phrase of the statuses the port answers ("" for others).
std::string_view reasonPhrase(int status);

// Status line, fields and body as sent: Content-Length, Cache-Control:
// no-store and Connection always; keepAlive false adds "Connection: close".
std::string renderAnswer(const HttpAnswer& answer, bool keepAlive);

// HTTP Basic credentials (RFC 7617) from an Authorization field's value:
// user and secret, or nullopt when it is not Basic or not well formed.
std::optional<std::pair<std::string, std::string>> basicCredentials(std::string_view authorization);

}  // namespace groupcoord::server
