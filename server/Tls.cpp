#include "server/Tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace groupcoord::server {

void SslFree::operator()(SSL* ssl) const noexcept { SSL_free(ssl); }

void SslCtxFree::operator()(SSL_CTX* ctx) const noexcept { SSL_CTX_free(ctx); }

std::string takeTlsError() {
  std::string text;
  unsigned long code = 0;
  while ((code = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof(buf));
    text = buf;  // the last is the most specific
  }
  return text;
}

std::shared_ptr<TlsServerContext> TlsServerContext::create(const std::string& certificateFile,
                                                           const std::string& keyFile, const std::string& caFile,
                                                           std::string* error) {
  std::shared_ptr<TlsServerContext> tls(new TlsServerContext());
  ERR_clear_error();
  tls->ctx_.reset(SSL_CTX_new(TLS_server_method()));
  if (tls->ctx_ == nullptr) {
    *error = "cannot make a TLS context: " + takeTlsError();
    return nullptr;
  }
  SSL_CTX* ctx = tls->ctx_.get();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // Renegotiation would let a client make the server read while it wants to
  // write; a client that ends without close_notify is an ordinary close.
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_COMPRESSION |
                               SSL_OP_CIPHER_SERVER_PREFERENCE);
  // The output buffer may move between a refused write and its retry.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  if (SSL_CTX_use_certificate_chain_file(ctx, certificateFile.c_str()) != 1) {
    *error = "cannot load the TLS certificate '" + certificateFile + "' (tls.certificate.file): " + takeTlsError();
    return nullptr;
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, keyFile.c_str(), SSL_FILETYPE_PEM) != 1) {
    *error = "cannot load the TLS key '" + keyFile + "' (tls.key.file): " + takeTlsError();
    return nullptr;
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    *error = "the TLS key '" + keyFile + "' does not belong to the certificate '" + certificateFile +
             "': " + takeTlsError();
    return nullptr;
  }
  if (!caFile.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, caFile.c_str(), nullptr) != 1) {
      *error = "cannot load the client CA '" + caFile + "' (tls.ca.file): " + takeTlsError();
      return nullptr;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    tls->requireClientCert_ = true;
  }
  return tls;
}

TlsServerContext::~TlsServerContext() = default;

SslPtr TlsServerContext::accept(int fd) const {
  SslPtr ssl(SSL_new(ctx_.get()));
  if (ssl == nullptr) return nullptr;
  if (SSL_set_fd(ssl.get(), fd) != 1) return nullptr;  // frees it
  SSL_set_accept_state(ssl.get());
  return ssl;
}

}  // namespace groupcoord::server
