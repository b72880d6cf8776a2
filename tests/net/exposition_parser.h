// A strict parser of the Prometheus text exposition format 0.0.4, for tests: every line must be
// a HELP, a TYPE or a sample line exactly as the format defines it, and the document must hang
// together (HELP and TYPE once per family, before its samples; a family's samples together;
// histograms complete: _bucket with ascending le ending in +Inf, cumulative counts, _sum,
// _count equal to the +Inf bucket; no series twice; a final newline). Any deviation is an error
// naming the line.
#pragma once

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idem::testing {

struct ParsedSample {
  std::string name;                           // with _bucket/_sum/_count for histograms
  std::map<std::string, std::string> labels;  // unescaped values
  double value = 0;
};

struct ParsedFamily {
  std::string name, help, type;
  std::vector<ParsedSample> samples;
};

struct Exposition {
  std::vector<ParsedFamily> families;
  std::string error;  // empty: the text is valid

  // The value of the series `name{labels}` (labels exactly), or nullopt.
  std::optional<double> Value(std::string_view name,
                              const std::map<std::string, std::string>& labels = {}) const {
    for (const ParsedFamily& f : families) {
      for (const ParsedSample& s : f.samples) {
        if (s.name == name && s.labels == labels) return s.value;
      }
    }
    return std::nullopt;
  }
  // Value, or 0 for a series not present (a labelled counter appears once it counts).
  double ValueOr0(std::string_view name,
                  const std::map<std::string, std::string>& labels = {}) const {
    return Value(name, labels).value_or(0);
  }
  const ParsedFamily* Family(std::string_view name) const {
    for (const ParsedFamily& f : families) {
      if (f.name == name) return &f;
    }
    return nullptr;
  }
};

namespace exposition_detail {

inline bool IsNameStart(char c, bool colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
}
inline bool IsNameChar(char c, bool colon) {
  return IsNameStart(c, colon) || (c >= '0' && c <= '9');
}

// Reads a metric name (colon allowed) or label name (not) at text[*pos].
inline std::optional<std::string> ReadName(std::string_view text, size_t* pos, bool colon) {
  size_t p = *pos;
  if (p >= text.size() || !IsNameStart(text[p], colon)) return std::nullopt;
  while (p < text.size() && IsNameChar(text[p], colon)) ++p;
  std::string out(text.substr(*pos, p - *pos));
  *pos = p;
  return out;
}

// A Go ParseFloat-compatible number as the format allows, or the spellings of infinity and NaN.
inline std::optional<double> ParseValue(std::string_view v) {
  if (v == "+Inf" || v == "Inf") return HUGE_VAL;
  if (v == "-Inf") return -HUGE_VAL;
  if (v == "NaN") return std::nan("");
  if (v.empty()) return std::nullopt;
  size_t i = 0;
  if (v[i] == '+' || v[i] == '-') ++i;
  size_t digits = 0;
  while (i < v.size() && v[i] >= '0' && v[i] <= '9') ++i, ++digits;
  if (i < v.size() && v[i] == '.') {
    ++i;
    while (i < v.size() && v[i] >= '0' && v[i] <= '9') ++i, ++digits;
  }
  if (digits == 0) return std::nullopt;
  if (i < v.size() && (v[i] == 'e' || v[i] == 'E')) {
    ++i;
    if (i < v.size() && (v[i] == '+' || v[i] == '-')) ++i;
    size_t exp_digits = 0;
    while (i < v.size() && v[i] >= '0' && v[i] <= '9') ++i, ++exp_digits;
    if (exp_digits == 0) return std::nullopt;
  }
  if (i != v.size()) return std::nullopt;
  return std::strtod(std::string(v).c_str(), nullptr);
}

// HELP text: only \\ and \n escapes.
inline std::optional<std::string> UnescapeHelp(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out.push_back(s[i]);
      continue;
    }
    if (++i >= s.size()) return std::nullopt;
    if (s[i] == '\\') {
      out.push_back('\\');
    } else if (s[i] == 'n') {
      out.push_back('\n');
    } else {
      return std::nullopt;
    }
  }
  return out;
}

inline std::string Key(const ParsedSample& s) {
  std::string k = s.name;
  for (const auto& [n, v] : s.labels) k += "\x1f" + n + "\x1e" + v;
  return k;
}

}  // namespace exposition_detail

inline Exposition ParseExposition(std::string_view text) {
  using namespace exposition_detail;
  Exposition out;
  auto fail = [&](size_t line_no, std::string_view line, const std::string& why) {
    out.error = "line " + std::to_string(line_no) + ": " + why + ": \"" + std::string(line) + "\"";
    return out;
  };
  if (!text.empty() && text.back() != '\n') return fail(0, "", "no final newline");
  std::set<std::string> family_names;
  std::set<std::string> series;
  ParsedFamily* current = nullptr;
  size_t line_no = 0;
  size_t begin = 0;
  while (begin < text.size()) {
    const size_t end = text.find('\n', begin);
    const std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    ++line_no;
    if (line.empty()) return fail(line_no, line, "empty line");
    if (line[0] == '#') {
      const bool help = line.starts_with("# HELP ");
      const bool type = line.starts_with("# TYPE ");
      if (!help && !type) return fail(line_no, line, "a comment other than HELP or TYPE");
      size_t pos = 7;
      auto name = ReadName(line, &pos, true);
      if (!name || pos >= line.size() || line[pos] != ' ') {
        return fail(line_no, line, "bad metric name");
      }
      const std::string_view rest = line.substr(pos + 1);
      if (help) {  // HELP opens a family: each name once
        if (!family_names.insert(*name).second) return fail(line_no, line, "family seen before");
        auto unescaped = UnescapeHelp(rest);
        if (!unescaped) return fail(line_no, line, "bad escape in HELP");
        out.families.push_back(ParsedFamily{*name, *unescaped, "", {}});
        current = &out.families.back();
      } else {
        if (current == nullptr || current->name != *name || !current->type.empty() ||
            !current->samples.empty()) {
          return fail(line_no, line, "TYPE not right after its HELP");
        }
        if (rest != "counter" && rest != "gauge" && rest != "histogram" && rest != "summary" &&
            rest != "untyped") {
          return fail(line_no, line, "unknown type");
        }
        current->type = std::string(rest);
      }
      continue;
    }
    // A sample: name, optional {labels}, one space, value; no timestamp.
    ParsedSample s;
    size_t pos = 0;
    auto name = ReadName(line, &pos, true);
    if (!name) return fail(line_no, line, "bad metric name");
    s.name = *name;
    if (pos < line.size() && line[pos] == '{') {
      ++pos;
      bool first = true;
      while (true) {
        if (pos < line.size() && line[pos] == '}') {
          ++pos;
          break;
        }
        if (!first) {
          if (pos >= line.size() || line[pos] != ',') return fail(line_no, line, "expected ,");
          ++pos;
        }
        first = false;
        auto label = ReadName(line, &pos, false);
        if (!label) return fail(line_no, line, "bad label name");
        if (label->starts_with("__")) return fail(line_no, line, "reserved label name");
        if (pos + 1 >= line.size() || line[pos] != '=' || line[pos + 1] != '"') {
          return fail(line_no, line, "expected =\"");
        }
        pos += 2;
        std::string value;
        while (true) {
          if (pos >= line.size()) return fail(line_no, line, "unterminated label value");
          const char c = line[pos++];
          if (c == '"') break;
          if (c != '\\') {
            value.push_back(c);
            continue;
          }
          if (pos >= line.size()) return fail(line_no, line, "unterminated escape");
          const char e = line[pos++];
          if (e == '\\') {
            value.push_back('\\');
          } else if (e == '"') {
            value.push_back('"');
          } else if (e == 'n') {
            value.push_back('\n');
          } else {
            return fail(line_no, line, "bad escape in label value");
          }
        }
        if (!s.labels.emplace(*label, value).second) return fail(line_no, line, "label twice");
      }
    }
    if (pos >= line.size() || line[pos] != ' ') return fail(line_no, line, "expected one space");
    auto value = ParseValue(line.substr(pos + 1));
    if (!value) return fail(line_no, line, "bad value (or a timestamp)");
    s.value = *value;
    if (current == nullptr || current->type.empty()) {
      return fail(line_no, line, "sample before its family's HELP and TYPE");
    }
    // The sample must belong to the current family.
    const std::string& f = current->name;
    std::string_view suffix;
    if (s.name != f) {
      if (!s.name.starts_with(f)) return fail(line_no, line, "sample outside its family");
      suffix = std::string_view(s.name).substr(f.size());
      if (current->type != "histogram" ||
          (suffix != "_bucket" && suffix != "_sum" && suffix != "_count")) {
        return fail(line_no, line, "sample outside its family");
      }
    } else if (current->type == "histogram") {
      return fail(line_no, line, "histogram sample without _bucket/_sum/_count");
    }
    if ((suffix == "_bucket") != (s.labels.count("le") == 1)) {
      return fail(line_no, line, "le belongs on _bucket samples only");
    }
    if (suffix == "_bucket" && !ParseValue(s.labels["le"])) {
      return fail(line_no, line, "le is not a number");
    }
    if (current->type == "counter" && !(s.value >= 0)) {
      return fail(line_no, line, "negative or NaN counter");
    }
    if (!series.insert(Key(s)).second) return fail(line_no, line, "series seen before");
    current->samples.push_back(std::move(s));
  }
  // Histograms: per label set, buckets ascending and cumulative, ending at +Inf == _count; _sum.
  for (const ParsedFamily& f : out.families) {
    if (f.type != "histogram") continue;
    std::map<std::map<std::string, std::string>, std::vector<std::pair<double, double>>> buckets;
    std::map<std::map<std::string, std::string>, std::pair<int, double>> sum_count;  // seen, count
    for (const ParsedSample& s : f.samples) {
      std::map<std::string, std::string> labels = s.labels;
      if (s.name == f.name + "_bucket") {
        const double le = *ParseValue(labels["le"]);
        labels.erase("le");
        buckets[labels].emplace_back(le, s.value);
      } else if (s.name == f.name + "_sum") {
        sum_count[labels].first |= 1;
      } else {
        sum_count[labels].first |= 2;
        sum_count[labels].second = s.value;
      }
    }
    for (const auto& [labels, bs] : buckets) {
      for (size_t i = 1; i < bs.size(); ++i) {
        if (!(bs[i].first > bs[i - 1].first) || bs[i].second < bs[i - 1].second) {
          out.error = f.name + ": buckets not ascending and cumulative";
          return out;
        }
      }
      if (bs.empty() || !std::isinf(bs.back().first)) {
        out.error = f.name + ": no le=\"+Inf\" bucket";
        return out;
      }
      auto sc = sum_count.find(labels);
      if (sc == sum_count.end() || sc->second.first != 3) {
        out.error = f.name + ": a series without _sum or _count";
        return out;
      }
      if (sc->second.second != bs.back().second) {
        out.error = f.name + ": _count differs from the +Inf bucket";
        return out;
      }
    }
    if (buckets.size() != sum_count.size()) {
      out.error = f.name + ": _sum/_count without buckets";
      return out;
    }
  }
  return out;
}

}  // namespace idem::testing
