#include "metrics/Registry.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace groupcoord::metrics {

std::string_view typeName(Type type) {
  switch (type) {
    case Type::Counter: return "counter";
    case Type::Gauge: return "gauge";
    case Type::Histogram: return "histogram";
  }
  return "untyped";
}

std::string escapeHelp(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    if (ch == '\\') out += "\\\\";
    else if (ch == '\n') out += "\\n";
    else out += ch;
  }
  return out;
}

std::string escapeLabelValue(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    if (ch == '\\') out += "\\\\";
    else if (ch == '"') out += "\\\"";
    else if (ch == '\n') out += "\\n";
    else out += ch;
  }
  return out;
}

std::string formatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // Counts print as integers ("1000000", not "1e+06").
  if (std::fabs(value) < 1e15 && value == std::trunc(value)) return std::to_string(static_cast<int64_t>(value));
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::general);
  if (ec != std::errc()) return "NaN";
  return std::string(buf, end);
}

namespace {
bool nameChar(char ch, bool first, bool colonAllowed) {
  if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_') return true;
  if (ch == ':' && colonAllowed) return true;
  return !first && ch >= '0' && ch <= '9';
}
}  // namespace

bool validMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!nameChar(name[i], i == 0, true)) return false;
  }
  return true;
}

bool validLabelName(std::string_view name) {
  if (name.empty() || name.substr(0, 2) == "__") return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!nameChar(name[i], i == 0, false)) return false;
  }
  return true;
}

void FamilyWriter::line(std::string_view suffix, const Labels& labels,
                        const std::pair<std::string, std::string>* extra, std::string_view value) {
  out_.append(name_).append(suffix);
  if (!labels.empty() || extra != nullptr) {
    out_ += '{';
    bool first = true;
    auto put = [&](const std::pair<std::string, std::string>& l) {
      // A label name the format cannot carry is dropped rather than
      // producing a line no scraper can parse.
      if (!validLabelName(l.first)) return;
      if (!first) out_ += ',';
      first = false;
      out_.append(l.first).append("=\"").append(escapeLabelValue(l.second)).append("\"");
    };
    for (const auto& l : labels) put(l);
    if (extra != nullptr) put(*extra);
    out_ += '}';
  }
  out_ += ' ';
  out_.append(value);
  out_ += '\n';
}

void FamilyWriter::value(const Labels& labels, double v) { line("", labels, nullptr, formatValue(v)); }

void FamilyWriter::histogram(const Labels& labels, const Histogram::Snapshot& s, double divisor) {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < s.buckets.size(); ++i) {
    cumulative += s.buckets[i];
    const std::pair<std::string, std::string> le{
        "le", i < s.bounds.size() ? formatValue(static_cast<double>(s.bounds[i]) / divisor) : "+Inf"};
    line("_bucket", labels, &le, std::to_string(cumulative));
  }
  line("_sum", labels, nullptr, formatValue(static_cast<double>(s.sum) / divisor));
  line("_count", labels, nullptr, std::to_string(cumulative));
}

bool Registry::add(std::string name, std::string help, Type type, Collect collect) {
  if (!validMetricName(name) || !collect) return false;
  MutexLock lock(mutex_);
  for (const auto& f : families_) {
    if (f.name == name) return false;
  }
  families_.push_back(Family{std::move(name), std::move(help), type, std::move(collect)});
  return true;
}

bool Registry::addCounter(std::string name, std::string help, const Counter& counter) {
  return add(std::move(name), std::move(help), Type::Counter,
             [&counter](FamilyWriter& w) { w.value(static_cast<double>(counter.value())); });
}

bool Registry::addGauge(std::string name, std::string help, std::function<double()> read) {
  if (!read) return false;
  return add(std::move(name), std::move(help), Type::Gauge,
             [read = std::move(read)](FamilyWriter& w) { w.value(read()); });
}

bool Registry::addHistogram(std::string name, std::string help, const Histogram& histogram, double divisor) {
  return add(std::move(name), std::move(help), Type::Histogram,
             [&histogram, divisor](FamilyWriter& w) { w.histogram({}, histogram.snapshot(), divisor); });
}

std::string Registry::render() const {
  std::string out;
  MutexLock lock(mutex_);
  for (const auto& f : families_) {
    out.append("# HELP ").append(f.name).append(" ").append(escapeHelp(f.help)).append("\n");
    out.append("# TYPE ").append(f.name).append(" ").append(typeName(f.type)).append("\n");
    FamilyWriter writer(out, f.name);
    f.collect(writer);
  }
  return out;
}

std::map<std::string, double> parseSamples(std::string_view text) {
  std::map<std::string, double> samples;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == std::string_view::npos) continue;
    const std::string value(line.substr(space + 1));
    samples[std::string(line.substr(0, space))] = value == "+Inf" ? HUGE_VAL : std::strtod(value.c_str(), nullptr);
  }
  return samples;
}

}  // namespace groupcoord::metrics
