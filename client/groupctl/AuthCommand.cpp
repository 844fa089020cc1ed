#include "client/groupctl/Commands.h"

#include <iostream>

#include "common/Credentials.h"

namespace groupcoord::groupctl {

// `auth hash`: a credentials-file line from a secret on standard input.
int AuthCommand::run() {
  allowOnly(args_, "auth hash", {"--user", "--role", "--iterations"});
  expectPositionals(args_, 2, "the auth subcommand (hash)");
  if (args_.positional[1] != "hash") throw UsageError{"unknown auth subcommand '" + args_.positional[1] + "'"};
  if (!args_.options.count("--user")) throw UsageError{"auth hash needs --user U"};
  if (!args_.options.count("--role")) throw UsageError{"auth hash needs --role member|admin"};
  const auto role = credentials::roleFromName(args_.options["--role"]);
  if (!role) throw UsageError{"--role must be member or admin"};
  int64_t iterations = credentials::kDefaultIterations;
  if (args_.options.count("--iterations")) iterations = parseInt(args_.options["--iterations"], "--iterations");
  if (iterations < credentials::kMinIterations || iterations > credentials::kMaxIterations)
    throw UsageError{"--iterations must be " + std::to_string(credentials::kMinIterations) + ".." +
                     std::to_string(credentials::kMaxIterations)};
  std::string secret;
  std::getline(std::cin, secret);
  if (!secret.empty() && secret.back() == '\r') secret.pop_back();
  if (secret.empty()) throw UsageError{"no secret on standard input (its first line is the secret)"};
  std::string error;
  const std::string line = credentials::makeCredentialLine(args_.options["--user"], *role, secret,
                                                           static_cast<uint32_t>(iterations), &error);
  if (line.empty()) throw UsageError{error};
  std::cout << line << "\n";
  return kExitOk;
}

}  // namespace groupcoord::groupctl
