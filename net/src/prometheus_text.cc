#include "prometheus_text.h"

#include <charconv>
#include <cmath>

namespace idem {
namespace {

// HELP text escapes backslash and newline; label values also escape the double quote.
void AppendEscaped(std::string_view text, bool quote, std::string* out) {
  for (char c : text) {
    switch (c) {
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '"':
        if (quote) {
          out->append("\\\"");
        } else {
          out->push_back(c);
        }
        break;
      default:
        out->push_back(c);
    }
  }
}

using Labels = std::vector<std::pair<std::string, std::string>>;

// `{a="x",b="y"}` with `extra` (le="...") last; nothing at all without labels.
void AppendLabels(const Labels& labels, std::string_view extra_name, std::string_view extra_value,
                  std::string* out) {
  if (labels.empty() && extra_name.empty()) return;
  out->push_back('{');
  bool first = true;
  auto one = [&](std::string_view name, std::string_view value) {
    if (!first) out->push_back(',');
    first = false;
    out->append(name);
    out->append("=\"");
    AppendEscaped(value, true, out);
    out->push_back('"');
  };
  for (const auto& [name, value] : labels) one(name, value);
  if (!extra_name.empty()) one(extra_name, extra_value);
  out->push_back('}');
}

void AppendLine(std::string_view name, std::string_view suffix, const Labels& labels,
                std::string_view extra_name, std::string_view extra_value, double value,
                std::string* out) {
  out->append(name);
  out->append(suffix);
  AppendLabels(labels, extra_name, extra_value, out);
  out->push_back(' ');
  out->append(FormatPrometheusValue(value));
  out->push_back('\n');
}

}  // namespace

std::string FormatPrometheusValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // Integral values below 2^63 print without exponent or point, as counters usually are.
  if (value == std::trunc(value) && std::fabs(value) < 9.2e18) {
    return std::to_string(static_cast<int64_t>(value));
  }
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);  // shortest round trip
  return std::string(buf, ec == std::errc() ? end : buf);
}

void AppendPrometheusText(std::span<const MetricFamily> families, std::string* out) {
  for (const MetricFamily& f : families) {
    out->append("# HELP ");
    out->append(f.name);
    out->push_back(' ');
    AppendEscaped(f.help, false, out);
    out->append("\n# TYPE ");
    out->append(f.name);
    out->push_back(' ');
    out->append(MetricTypeName(f.type));
    out->push_back('\n');
    for (const MetricSample& s : f.samples) {
      if (f.type != MetricType::kHistogram) {
        AppendLine(f.name, "", s.labels, "", "", s.value, out);
        continue;
      }
      bool has_inf = false;
      for (const auto& [bound, count] : s.buckets) {
        has_inf = std::isinf(bound);
        AppendLine(f.name, "_bucket", s.labels, "le", FormatPrometheusValue(bound),
                   static_cast<double>(count), out);
      }
      if (!has_inf) {  // the format requires the +Inf bucket
        AppendLine(f.name, "_bucket", s.labels, "le", "+Inf", static_cast<double>(s.count), out);
      }
      AppendLine(f.name, "_sum", s.labels, "", "", s.sum, out);
      AppendLine(f.name, "_count", s.labels, "", "", static_cast<double>(s.count), out);
    }
  }
}

}  // namespace idem
