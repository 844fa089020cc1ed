#include "server/net/Reactor.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstring>

namespace groupcoord::server::net {

namespace {
constexpr int kMaxEvents = 256;

// Milliseconds from now until `until`, rounded up by one so that the loop
// wakes after the deadline rather than just before it.
int timeoutMs(Clock::time_point until) {
  if (until == Clock::time_point::min()) return 0;
  if (until == Clock::time_point::max()) return -1;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count() + 1;
  if (ms < 0) return 0;
  return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}
}  // namespace

Waker::Waker() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

void Waker::wake() const {
  const uint64_t one = 1;
  // A full counter (cannot happen in practice) still leaves the fd readable.
  [[maybe_unused]] const ssize_t n = ::write(fd_.get(), &one, sizeof(one));
}

void Waker::clear() const {
  uint64_t value = 0;
  [[maybe_unused]] const ssize_t n = ::read(fd_.get(), &value, sizeof(value));
}

Reactor::Reactor() : waker_(std::make_shared<Waker>()) {}

Reactor::~Reactor() = default;

bool Reactor::open(std::string* error) {
  if (!waker_->valid()) {
    *error = std::string("eventfd: ") + std::strerror(errno);
    return false;
  }
  epollFd_.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!epollFd_.valid()) {
    *error = std::string("epoll_create1: ") + std::strerror(errno);
    return false;
  }
  // The waker is the one descriptor without an event source.
  if (!add(waker_->fd(), EPOLLIN, nullptr)) {
    *error = std::string("epoll_ctl(eventfd): ") + std::strerror(errno);
    epollFd_.reset();
    return false;
  }
  return true;
}

bool Reactor::add(int fd, uint32_t events, EventSource* source) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = source;
  return ::epoll_ctl(epollFd_.get(), EPOLL_CTL_ADD, fd, &ev) == 0;
}

bool Reactor::modify(int fd, uint32_t events, EventSource* source) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = source;
  return ::epoll_ctl(epollFd_.get(), EPOLL_CTL_MOD, fd, &ev) == 0;
}

void Reactor::remove(int fd) { ::epoll_ctl(epollFd_.get(), EPOLL_CTL_DEL, fd, nullptr); }

bool Reactor::run(Turns& turns, std::string* error) {
  std::array<epoll_event, kMaxEvents> events{};
  for (;;) {
    const int n = ::epoll_wait(epollFd_.get(), events.data(), kMaxEvents, timeoutMs(turns.nextWake()));
    if (n < 0 && errno != EINTR) {
      *error = std::string("waiting for events (epoll) failed: ") + std::strerror(errno);
      return false;
    }
    turns.turnBegins(Clock::now());
    for (int i = 0; i < n; ++i) {
      auto* source = static_cast<EventSource*>(events[i].data.ptr);
      if (source == nullptr) {
        waker_->clear();
      } else {
        source->onEvent(events[i].events);
      }
    }
    if (!turns.turnEnds()) return true;
  }
}

}  // namespace groupcoord::server::net
