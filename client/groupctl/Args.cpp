#include "client/groupctl/Args.h"

#include <cctype>
#include <exception>
#include <sstream>
#include <stdexcept>

namespace groupcoord::groupctl {

namespace {

const std::set<std::string> kValueOptions = {"--bootstrap", "--output",      "--topics",     "--session-timeout",
                                             "--topic",     "--partition",   "--to-offset",  "--shift-by",
                                             "--partitions", "--zookeeper",  "--topics-path",
                                             "--user",      "--secret-file", "--tls-ca-file", "--tls-server-name",
                                             "--role",      "--iterations",  "--tls-certificate-file", "--tls-key-file",
                                             "--wait",      "--history",     "--assignment",
                                             "--file",      "--principal",   "--operation",  "--group",
                                             "--prefix",    "--heartbeat-interval", "--zk-root"};
const std::set<std::string> kFlagOptions = {"--ephemeral",   "--dry-run", "--execute", "--to-earliest",
                                            "--help",        "--tls-no-verify-hostname", "--allow", "--deny",
                                            "--plain-auth", "--reset"};

}  // namespace

Args parseArgs(int argc, char** argv) {
  Args out;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h") a = "--help";
    if (a.size() > 2 && a.rfind("--", 0) == 0) {
      std::string name = a, value;
      bool inlineValue = false;
      if (auto eq = a.find('='); eq != std::string::npos) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
        inlineValue = true;
      }
      if (kValueOptions.count(name)) {
        if (!inlineValue) {
          if (i + 1 >= argc) throw UsageError{name + " needs a value"};
          value = argv[++i];
        }
        if (out.options.count(name)) throw UsageError{name + " given twice"};
        out.options[name] = value;
      } else if (kFlagOptions.count(name)) {
        if (inlineValue) throw UsageError{name + " takes no value"};
        out.flags.insert(name);
      } else {
        throw UsageError{"unknown option " + name};
      }
    } else {
      out.positional.push_back(a);
    }
  }
  return out;
}

void allowOnly(const Args& args, const std::string& command, std::set<std::string> allowed) {
  allowed.insert({"--bootstrap", "--output", "--help", "--user", "--secret-file", "--plain-auth", "--tls-ca-file", "--tls-server-name",
                  "--tls-no-verify-hostname", "--tls-certificate-file", "--tls-key-file"});
  for (auto& [name, value] : args.options)
    if (!allowed.count(name)) throw UsageError{name + " does not apply to `" + command + "`"};
  for (auto& name : args.flags)
    if (!allowed.count(name)) throw UsageError{name + " does not apply to `" + command + "`"};
}

void expectPositionals(const Args& args, size_t n, const std::string& what) {
  if (args.positional.size() < n) throw UsageError{"missing " + what};
  if (args.positional.size() > n) throw UsageError{"unexpected argument '" + args.positional[n] + "'"};
}

int64_t parseInt(const std::string& text, const std::string& what) {
  try {
    size_t used = 0;
    long long v = std::stoll(text, &used);
    if (used != text.size()) throw std::invalid_argument(text);
    return v;
  } catch (const std::exception&) {
    throw UsageError{what + " must be an integer, got '" + text + "'"};
  }
}

std::chrono::milliseconds parseDuration(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  const std::string unit = text.substr(digits);
  if (digits == 0) throw UsageError{"bad duration '" + text + "' (use 500ms, 10s, 2m or milliseconds)"};
  int64_t n = parseInt(text.substr(0, digits), "duration");
  if (unit.empty() || unit == "ms") return std::chrono::milliseconds(n);
  if (unit == "s") return std::chrono::seconds(n);
  if (unit == "m") return std::chrono::minutes(n);
  throw UsageError{"bad duration '" + text + "' (use 500ms, 10s, 2m or milliseconds)"};
}

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<client::Endpoint> parseBootstrap(const std::string& text) {
  std::vector<client::Endpoint> out;
  for (auto& item : splitList(text)) {
    auto colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0) throw UsageError{"bad bootstrap server '" + item + "' (HOST:PORT)"};
    int64_t port = parseInt(item.substr(colon + 1), "bootstrap port");
    if (port <= 0 || port > 65535) throw UsageError{"bad port in bootstrap server '" + item + "'"};
    out.push_back({item.substr(0, colon), static_cast<uint16_t>(port)});
  }
  if (out.empty()) throw UsageError{"--bootstrap names no server"};
  return out;
}

std::string joinList(const std::vector<std::string>& items) {
  std::string out;
  for (auto& s : items) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace groupcoord::groupctl
