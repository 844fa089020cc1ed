#include "server/HttpHead.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace groupcoord::server {

namespace {

// RFC 9110 section 5.6.2: the characters of a token.
bool isTokenChar(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (std::isalnum(u)) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+':
    case '-': case '.': case '^': case '_': case '`': case '|': case '~':
      return true;
    default:
      return false;
  }
}

bool isToken(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), isTokenChar); }

std::string_view trimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool equalsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Whether a comma-separated field value lists `option` (case-insensitive).
bool listsOption(std::string_view value, std::string_view option) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    if (equalsIgnoringCase(trimOws(value.substr(0, comma)), option)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

HeadParse refused(std::string why) {
  HeadParse p;
  p.state = HeadParse::Refused;
  p.why = std::move(why);
  return p;
}

// "METHOD SP target SP HTTP/1.x"; false when it is not that.
bool parseRequestLine(std::string_view line, HttpRequestHead& head, std::string* why) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    *why = "the request line is not METHOD TARGET HTTP/1.x";
    return false;
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!isToken(method) || method.size() > 32) {
    *why = "the request's method is not a token";
    return false;
  }
  if (target.empty() || std::any_of(target.begin(), target.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u <= 0x20 || u == 0x7f;
      })) {
    *why = "the request's target is empty or holds control characters";
    return false;
  }
  if (version == "HTTP/1.1") {
    head.minorVersion = 1;
  } else if (version == "HTTP/1.0") {
    head.minorVersion = 0;
  } else {
    *why = "only HTTP/1.0 and HTTP/1.1 are served";
    return false;
  }
  head.method = method;
  head.target = target;
  return true;
}

}  // namespace

std::optional<std::string_view> HttpRequestHead::field(std::string_view lowerName) const {
  for (const auto& [name, value] : fields) {
    if (name == lowerName) return std::string_view(value);
  }
  return std::nullopt;
}

std::string HttpRequestHead::path() const { return target.substr(0, target.find('?')); }

bool HttpRequestHead::wantsKeepAlive() const {
  const auto connection = field("connection");
  if (minorVersion == 0) return connection && listsOption(*connection, "keep-alive");
  return !connection || !listsOption(*connection, "close");
}

bool HttpRequestHead::announcesBody() const {
  if (field("transfer-encoding")) return true;
  const auto length = field("content-length");
  return length && *length != "0";
}

HeadParse parseHead(std::string_view bytes, const HttpHeadLimits& limits) {
  // Empty lines before the request line are ignored (RFC 9112 section 2.2).
  size_t start = 0;
  while (bytes.substr(start, 2) == "\r\n") start += 2;
  const size_t firstEnd = bytes.find("\r\n", start);
  if (firstEnd == std::string_view::npos) {
    if (bytes.size() > limits.maxHeadBytes) {
      return refused("the request line is over " + std::to_string(limits.maxHeadBytes) + " bytes");
    }
    return {};
  }
  HeadParse p;
  std::string why;
  // The request line is judged as soon as it is whole, so that a client
  // sending garbage is answered without waiting for a blank line.
  if (!parseRequestLine(bytes.substr(start, firstEnd - start), p.head, &why)) return refused(why);
  const size_t end = bytes.find("\r\n\r\n", firstEnd);
  const size_t headEnd = end == std::string_view::npos ? end : end + 4;
  if (headEnd == std::string_view::npos || headEnd > limits.maxHeadBytes) {
    if (bytes.size() > limits.maxHeadBytes || (headEnd != std::string_view::npos && headEnd > limits.maxHeadBytes)) {
      return refused("the request head is over " + std::to_string(limits.maxHeadBytes) + " bytes");
    }
    return {};
  }
  size_t pos = firstEnd + 2;
  while (pos < end + 2) {
    const size_t eol = bytes.find("\r\n", pos);
    const std::string_view line = bytes.substr(pos, eol - pos);
    pos = eol + 2;
    if (p.head.fields.size() >= limits.maxFields) {
      return refused("the request has over " + std::to_string(limits.maxFields) + " header fields");
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !isToken(line.substr(0, colon))) {
      // Folded lines (starting with whitespace) land here too: RFC 9112
      // section 5.2 lets a server refuse them.
      return refused("a header field is not NAME: VALUE");
    }
    const std::string_view value = trimOws(line.substr(colon + 1));
    if (std::any_of(value.begin(), value.end(), [](char c) {
          const auto u = static_cast<unsigned char>(c);
          return (u < 0x20 && c != '\t') || u == 0x7f;
        })) {
      return refused("a header field's value holds control characters");
    }
    p.head.fields.emplace_back(lower(line.substr(0, colon)), std::string(value));
  }
  p.state = HeadParse::Complete;
  p.length = headEnd;
  return p;
}

std::string_view reasonPhrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "";
  }
}

std::string renderAnswer(const HttpAnswer& answer, bool keepAlive) {
  std::string out;
  out.reserve(answer.body.size() + 256);
  out += "HTTP/1.1 ";
  out += std::to_string(answer.status);
  out += ' ';
  out += reasonPhrase(answer.status);
  out += "\r\nServer: groupcoordd\r\nContent-Type: ";
  out += answer.contentType;
  out += "\r\nContent-Length: ";
  out += std::to_string(answer.body.size());
  out += "\r\nCache-Control: no-store\r\n";
  for (const auto& [name, value] : answer.fields) {
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  out += keepAlive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  out += answer.body;
  return out;
}

std::optional<std::pair<std::string, std::string>> basicCredentials(std::string_view authorization) {
  authorization = trimOws(authorization);
  const size_t sp = authorization.find(' ');
  if (sp == std::string_view::npos || !equalsIgnoringCase(authorization.substr(0, sp), "basic")) return std::nullopt;
  const std::string_view encoded = trimOws(authorization.substr(sp + 1));
  // Base64 (RFC 4648 section 4), padding required as RFC 7617 sends it.
  if (encoded.empty() || encoded.size() % 4 != 0) return std::nullopt;
  std::string decoded;
  uint32_t bits = 0;
  int count = 0;
  size_t padding = 0;
  for (size_t i = 0; i < encoded.size(); ++i) {
    const char c = encoded[i];
    int v = -1;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else if (c == '=' && i + 2 >= encoded.size()) {
      ++padding;
      v = 0;
    }
    if (v < 0 || (padding > 0 && c != '=')) return std::nullopt;
    bits = (bits << 6) | static_cast<uint32_t>(v);
    if (++count == 4) {
      decoded += static_cast<char>((bits >> 16) & 0xff);
      decoded += static_cast<char>((bits >> 8) & 0xff);
      decoded += static_cast<char>(bits & 0xff);
      bits = 0;
      count = 0;
    }
  }
  decoded.resize(decoded.size() - padding);
  const size_t colon = decoded.find(':');
  if (colon == std::string::npos) return std::nullopt;
  return std::make_pair(decoded.substr(0, colon), decoded.substr(colon + 1));
}

}  // namespace groupcoord::server
