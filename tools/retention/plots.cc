#include "plots.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

#include "duration.h"
#include "svg_chart.h"
#include "text_file.h"

namespace idem::retention {
namespace {

constexpr double kWidth = 960;
constexpr double kMiB = 1024.0 * 1024.0;

std::string Mib(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

ChartAxis TtlAxis(const Study& study) {
  ChartAxis axis;
  axis.label = "TTL (log scale)";
  axis.log = true;
  axis.format = [](double s) { return FormatDurationMs(static_cast<int64_t>(s * 1000)); };
  for (const PolicyResult& r : study.results) {
    if (!r.policy.ns_ttl_ms.empty()) continue;
    const double s = static_cast<double>(r.policy.default_ttl_ms) / 1000.0;
    if (std::find(axis.ticks.begin(), axis.ticks.end(), s) == axis.ticks.end()) {
      axis.ticks.push_back(s);
    }
  }
  std::sort(axis.ticks.begin(), axis.ticks.end());
  return axis;
}

// Single-TTL results (keys not remembered) grouped by strategy, each sorted by TTL.
std::map<Strategy, std::vector<const PolicyResult*>> ByStrategy(const Study& study) {
  std::map<Strategy, std::vector<const PolicyResult*>> groups;
  for (const PolicyResult& r : study.results) {
    if (r.policy.ns_ttl_ms.empty() && r.policy.remember_ms == 0) {
      groups[r.policy.strategy].push_back(&r);
    }
  }
  for (auto& [strategy, list] : groups) {
    std::sort(list.begin(), list.end(), [](const PolicyResult* a, const PolicyResult* b) {
      return a->policy.default_ttl_ms < b->policy.default_ttl_ms;
    });
  }
  return groups;
}

}  // namespace

std::string TtlTradeoffSvg(const Study& study) {
  const auto groups = ByStrategy(study);
  LineChart missed;
  missed.title =
      "Duplicates missed (executed twice) against TTL (the TTL alone decides: strategies overlap)";
  missed.x = TtlAxis(study);
  missed.y.label = "missed duplicates";
  LineChart disk;
  disk.title = "Disk (table files, sst_bytes) against TTL";
  disk.x = TtlAxis(study);
  disk.y.label = "MiB";
  disk.y.format = Mib;
  size_t color = 0;
  for (const auto& [strategy, list] : groups) {
    const std::string name(StrategyName(strategy));
    ChartSeries m{name, {}, PaletteColor(color), strategy == Strategy::kCompactionOnly, true};
    ChartSeries peak{name + ": peak", {}, PaletteColor(color), false, true};
    ChartSeries final_bytes{name + ": at the end", {}, PaletteColor(color), true, true};
    for (const PolicyResult* r : list) {
      const double ttl_s = static_cast<double>(r->policy.default_ttl_ms) / 1000.0;
      m.points.emplace_back(ttl_s, static_cast<double>(r->duplicates_missed));
      peak.points.emplace_back(ttl_s, static_cast<double>(r->disk_bytes_peak) / kMiB);
      final_bytes.points.emplace_back(ttl_s, static_cast<double>(r->disk_bytes_final) / kMiB);
    }
    missed.series.push_back(std::move(m));
    disk.series.push_back(std::move(peak));
    disk.series.push_back(std::move(final_bytes));
    ++color;
  }
  const double panel = 320;
  return SvgDocument(kWidth, 2 * panel,
                     missed.Render(0, 0, kWidth, panel) + disk.Render(0, panel, kWidth, panel));
}

std::string DiskOverTimeSvg(const Study& study) {
  const double end_ms = static_cast<double>(study.last_arrival_ms + study.sim.drain_ms);
  const bool days = end_ms > 3.0 * kDay;
  const double unit = days ? static_cast<double>(kDay) : static_cast<double>(kHour);
  LineChart chart;
  chart.title = "Disk (table files, sst_bytes) over simulated time";
  chart.x.label = days ? "simulated time (days)" : "simulated time (hours)";
  chart.y.label = "MiB";
  chart.y.format = Mib;
  // Same colour for the same TTL under every strategy; dashed = compaction-only, point markers =
  // windows.
  std::map<std::string, size_t> colors;
  for (const PolicyResult& r : study.results) {
    const std::string ttl = r.policy.TtlSpec();
    colors.try_emplace(ttl, colors.size());
    ChartSeries s{r.policy.name,
                  {},
                  PaletteColor(colors[ttl]),
                  r.policy.strategy == Strategy::kCompactionOnly,
                  r.policy.strategy == Strategy::kWindows};
    for (const Sample& sample : r.samples) {
      s.points.emplace_back(static_cast<double>(sample.t_ms) / unit,
                            static_cast<double>(sample.sst_bytes) / kMiB);
    }
    chart.series.push_back(std::move(s));
  }
  chart.markers.push_back(
      {static_cast<double>(study.first_requests_end_ms) / unit, "first requests stop"});
  chart.markers.push_back({static_cast<double>(study.last_arrival_ms) / unit, "last arrival"});
  const double height = std::max(420.0, 60.0 + 18.0 * static_cast<double>(chart.series.size()));
  return SvgDocument(kWidth, height, chart.Render(0, 0, kWidth, height));
}

Status WritePlots(const Study& study, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::IOError("cannot create '" + dir + "': " + ec.message());
  if (Status s = WriteTextFile(dir + "/ttl_tradeoff.svg", TtlTradeoffSvg(study)); !s.ok()) {
    return s;
  }
  return WriteTextFile(dir + "/disk_over_time.svg", DiskOverTimeSvg(study));
}

}  // namespace idem::retention
