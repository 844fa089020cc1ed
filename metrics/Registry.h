#pragma once

// The Prometheus text exposition format (version 0.0.4) and the registry of
// metric families that a scrape renders.
//
// Families are added at start-up, each with a collect function that writes
// its samples when a scrape renders the registry (on the HTTP server's
// threads): a family reads counters the data path updates without locks, or
// asks its owner for a value (open connections, groups controlled). A
// collect function must be cheap and must not block for long.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/Sync.h"
#include "metrics/Metrics.h"

namespace groupcoord::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

enum class Type { Counter, Gauge, Histogram };
std::string_view typeName(Type type);

// Escaping and number format of the text format.
// HELP text: backslash and line feed escaped.
std::string escapeHelp(std::string_view text);
// Label value: backslash, double quote and line feed escaped.
std::string escapeLabelValue(std::string_view text);
// Shortest text that reads back as the same double; "+Inf", "-Inf", "NaN".
std::string formatValue(double value);
// [a-zA-Z_:][a-zA-Z0-9_:]*
bool validMetricName(std::string_view name);
// [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved)
bool validLabelName(std::string_view name);

// Writes the samples of one family; handed to its collect function.
class FamilyWriter {
 public:
  FamilyWriter(std::string& out, std::string_view name) : out_(out), name_(name) {}
  // `name{labels} value` for a counter or gauge.
  void value(const Labels& labels, double v);
  void value(double v) { value({}, v); }
  // The _bucket (cumulative, with le="+Inf"), _sum and _count lines. Bounds
  // and sum are divided by `divisor` (1e9 turns nanoseconds into seconds).
  void histogram(const Labels& labels, const Histogram::Snapshot& snapshot, double divisor = 1.0);

 private:
  void line(std::string_view suffix, const Labels& labels, const std::pair<std::string, std::string>* extra,
            std::string_view value);

  std::string& out_;
  std::string_view name_;
};

class Registry {
 public:
  using Collect = std::function<void(FamilyWriter&)>;

  // Start-up: false (nothing added) when the name is not a valid metric
  // name or is already registered.
  bool add(std::string name, std::string help, Type type, Collect collect) EXCLUDES(mutex_);

  // Shorthands for one unlabelled series.
  bool addCounter(std::string name, std::string help, const Counter& counter);
  bool addGauge(std::string name, std::string help, std::function<double()> read);
  bool addHistogram(std::string name, std::string help, const Histogram& histogram, double divisor = 1.0);

  // Every family, in the order added, as the text format.
  std::string render() const EXCLUDES(mutex_);

 private:
  struct Family {
    std::string name;
    std::string help;
    Type type;
    Collect collect;
  };
  mutable Mutex mutex_;  // registration and scrapes only, never the data path
  std::vector<Family> families_ GUARDED_BY(mutex_);
};

// The samples of a text in this format, "name{labels}" -> value, for
// whoever reads a scrape back (the tests, the benchmarks). HELP and TYPE
// lines are skipped; "+Inf" reads as infinity.
std::map<std::string, double> parseSamples(std::string_view text);

// The content type of render()'s output.
inline constexpr const char* kTextContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace groupcoord::metrics
