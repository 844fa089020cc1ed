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
#include <string>
#include <thread>
#include <vector>

#include "common/Sync.h"
#include "protocol/Handler.h"
#include "server/Auth.h"

namespace groupcoord::server {

class AuthSession {
 public:
  AuthSession() = default;

 private:
  friend class AuthGate;
  struct Waiting {
    protocol::Caller caller;
    protocol::RequestHeader header;
    protocol::Request request;
    protocol::ResponseCallback done;
  };
  Mutex mutex_;
  bool checking_ GUARDED_BY(mutex_) = false;  // an Authenticate is with the worker
  bool authenticated_ GUARDED_BY(mutex_) = false;
  std::string user_ GUARDED_BY(mutex_);  // valid when authenticated_
  Role role_ GUARDED_BY(mutex_) = Role::Member;
  std::vector<Waiting> waiting_ GUARDED_BY(mutex_);
};

class AuthGate {
 public:
  explicit AuthGate(std::shared_ptr<const CredentialStore> credentials);
  ~AuthGate();  // stop()
  AuthGate(const AuthGate&) = delete;
  AuthGate& operator=(const AuthGate&) = delete;

  // I/O thread: answers or forwards one decoded, name-checked request of the
  // connection from `caller` (whose user the gate fills in when it forwards).
  void handle(const std::shared_ptr<AuthSession>& session, const protocol::Caller& caller, protocol::Handler& next,
              const protocol::RequestHeader& header, protocol::Request request, protocol::ResponseCallback done)
      EXCLUDES(mutex_);

  // Ends the worker; checks not yet made are dropped (their connections are
  // closed by then). Idempotent.
  void stop() EXCLUDES(mutex_);

  const CredentialStore& credentials() const { return *credentials_; }

 private:
  struct Job {
    std::shared_ptr<AuthSession> session;
    protocol::Caller caller;
    protocol::Handler* next = nullptr;
    protocol::RequestHeader header;
    protocol::AuthenticateRequest request;
    protocol::ResponseCallback done;
  };
  // Forwards or refuses by the session's state; the caller holds no lock.
  void admit(AuthSession& session, const protocol::Caller& caller, protocol::Handler& next,
             const protocol::RequestHeader& header, protocol::Request request, protocol::ResponseCallback done)
      EXCLUDES(mutex_, session.mutex_);
  void run() EXCLUDES(mutex_);
  // Worker: blocks on wake_ until there is a job or stopping_ is set.
  void waitForWork() REQUIRES(mutex_);
  void check(Job& job) EXCLUDES(mutex_);

  std::shared_ptr<const CredentialStore> credentials_;
  Mutex mutex_;
  std::condition_variable wake_;  // waited on with mutex_ held (waitLocked)
  std::deque<Job> jobs_ GUARDED_BY(mutex_);
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::thread worker_;
};

// A user name or other client text made safe for one log line: printable
// ASCII only, at most 64 characters.
std::string printableForLog(std::string_view text);

}  // namespace groupcoord::server
