#include "zk/Client.h"

#include <future>
#include <memory>

#include "zk/Path.h"

namespace groupcoord::zk {

namespace {

// Runs one async call and waits at most `wait` for its result. The promise
// is shared with the callback, so a result that arrives after the wait gave
// up lands in a live promise and is simply dropped.
template <typename R, typename Start>
R waitFor(std::chrono::milliseconds wait, R onTimeout, Start&& start) {
  auto promise = std::make_shared<std::promise<R>>();
  auto future = promise->get_future();
  start([promise](R r) { promise->set_value(std::move(r)); });
  if (future.wait_for(wait) != std::future_status::ready) return onTimeout;
  return future.get();
}

template <typename R>
R timedOut() {
  R r;
  r.error = Error::OperationTimeout;
  return r;
}

}  // namespace

CreateResult Client::createSync(const std::string& path, std::string data, CreateMode mode,
                                std::chrono::milliseconds wait) {
  return waitFor<CreateResult>(wait, timedOut<CreateResult>(), [&](Callback<CreateResult> cb) {
    create(path, std::move(data), mode, std::move(cb));
  });
}

Error Client::removeSync(const std::string& path, int32_t version, std::chrono::milliseconds wait) {
  return waitFor<Error>(wait, Error::OperationTimeout,
                        [&](Callback<Error> cb) { remove(path, version, std::move(cb)); });
}

GetResult Client::getSync(const std::string& path, std::chrono::milliseconds wait) {
  return waitFor<GetResult>(wait, timedOut<GetResult>(),
                            [&](Callback<GetResult> cb) { get(path, std::move(cb)); });
}

SetResult Client::setSync(const std::string& path, std::string data, int32_t version,
                          std::chrono::milliseconds wait) {
  return waitFor<SetResult>(wait, timedOut<SetResult>(), [&](Callback<SetResult> cb) {
    set(path, std::move(data), version, std::move(cb));
  });
}

ExistsResult Client::existsSync(const std::string& path, std::chrono::milliseconds wait) {
  return waitFor<ExistsResult>(wait, timedOut<ExistsResult>(),
                               [&](Callback<ExistsResult> cb) { exists(path, std::move(cb)); });
}

ChildrenResult Client::getChildrenSync(const std::string& path, std::chrono::milliseconds wait) {
  return waitFor<ChildrenResult>(wait, timedOut<ChildrenResult>(),
                                 [&](Callback<ChildrenResult> cb) { getChildren(path, std::move(cb)); });
}

MultiResult Client::multiSync(std::vector<Op> ops, std::chrono::milliseconds wait) {
  MultiResult timeout;
  timeout.error = Error::OperationTimeout;
  return waitFor<MultiResult>(wait, std::move(timeout),
                              [&](Callback<MultiResult> cb) { multi(std::move(ops), std::move(cb)); });
}

Error Client::ensurePathSync(const std::string& path, std::chrono::milliseconds wait) {
  if (!isValidPath(path)) return Error::BadArguments;
  if (path == "/") return Error::Ok;
  auto deadline = std::chrono::steady_clock::now() + wait;
  auto remaining = [&] {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    return left.count() > 0 ? left : std::chrono::milliseconds(0);
  };

  // The common case is a path that is already there: one read.
  auto present = existsSync(path, remaining());
  if (present.error == Error::Ok) return Error::Ok;
  if (present.error != Error::NoNode) return present.error;

  // Create every level from the top; NodeExists means someone else (or an
  // earlier run) made it, which is just as good.
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    std::string prefix = path.substr(0, pos);
    auto r = createSync(prefix, std::string(), CreateMode::Persistent, remaining());
    if (r.error != Error::Ok && r.error != Error::NodeExists) return r.error;
  }
  return Error::Ok;
}

}  // namespace groupcoord::zk
