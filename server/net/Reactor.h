#pragma once

// The connection engine every port runs on (docs/design.md, "Connections"):
// one epoll descriptor, one eventfd to wake it, and a loop that waits until
// the next deadline the port names, hands each ready descriptor's events to
// the object registered with it, and lets the port finish its turn. It knows
// nothing of what the bytes mean: framing, dispatch and answers are the
// port's.
//
// Threads: open(), add(), modify(), remove() and run() on the thread that
// runs the loop (open() before it starts). wake() from any thread.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "server/Handles.h"

namespace groupcoord::server::net {

using Clock = std::chrono::steady_clock;

// Something registered with a reactor: told of its descriptor's readiness
// (the epoll bits: EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP, ...). The reactor
// holds a plain pointer: the object must stay alive until its descriptor
// is removed, and until the end of the turn in which it was removed (an
// event for it may still be in that turn's batch).
class EventSource {
 public:
  virtual void onEvent(uint32_t events) = 0;

 public:
  virtual ~EventSource() = default;
};

// The eventfd that wakes a reactor. Shared with whoever may wake it, so that
// a wake posted after the reactor is gone writes to a descriptor still open.
class Waker {
 public:
  Waker();
  Waker(const Waker&) = delete;
  Waker& operator=(const Waker&) = delete;
  bool valid() const { return fd_.valid(); }
  int fd() const { return fd_.get(); }
  // Any thread.
  void wake() const;
  // The reactor's thread, when the eventfd was reported readable.
  void clear() const;

 private:
  UniqueFd fd_;
};

// What the port running a reactor supplies besides its event sources: the
// time of its next deadline, and the work before and after each turn's
// events.
class Turns {
 public:
  // When the loop must run again even without an event: a deadline, a
  // tick. Clock::time_point::min(): at once; max(): not before an event.
  virtual Clock::time_point nextWake() = 0;
  // The wait returned at `now`; the turn's events follow.
  virtual void turnBegins(Clock::time_point now) = 0;
  // The turn's events were handed out. false: run() returns.
  virtual bool turnEnds() = 0;

 public:
  virtual ~Turns() = default;
};

class Reactor {
 public:
  Reactor();
  ~Reactor();
  Reactor(const Reactor&) = delete;
  Reactor& operator=(const Reactor&) = delete;

  // Creates the epoll descriptor and watches the waker. false with *error
  // set ("epoll_create1: ...") when that fails.
  bool open(std::string* error);
  const std::shared_ptr<Waker>& waker() const { return waker_; }
  void wake() const { waker_->wake(); }

  // epoll_ctl on the loop's thread; false with errno set when it fails.
  bool add(int fd, uint32_t events, EventSource* source);
  bool modify(int fd, uint32_t events, EventSource* source);
  void remove(int fd);

  // Runs turns on the calling thread until turns.turnEnds() answers false:
  // true then. false with *error set when the wait itself failed.
  bool run(Turns& turns, std::string* error);

 private:
  std::shared_ptr<Waker> waker_;
  UniqueFd epollFd_;
};

}  // namespace groupcoord::server::net
