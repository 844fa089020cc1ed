#include "zk/Error.h"

namespace groupcoord::zk {

namespace {

struct ErrorText {
  std::string_view name;
  std::string_view message;
};

// One table for names and messages so the two can never disagree.
ErrorText textOf(Error e) {
  switch (e) {
    case Error::Ok: return {"ZOK", "ok"};
    case Error::SystemError: return {"ZSYSTEMERROR", "system error"};
    case Error::RuntimeInconsistency: return {"ZRUNTIMEINCONSISTENCY", "runtime inconsistency"};
    case Error::DataInconsistency: return {"ZDATAINCONSISTENCY", "data inconsistency"};
    case Error::ConnectionLoss: return {"ZCONNECTIONLOSS", "connection to the server lost"};
    case Error::MarshallingError: return {"ZMARSHALLINGERROR", "marshalling error"};
    case Error::Unimplemented: return {"ZUNIMPLEMENTED", "operation not implemented"};
    case Error::OperationTimeout: return {"ZOPERATIONTIMEOUT", "operation timed out"};
    case Error::BadArguments: return {"ZBADARGUMENTS", "bad arguments"};
    case Error::InvalidState: return {"ZINVALIDSTATE", "invalid session state"};
    case Error::NewConfigNoQuorum: return {"ZNEWCONFIGNOQUORUM", "no quorum for the new configuration"};
    case Error::ReconfigInProgress: return {"ZRECONFIGINPROGRESS", "reconfiguration in progress"};
    case Error::SslConnectionError: return {"ZSSLCONNECTIONERROR", "SSL connection error"};
    case Error::ApiError: return {"ZAPIERROR", "api error"};
    case Error::NoNode: return {"ZNONODE", "node does not exist"};
    case Error::NoAuth: return {"ZNOAUTH", "not authenticated"};
    case Error::BadVersion: return {"ZBADVERSION", "version conflict"};
    case Error::NoChildrenForEphemerals: return {"ZNOCHILDRENFOREPHEMERALS", "ephemeral nodes may not have children"};
    case Error::NodeExists: return {"ZNODEEXISTS", "node already exists"};
    case Error::NotEmpty: return {"ZNOTEMPTY", "node has children"};
    case Error::SessionExpired: return {"ZSESSIONEXPIRED", "session expired"};
    case Error::InvalidCallback: return {"ZINVALIDCALLBACK", "invalid callback"};
    case Error::InvalidAcl: return {"ZINVALIDACL", "invalid ACL"};
    case Error::AuthFailed: return {"ZAUTHFAILED", "authentication failed"};
    case Error::Closing: return {"ZCLOSING", "session is closing"};
    case Error::Nothing: return {"ZNOTHING", "no server responses to process"};
    case Error::SessionMoved: return {"ZSESSIONMOVED", "session moved to another server"};
    case Error::NotReadOnly: return {"ZNOTREADONLY", "write sent to a read-only server"};
    case Error::EphemeralOnLocalSession: return {"ZEPHEMERALONLOCALSESSION", "ephemeral node on a local session"};
    case Error::NoWatcher: return {"ZNOWATCHER", "watcher not found"};
    case Error::ReconfigDisabled: return {"ZRECONFIGDISABLED", "reconfiguration disabled"};
    case Error::SessionClosedRequireSaslAuth: return {"ZSESSIONCLOSEDREQUIRESASLAUTH", "session closed: SASL authentication required"};
    case Error::Throttled: return {"ZTHROTTLEDOP", "operation throttled"};
  }
  return {"", ""};
}

}  // namespace

std::string_view errorName(Error e) {
  auto t = textOf(e);
  if (!t.name.empty()) return t.name;
  // Unknown code: print its number. A small per-thread buffer keeps the
  // string_view valid until the next call on the same thread.
  thread_local char buf[32];
  auto res = fmt::format_to_n(buf, sizeof(buf) - 1, "ZERROR({})", static_cast<int32_t>(e));
  *res.out = '\0';
  return std::string_view(buf, res.size < sizeof(buf) - 1 ? res.size : sizeof(buf) - 1);
}

std::string_view errorMessage(Error e) {
  auto t = textOf(e);
  return t.name.empty() ? std::string_view("unknown error") : t.message;
}

bool isConnectionProblem(Error e) {
  switch (e) {
    case Error::ConnectionLoss:
    case Error::OperationTimeout:
    case Error::SessionExpired:
    case Error::InvalidState:
    case Error::Closing:
    case Error::SessionMoved:
    case Error::AuthFailed:
    case Error::SessionClosedRequireSaslAuth:
    case Error::Throttled:
      return true;
    default:
      return false;
  }
}

bool isDataError(Error e) {
  switch (e) {
    case Error::NoNode:
    case Error::NodeExists:
    case Error::BadVersion:
    case Error::NotEmpty:
    case Error::NoChildrenForEphemerals:
      return true;
    default:
      return false;
  }
}

}  // namespace groupcoord::zk
