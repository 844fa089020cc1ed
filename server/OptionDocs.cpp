#include "server/OptionDocs.h"

#include <cctype>
#include <fstream>
#include <limits>
#include <sstream>

#include "server/Config.h"

namespace groupcoord::server {

namespace {

using options::Kind;
using options::Option;

// "a, b or c" from "a|b|c".
std::string choiceWords(std::string_view words) {
  const std::vector<std::string_view> list = choiceList(words);
  std::string out;
  for (size_t i = 0; i < list.size(); ++i) {
    if (i > 0) out += i + 1 == list.size() ? " or " : ", ";
    out += list[i];
  }
  return out;
}

// A table cell: a '|' would end it.
std::string cell(std::string_view text) {
  std::string out;
  for (char ch : text) {
    if (ch == '|') out += '\\';
    out += ch;
  }
  return out;
}

// The value the example file shows after "key=": the default.
std::string exampleValue(const Option& o) {
  return o.kind == Kind::Integer ? std::to_string(o.intDefault) : std::string(o.textDefault);
}

// GitHub's anchor of a heading: lower case, spaces to '-', other
// punctuation dropped.
std::string anchorOf(std::string_view heading) {
  std::string out;
  for (char ch : heading) {
    const unsigned char u = static_cast<unsigned char>(ch);
    if (std::isalnum(u)) {
      out += static_cast<char>(std::tolower(u));
    } else if (ch == ' ' || ch == '-') {
      out += '-';
    }
  }
  return out;
}

}  // namespace

std::vector<std::string_view> choiceList(std::string_view words) {
  std::vector<std::string_view> list;
  while (!words.empty()) {
    const size_t bar = words.find('|');
    list.push_back(words.substr(0, bar));
    words = bar == std::string_view::npos ? std::string_view() : words.substr(bar + 1);
  }
  return list;
}

std::string wrapText(std::string_view text, size_t width, std::string_view prefix) {
  std::string out;
  std::string line(prefix);
  bool empty = true;
  while (!text.empty()) {
    const size_t start = text.find_first_not_of(' ');
    if (start == std::string_view::npos) break;
    text.remove_prefix(start);
    const size_t end = text.find(' ');
    const std::string_view word = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end);
    if (!empty && line.size() + 1 + word.size() > width) {
      out += line + '\n';
      line = std::string(prefix);
      empty = true;
    }
    if (!empty) line += ' ';
    line += word;
    empty = false;
  }
  if (!empty) out += line + '\n';
  return out;
}

std::string shownDefault(const Option& o) {
  const std::string value = exampleValue(o);
  return value.empty() ? "(empty)" : value;
}

std::string allowedValues(const Option& o) {
  switch (o.kind) {
    case Kind::Integer:
      if (!o.allowed.empty()) return std::string(o.allowed);
      if (o.max == std::numeric_limits<int64_t>::max()) return ">= " + std::to_string(o.min);
      return std::to_string(o.min) + ".." + std::to_string(o.max);
    case Kind::Choice:
      return choiceWords(o.valueName);
    case Kind::Text:
    case Kind::Secret:
      break;
  }
  return std::string(o.valueName);
}

std::string helpWithAllowed(const Option& o) {
  std::string help(o.help);
  if (o.kind == Kind::Integer || o.kind == Kind::Choice) help += " Allowed: " + allowedValues(o) + ".";
  return help;
}

std::string propertiesFile() {
  std::string out =
      "# groupcoordd configuration: every option, with its default.\n"
      "#\n"
      "# Read with `groupcoordd --config=FILE` (or GROUPCOORDD_CONFIG=FILE). One\n"
      "# `key=value` per line; `#` or `!` starts a comment. A setting left\n"
      "# commented out keeps its default. An environment variable\n"
      "# (GROUPCOORDD_<KEY>, dots as underscores) overrides the file, and a\n"
      "# command-line option (--<key with dashes>) overrides both.\n"
      "# `groupcoordd --help` and docs/options.md list the same options.\n"
      "#\n"
      "# This file may hold zk.digest.password: keep it readable by the server's\n"
      "# user only (root:groupcoord, mode 0640).\n"
      "#\n"
      "# `groupcoordd --print-properties` prints this file from the server's\n"
      "# option table; in the source tree, `scripts/dev.sh generate` writes it\n"
      "# and a test fails when it is not what the table prints.\n";
  std::string_view section;
  for (const Option& o : options::kOptions) {
    if (o.section != section) {
      section = o.section;
      out += "\n## " + std::string(section) + "\n";
    }
    out += "\n" + wrapText(helpWithAllowed(o), 76, "# ");
    out += "# default: " + shownDefault(o) + "\n";
    out += (o.setInExample ? "" : "#") + std::string(o.key) + "=" + exampleValue(o) + "\n";
  }
  return out;
}

std::string optionsMarkdown() {
  std::string out =
      "# groupcoordd's options\n"
      "\n"
      "<!-- Printed from common/Options.h by `scripts/dev.sh generate`; a test fails when this file is not what\n"
      "     the table prints. Edit the table, not this file. -->\n"
      "\n"
      "Every option has a properties key (`zk.connect`), a command-line form (`--zk-connect=...`) and an\n"
      "environment variable (`GROUPCOORDD_ZK_CONNECT`). The command line wins over the environment, which wins\n"
      "over the `--config FILE` of `key=value` lines (packaging/groupcoordd.properties has every option, commented\n"
      "out at its default), which wins over the default. A value outside what the option allows stops\n"
      "`groupcoordd` at start with a message naming the option, where the value came from and the value.\n"
      "`groupcoordd --help` prints the same list.\n";
  std::string_view section;
  std::string contents;
  for (const Option& o : options::kOptions) {
    if (o.section == section) continue;
    section = o.section;
    contents += "- [" + std::string(section) + "](#" + anchorOf(section) + ")\n";
  }
  out += "\n" + contents;
  section = {};
  for (const Option& o : options::kOptions) {
    if (o.section != section) {
      section = o.section;
      out += "\n## " + std::string(section) + "\n\n";
      out += "| key, command line, environment | default | allowed | what it does |\n";
      out += "|---|---|---|---|\n";
    }
    out += "| `" + std::string(o.key) + "`<br>`--" + cliName(o.key) + "`<br>`" + envName(o.key) + "` | `" +
           cell(shownDefault(o)) + "` | " + cell(allowedValues(o)) + " | " + cell(o.help) + " |\n";
  }
  return out;
}

std::string firstOptionsTable() {
  std::string out = "| option | default | what it does |\n|---|---|---|\n";
  for (const Option& o : options::kOptions) {
    if (!o.first) continue;
    out += "| `--" + cliName(o.key) + "` | `" + cell(shownDefault(o)) + "` | " + cell(o.help) + " |\n";
  }
  return out;
}

std::string withFirstOptions(const std::string& readme, const std::string& table) {
  const size_t begin = readme.find(std::string(kFirstOptionsBegin) + "\n");
  if (begin == std::string::npos) return "";
  const size_t from = begin + kFirstOptionsBegin.size() + 1;
  const size_t end = readme.find(std::string(kFirstOptionsEnd) + "\n", from);
  if (end == std::string::npos) return "";
  return readme.substr(0, from) + table + readme.substr(end);
}

std::vector<GeneratedFile> generatedFiles(const std::string& root) {
  std::vector<GeneratedFile> files;
  files.push_back({"packaging/groupcoordd.properties", propertiesFile(), ""});
  files.push_back({"docs/options.md", optionsMarkdown(), ""});
  GeneratedFile readme{"README.md", "", ""};
  readme.want = withFirstOptions(fileText(root + "/README.md"), firstOptionsTable());
  if (readme.want.empty()) {
    readme.error = "README.md has no pair of lines '" + std::string(kFirstOptionsBegin) + "' and '" +
                   std::string(kFirstOptionsEnd) + "'";
  }
  files.push_back(std::move(readme));
  return files;
}

}  // namespace groupcoord::server
