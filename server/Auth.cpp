#include "server/Auth.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace groupcoord::server {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

bool roleAllows(Role role, protocol::ApiKey api) {
  using protocol::ApiKey;
  switch (api) {
    case ApiKey::DeleteGroup:
    case ApiKey::RewindConsumer:
    case ApiKey::DrainServer:
      return role == Role::Admin;
    case ApiKey::Heartbeat:
    case ApiKey::CreateGroup:
    case ApiKey::RegisterConsumer:
    case ApiKey::ListGroups:
    case ApiKey::LeaveGroup:
    case ApiKey::CommitOffsets:
    case ApiKey::FetchOffsets:
    case ApiKey::Authenticate:
    case ApiKey::DescribeGroup:
    case ApiKey::DescribeServers:
      return true;
  }
  return false;
}

CredentialStore::CredentialStore() : digestKey_(32) {
  if (RAND_bytes(digestKey_.data(), static_cast<int>(digestKey_.size())) != 1) digestKey_.clear();
  decoy_.user = "";
  decoy_.iterations = kDefaultIterations;
  decoy_.salt.assign(kSaltBytes, 0x5a);
  decoy_.storedKey.assign(kHashBytes, 0);
  decoy_.serverKey.assign(kHashBytes, 0);
}

std::shared_ptr<CredentialStore> CredentialStore::parse(std::string_view text, const std::string& source,
                                                        std::string* error) {
  std::shared_ptr<CredentialStore> store(new CredentialStore());
  if (store->digestKey_.empty()) {
    *error = "no random bytes for the verification cache key";
    return nullptr;
  }
  int lineNo = 0;
  uint32_t maxIterations = kMinIterations;
  while (!text.empty()) {
    ++lineNo;
    const size_t nl = text.find('\n');
    const std::string_view raw = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const std::string_view line = trim(raw);
    if (line.empty() || line.front() == '#') continue;
    Credential c;
    if (auto why = credentials::parseCredentialLine(line, &c); !why.empty()) {
      *error = source + " line " + std::to_string(lineNo) + ": " + why;
      return nullptr;
    }
    if (store->users_.count(c.user)) {
      *error = source + " line " + std::to_string(lineNo) + ": user '" + c.user + "' appears a second time";
      return nullptr;
    }
    maxIterations = std::max(maxIterations, c.iterations);
    store->users_.emplace(c.user, std::move(c));
  }
  if (store->users_.empty()) {
    *error = source + " holds no user: nobody could authenticate";
    return nullptr;
  }
  // An unknown user costs what the dearest real one does.
  store->decoy_.iterations = maxIterations;
  return store;
}

std::shared_ptr<CredentialStore> CredentialStore::load(const std::string& path, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot read the credentials file '" + path + "'";
    return nullptr;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), "credentials file '" + path + "'", error);
}

const Credential* CredentialStore::find(std::string_view user) const {
  auto it = users_.find(user);
  return it == users_.end() ? nullptr : &it->second;
}

std::vector<uint8_t> CredentialStore::quickDigest(const Credential& c, std::string_view secret) const {
  std::vector<uint8_t> message(c.salt);
  message.insert(message.end(), secret.begin(), secret.end());
  std::vector<uint8_t> out(EVP_MAX_MD_SIZE);
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), digestKey_.data(), static_cast<int>(digestKey_.size()), message.data(), message.size(),
           out.data(), &len) == nullptr) {
    return {};
  }
  out.resize(len);
  return out;
}

std::optional<Role> CredentialStore::verify(std::string_view user, std::string_view secret) const {
  const Credential* c = find(user);
  if (c == nullptr) {
    (void)constantTimeEquals(credentials::storedKeyOf(hashSecret(secret, decoy_.salt, decoy_.iterations)),
                             decoy_.storedKey);
    return std::nullopt;
  }
  const std::vector<uint8_t> quick = quickDigest(*c, secret);
  {
    MutexLock lock(cacheMutex_);
    auto it = verified_.find(user);
    if (it != verified_.end() && constantTimeEquals(it->second, quick)) return c->role;
  }
  if (!constantTimeEquals(credentials::storedKeyOf(hashSecret(secret, c->salt, c->iterations)), c->storedKey)) {
    return std::nullopt;
  }
  if (!quick.empty()) {
    MutexLock lock(cacheMutex_);
    verified_[c->user] = quick;
  }
  return c->role;
}

}  // namespace groupcoord::server
