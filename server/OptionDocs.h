#pragma once

// The files printed from the option table (common/Options.h): the example
// properties file, docs/options.md and the README's table of first options.
// `groupcoord-options --write DIR` writes them into a checkout, `--check
// DIR` names those that are not what the table prints (a ctest runs it).

#include <string>
#include <string_view>
#include <vector>

#include "common/GeneratedFiles.h"
#include "common/Options.h"

namespace groupcoord::server {

// `text` broken into lines of at most `width` characters (a longer word
// stands alone), each starting with `prefix`; every line ends in '\n'.
std::string wrapText(std::string_view text, size_t width, std::string_view prefix);

// A choice option's words: "allow|tls|never" -> {"allow", "tls", "never"}.
std::vector<std::string_view> choiceList(std::string_view words);

// The default as the files show it: "(empty)" for empty text.
std::string shownDefault(const options::Option& option);

// What a value may be: "0..65535", ">= 1", "allow, tls or never", or the
// value's name for text.
std::string allowedValues(const options::Option& option);

// The option's help, with what an integer or a choice allows appended
// (" Allowed: 0..65535."): what --help and the properties file print.
std::string helpWithAllowed(const options::Option& option);

// packaging/groupcoordd.properties.
std::string propertiesFile();

// docs/options.md.
std::string optionsMarkdown();

// The README's table of the options that matter first (Option::first).
std::string firstOptionsTable();

// Where that table stands in README.md: between these two lines.
inline constexpr std::string_view kFirstOptionsBegin =
    "<!-- The table of first options is printed from common/Options.h: scripts/dev.sh generate -->";
inline constexpr std::string_view kFirstOptionsEnd = "<!-- end of the table of first options -->";

// `readme` with the text between the two marker lines replaced by `table`;
// "" when the markers are missing or out of order.
std::string withFirstOptions(const std::string& readme, const std::string& table);

using generated::fileText;
using generated::GeneratedFile;

// The three files, their contents worked out against the checkout at `root`
// (the README keeps everything outside its markers).
std::vector<GeneratedFile> generatedFiles(const std::string& root);

}  // namespace groupcoord::server
