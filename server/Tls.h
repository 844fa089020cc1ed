#pragma once

// TLS for groupcoordd's listener (options tls.certificate.file, tls.key.file,
// tls.ca.file). One OpenSSL context for the whole server, made at start-up;
// each connection gets its own SSL object on its non-blocking socket, driven
// by its I/O thread (server/IoLoop.cpp). TLS 1.2 and newer only; with a CA
// file, clients must present a certificate signed by it.

#include <memory>
#include <string>

#include "server/Handles.h"

namespace groupcoord::server {

class TlsServerContext {
 public:
  // Start-up: loads the certificate chain, the key (and checks they match)
  // and, when caFile is not empty, the CA that client certificates must
  // chain to. nullptr with *error set when any of it fails.
  static std::shared_ptr<TlsServerContext> create(const std::string& certificateFile, const std::string& keyFile,
                                                  const std::string& caFile, std::string* error);
  ~TlsServerContext();
  TlsServerContext(const TlsServerContext&) = delete;
  TlsServerContext& operator=(const TlsServerContext&) = delete;

  // I/O thread: a server-side SSL object on `fd`, or null (out of memory).
  // The socket stays owned by the caller.
  SslPtr accept(int fd) const;
  bool requiresClientCertificate() const { return requireClientCert_; }

 private:
  TlsServerContext() = default;
  SslCtxPtr ctx_;
  bool requireClientCert_ = false;
};

// The most recent OpenSSL error of this thread as text ("" when none), and
// clears the queue.
std::string takeTlsError();

}  // namespace groupcoord::server
