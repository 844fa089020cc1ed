#include "client/groupctl/Commands.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "common/Permissions.h"

namespace groupcoord::groupctl {

using nlohmann::json;
using permissions::Rule;

namespace {

struct FileLine {
  std::string text;
  std::optional<Rule> rule;  // set when the line is a rule
};

std::string trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// Every line of the file, each rule parsed; a bad line is a usage error
// naming it (the file is left as it is). A missing file has no lines.
std::vector<FileLine> readRules(const std::string& path, bool mayBeMissing) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (mayBeMissing && access(path.c_str(), F_OK) != 0) return {};
    throw UsageError{"permissions file '" + path + "' cannot be read"};
  }
  std::vector<FileLine> lines;
  std::string text;
  size_t number = 0;
  while (std::getline(in, text)) {
    ++number;
    FileLine l{text, std::nullopt};
    const std::string t = trimmed(text);
    if (!t.empty() && t[0] != '#') {
      Rule r;
      std::string why = permissions::parseRule(t, &r);
      if (!why.empty()) {
        throw UsageError{"permissions file '" + path + "' line " + std::to_string(number) + ": " + why +
                         " (nothing changed)"};
      }
      l.rule = std::move(r);
    }
    lines.push_back(std::move(l));
  }
  return lines;
}

// Writes the lines to a file beside `path` and renames it over `path`, so
// that a server reading it on SIGHUP sees the old file or the new one,
// never half of one. Keeps the old file's mode.
void writeRules(const std::string& path, const std::vector<FileLine>& lines) {
  const std::string temp = path + ".groupctl-" + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) throw UsageError{"cannot write '" + temp + "' beside the permissions file"};
    for (auto& l : lines) out << l.text << '\n';
    out.flush();
    if (!out) {
      std::remove(temp.c_str());
      throw UsageError{"cannot write '" + temp + "' beside the permissions file"};
    }
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) ::chmod(temp.c_str(), st.st_mode & 07777);
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    throw UsageError{"cannot replace the permissions file '" + path + "'"};
  }
}

json ruleJson(const Rule& r, size_t line) {
  json ops = json::array();
  for (int i = 0; i < permissions::kOperationCount; ++i) {
    if (r.operations & (1u << i)) ops.push_back(std::string(permissions::operationName(static_cast<permissions::Operation>(i))));
  }
  std::string principal = r.principal == Rule::Principal::Anyone ? "*"
                          : r.principal == Rule::Principal::User ? "user:" + r.who
                                                                  : "role:" + r.who;
  std::string resource = r.resource == Rule::Resource::AnyGroup ? "any"
                         : r.resource == Rule::Resource::Group  ? "group"
                                                                : "prefix";
  return json{{"line", line},         {"effect", r.allow ? "allow" : "deny"}, {"principal", principal},
              {"operations", ops},    {"resource", resource},                 {"pattern", r.pattern},
              {"rule", permissions::formatRule(r)}};
}

}  // namespace

// The rule --allow/--deny, --principal, --operation and --group/--prefix
// describe, checked as the server would check its line.
Rule AclCommand::ruleFromOptions(const std::string& command) {
  const bool allow = args_.flags.count("--allow") > 0;
  const bool deny = args_.flags.count("--deny") > 0;
  if (allow == deny) throw UsageError{command + " needs exactly one of --allow and --deny"};
  if (!args_.options.count("--principal")) throw UsageError{command + " needs --principal user:NAME|role:ROLE|*"};
  if (!args_.options.count("--operation")) throw UsageError{command + " needs --operation OPS (e.g. join,commit or all)"};
  const bool group = args_.options.count("--group") > 0;
  const bool prefix = args_.options.count("--prefix") > 0;
  if (group == prefix) throw UsageError{command + " needs exactly one of --group NAME|'*' and --prefix TEXT"};
  const std::string resource = group ? "group:" + args_.options["--group"] : "prefix:" + args_.options["--prefix"];
  const std::string line = std::string(allow ? "allow " : "deny ") + args_.options["--principal"] + " " +
                           args_.options["--operation"] + " " + resource;
  Rule r;
  std::string why = permissions::parseRule(line, &r);
  if (!why.empty()) throw UsageError{why};
  return r;
}

// `acl list | add | remove --file PATH ...`: the permissions file of
// groupcoordd (auth.permissions.file), edited in place.
int AclCommand::run() {
  expectPositionals(args_, 2, "the acl subcommand (list, add or remove)");
  const std::string sub = args_.positional[1];
  if (sub != "list" && sub != "add" && sub != "remove") throw UsageError{"unknown acl subcommand '" + sub + "'"};
  const std::string command = "acl " + sub;
  if (sub == "list") {
    allowOnly(args_, command, {"--file", "--principal", "--group"});
  } else {
    allowOnly(args_, command, {"--file", "--principal", "--operation", "--group", "--prefix", "--allow", "--deny"});
  }
  if (!args_.options.count("--file")) throw UsageError{command + " needs --file PATH (groupcoordd's auth.permissions.file)"};
  const std::string path = args_.options["--file"];

  if (sub == "list") {
    auto lines = readRules(path, false);
    const std::string principal = args_.options.count("--principal") ? args_.options["--principal"] : "";
    const std::string group = args_.options.count("--group") ? args_.options["--group"] : "";
    json rules = json::array();
    std::vector<std::vector<std::string>> rows;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (!lines[i].rule) continue;
      const Rule& r = *lines[i].rule;
      json j = ruleJson(r, i + 1);
      if (!principal.empty() && j["principal"] != principal) continue;
      if (!group.empty() && !r.matchesGroup(group)) continue;
      rules.push_back(j);
      rows.push_back({std::to_string(i + 1), j["effect"], j["principal"], permissions::operationsText(r.operations),
                      r.resource == Rule::Resource::AnyGroup ? "every group"
                      : r.resource == Rule::Resource::Group  ? "group " + r.pattern
                                                             : "prefix " + r.pattern});
    }
    if (json_) {
      std::cout << json{{"file", path}, {"rules", rules}}.dump(2) << "\n";
    } else {
      rows.insert(rows.begin(), {"LINE", "EFFECT", "PRINCIPAL", "OPERATIONS", "GROUPS"});
      printTable(rows);
    }
    return kExitOk;
  }

  const Rule rule = ruleFromOptions(command);
  auto lines = readRules(path, sub == "add");
  size_t count = 0;
  for (auto& l : lines) count += l.rule ? 1 : 0;
  bool changed = false;
  if (sub == "add") {
    bool present = false;
    for (auto& l : lines) present = present || (l.rule && *l.rule == rule);
    if (!present) {
      if (count >= permissions::kMaxRules) throw UsageError{"the file holds the most rules a server reads already"};
      if (lines.empty()) lines.push_back({"# groupcoordd permissions (groupctl acl); EFFECT PRINCIPAL OPERATIONS RESOURCE", {}});
      lines.push_back({permissions::formatRule(rule), rule});
      ++count;
      changed = true;
    }
  } else {
    std::vector<FileLine> kept;
    for (auto& l : lines) {
      if (l.rule && *l.rule == rule) {
        changed = true;
        --count;
        continue;
      }
      kept.push_back(std::move(l));
    }
    lines = std::move(kept);
  }
  if (changed) writeRules(path, lines);
  const std::string text = permissions::formatRule(rule);
  if (json_) {
    std::cout << json{{"file", path}, {sub == "add" ? "added" : "removed", changed}, {"rule", text}, {"rules", count}}
                     .dump(2)
              << "\n";
  } else if (sub == "add") {
    std::cout << (changed ? "added: " : "already there: ") << text << "\n";
  } else {
    std::cout << (changed ? "removed: " : "no such rule: ") << text << "\n";
  }
  if (changed) {
    std::cerr << "groupctl: " << count << " rule(s) in '" << path
              << "'; servers apply them on SIGHUP (e.g. kill -HUP $(pidof groupcoordd))\n";
  }
  if (sub == "remove" && !changed) return kExitServer;
  return kExitOk;
}

}  // namespace groupcoord::groupctl
