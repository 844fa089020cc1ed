// The option table (common/Options.h) and what is printed from it: the files
// in the repository must be what it prints, the printed properties file must
// load to the defaults, and every row must be bound to a field.

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

#include "protocol/Messages.h"
#include "server/Config.h"
#include "server/OptionDocs.h"

namespace groupcoord::server {
namespace {


TEST(OptionDocsTest, FilesInTheRepositoryAreWhatTheTablePrints) {
  for (const GeneratedFile& f : generatedFiles(GROUPCOORD_SOURCE_DIR)) {
    ASSERT_TRUE(f.error.empty()) << f.error;
    const std::string have = fileText(std::string(GROUPCOORD_SOURCE_DIR) + "/" + f.path);
    EXPECT_TRUE(have == f.want) << f.path << " is not what common/Options.h prints: run scripts/dev.sh generate";
  }
}

TEST(OptionDocsTest, EveryRowHasAFieldAndOneSpec) {
  EXPECT_EQ(optionSpecs().size(), std::size(options::kOptions));
  std::set<std::string> keys;
  for (const auto& spec : optionSpecs()) {
    ASSERT_NE(spec.row, nullptr) << spec.key;
    EXPECT_EQ(spec.key, spec.row->key);
    EXPECT_TRUE(keys.insert(spec.key).second) << spec.key;
    EXPECT_FALSE(spec.row->help.empty()) << spec.key;
    EXPECT_FALSE(spec.row->section.empty()) << spec.key;
    if (spec.row->kind == options::Kind::Integer) {
      EXPECT_LE(spec.row->min, spec.row->intDefault) << spec.key;
      EXPECT_LE(spec.row->intDefault, spec.row->max) << spec.key;
    }
  }
}

TEST(OptionDocsTest, DefaultsOfTheConfigurationAreTheTables) {
  const ServerConfig defaults;
  for (const auto& spec : optionSpecs()) {
    EXPECT_EQ(spec.get(defaults), shownDefault(*spec.row) == "(empty)" ? "" : shownDefault(*spec.row)) << spec.key;
  }
  EXPECT_EQ(validateConfig(defaults), "");
}

TEST(OptionDocsTest, TheNewestRegisterVersionIsTheProtocols) {
  EXPECT_EQ(options::find("protocol.register.max.version").max,
            protocol::maxVersion(protocol::ApiKey::RegisterConsumer));
}

TEST(OptionDocsTest, ThePrintedPropertiesFileLoadsToTheDefaults) {
  char name[] = "/tmp/groupcoord-properties-XXXXXX";
  const int fd = ::mkstemp(name);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::ofstream(name) << propertiesFile();
  ConfigSources sources;
  sources.propertiesFile = name;
  const auto loaded = loadConfig(sources);
  ::unlink(name);
  ASSERT_TRUE(loaded.ok()) << loaded.error;
  EXPECT_EQ(describeConfig(loaded.config), describeConfig(ServerConfig{}));
  // Every key is in it once, commented out unless the table sets it.
  const std::string text = propertiesFile();
  for (const auto& row : options::kOptions) {
    const std::string line = (row.setInExample ? "\n" : "\n#") + std::string(row.key) + "=";
    const size_t at = text.find(line);
    EXPECT_NE(at, std::string::npos) << row.key;
    EXPECT_EQ(text.find(line, at + 1), std::string::npos) << row.key;
  }
}

TEST(OptionDocsTest, BoundsAndChoicesAreChecked) {
  ServerConfig c;
  c.listenPort = 65536;
  EXPECT_NE(validateConfig(c).find("listen.port"), std::string::npos);
  EXPECT_NE(validateConfig(c).find("0..65535"), std::string::npos) << validateConfig(c);
  c = ServerConfig{};
  c.idleTimeoutMs = 0;
  EXPECT_NE(validateConfig(c).find(">= 1"), std::string::npos) << validateConfig(c);
  c = ServerConfig{};
  c.placementWeight = "bytes";
  EXPECT_NE(validateConfig(c).find("must be members or groups"), std::string::npos) << validateConfig(c);
  c = ServerConfig{};
  c.logLevel = "loud";
  EXPECT_NE(validateConfig(c).find("trace, debug, info, warn, error, critical or off"), std::string::npos)
      << validateConfig(c);
}

TEST(OptionDocsTest, WrapKeepsWordsWholeAndLinesShort) {
  EXPECT_EQ(wrapText("one two three four", 10, "# "), "# one two\n# three\n# four\n");
  EXPECT_EQ(wrapText("", 10, "# "), "");
  EXPECT_EQ(wrapText("averyveryverylongword x", 8, "# "), "# averyveryverylongword\n# x\n");
  for (const auto& row : options::kOptions) {
    std::istringstream lines(wrapText(row.help, 76, "# "));
    for (std::string line; std::getline(lines, line);) {
      // A line of one word may be longer (nothing to break it at).
      if (line.find(' ', 2) != std::string::npos) {
        EXPECT_LE(line.size(), 76u) << line;
      }
    }
  }
}

TEST(OptionDocsTest, TheReadmeTableGoesBetweenItsMarkers) {
  const std::string readme = "intro\n" + std::string(kFirstOptionsBegin) + "\nold\n" +
                             std::string(kFirstOptionsEnd) + "\nrest\n";
  EXPECT_EQ(withFirstOptions(readme, "new\n"),
            "intro\n" + std::string(kFirstOptionsBegin) + "\nnew\n" + std::string(kFirstOptionsEnd) + "\nrest\n");
  EXPECT_EQ(withFirstOptions("no markers\n", "new\n"), "");
  EXPECT_EQ(withFirstOptions(std::string(kFirstOptionsEnd) + "\n" + std::string(kFirstOptionsBegin) + "\n", "x\n"),
            "");
}

}  // namespace
}  // namespace groupcoord::server
