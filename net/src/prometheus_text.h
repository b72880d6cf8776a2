// The Prometheus text exposition format, version 0.0.4 (what GET /metrics serves, with
// Content-Type: text/plain; version=0.0.4; charset=utf-8):
//
//   # HELP <name> <help, with \ and newline escaped>
//   # TYPE <name> counter|gauge|histogram
//   <name>{<label>="<value, with \ " and newline escaped>",...} <value>
//   <name>_bucket{...,le="<bound>"} <cumulative count>   (histograms: every bound, then +Inf)
//   <name>_sum{...} <sum>
//   <name>_count{...} <count>
//
// Values are Go-parseable floats: integers print as integers, others in the shortest form that
// reads back to the same double, and +Inf, -Inf, NaN as spelled here.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "idem/metrics.h"

namespace idem {

inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// Appends `families` to `out`. Names and label names must already be valid Prometheus names
// ([a-zA-Z_:][a-zA-Z0-9_:]*, labels without ':'); help and label values may hold any bytes.
void AppendPrometheusText(std::span<const MetricFamily> families, std::string* out);

// A sample value as the format spells it.
std::string FormatPrometheusValue(double value);

}  // namespace idem
