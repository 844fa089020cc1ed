#pragma once

// The authentication and role check between the TCP server and the
// protocol::Handler, used when auth.credentials.file is set.
//
// Each connection has an AuthSession. Authenticate requests are checked on
// the gate's own worker thread (the slow hash must not stall an I/O
// thread); requests that arrive on the connection while its Authenticate is
// being checked wait in the session, in order, and go on once the answer is
// known, so a client may pipeline Authenticate and its first calls. The
// number waiting is bounded by the server's in-flight limit per connection
// (each holds a response slot).
//
// Threads: handle() on I/O threads; the worker calls the next Handler for
// waiting requests (Handlers are called from several threads already).
// stop() after the TCP server stopped and before the Handler goes away.

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "protocol/Handler.h"
#include "server/Auth.h"

namespace groupcoord::server {

class AuthSession {
 public:
  AuthSession() = default;

 private:
  friend class AuthGate;
  struct Waiting {
    protocol::RequestHeader header;
    protocol::Request request;
    protocol::ResponseCallback done;
  };
  std::mutex mutex_;
  bool checking_ = false;       // an Authenticate is with the worker
  bool authenticated_ = false;
  std::string user_;            // valid when authenticated_
  Role role_ = Role::Member;
  std::vector<Waiting> waiting_;
};

class AuthGate {
 public:
  explicit AuthGate(std::shared_ptr<const CredentialStore> credentials);
  ~AuthGate();  // stop()
  AuthGate(const AuthGate&) = delete;
  AuthGate& operator=(const AuthGate&) = delete;

  // I/O thread: answers or forwards one decoded, name-checked request of the
  // connection from `peer`.
  void handle(const std::shared_ptr<AuthSession>& session, const std::string& peer, protocol::Handler& next,
              const protocol::RequestHeader& header, protocol::Request request, protocol::ResponseCallback done);

  // Ends the worker; checks not yet made are dropped (their connections are
  // closed by then). Idempotent.
  void stop();

  const CredentialStore& credentials() const { return *credentials_; }

 private:
  struct Job {
    std::shared_ptr<AuthSession> session;
    std::string peer;
    protocol::Handler* next = nullptr;
    protocol::RequestHeader header;
    protocol::AuthenticateRequest request;
    protocol::ResponseCallback done;
  };
  // Forwards or refuses by the session's state; the caller holds no lock.
  void admit(AuthSession& session, const std::string& peer, protocol::Handler& next,
             const protocol::RequestHeader& header, protocol::Request request, protocol::ResponseCallback done);
  void run();
  void check(Job& job);

  std::shared_ptr<const CredentialStore> credentials_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::thread worker_;
};

// A user name or other client text made safe for one log line: printable
// ASCII only, at most 64 characters.
std::string printableForLog(std::string_view text);

}  // namespace groupcoord::server
