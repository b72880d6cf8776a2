#include "svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace idem::retention {
namespace {

constexpr double kMarginLeft = 78, kMarginRight = 16, kMarginTop = 30, kMarginBottom = 46;
constexpr double kLegendWidth = 230;

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string DefaultFormat(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// About `target` round-numbered ticks from 0 (or lo) to at least hi: steps of 1, 2 or 5 x 10^k.
std::vector<double> NiceTicks(double lo, double hi, int target) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  }
  std::vector<double> ticks;
  for (double t = std::floor(lo / step) * step; t < hi + step * 0.999; t += step) {
    ticks.push_back(t);
  }
  return ticks;
}

struct Scale {
  double lo = 0, hi = 1, px_lo = 0, px_hi = 1;
  bool log = false;
  double operator()(double v) const {
    const double a = log ? std::log10(std::max(v, 1e-300)) : v;
    const double l = log ? std::log10(lo) : lo;
    const double h = log ? std::log10(hi) : hi;
    return px_lo + (a - l) / (h - l) * (px_hi - px_lo);
  }
};

}  // namespace

std::string SvgEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string PaletteColor(size_t i) {
  static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  return kColors[i % std::size(kColors)];
}

std::string SvgDocument(double width, double height, const std::string& body) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
         "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
         Num(width) + "\" height=\"" + Num(height) + "\" viewBox=\"0 0 " + Num(width) + " " +
         Num(height) +
         "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n"
         "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n" +
         body + "</svg>\n";
}

std::string LineChart::Render(double left, double top, double width, double height) const {
  // Data range; y always starts at 0 (counts and bytes).
  double x_lo = std::numeric_limits<double>::max(), x_hi = std::numeric_limits<double>::lowest();
  double y_hi = 0;
  for (const auto& s : series) {
    for (const auto& [px, py] : s.points) {
      x_lo = std::min(x_lo, px);
      x_hi = std::max(x_hi, px);
      y_hi = std::max(y_hi, py);
    }
  }
  for (const auto& m : markers) {
    x_lo = std::min(x_lo, m.x);
    x_hi = std::max(x_hi, m.x);
  }
  if (x_lo > x_hi) x_lo = 0, x_hi = 1;
  std::vector<double> x_ticks = x.ticks;
  if (x_ticks.empty()) {
    if (x.log) {
      for (double p = std::pow(10.0, std::floor(std::log10(x_lo))); p <= x_hi * 1.0001; p *= 10) {
        x_ticks.push_back(p);
      }
    } else {
      x_ticks = NiceTicks(x_lo, x_hi, 8);
    }
  }
  for (double t : x_ticks) {
    x_lo = std::min(x_lo, t);
    x_hi = std::max(x_hi, t);
  }
  if (x.log) {
    // A little room around the first and last point.
    x_lo /= 1.25;
    x_hi *= 1.25;
  }
  if (x_hi <= x_lo) x_hi = x_lo + 1;
  std::vector<double> y_ticks = y.ticks.empty() ? NiceTicks(0, y_hi > 0 ? y_hi : 1, 5) : y.ticks;
  const double y_top = std::max(y_ticks.back(), y_hi);

  const double plot_left = left + kMarginLeft;
  const double plot_right = left + width - kLegendWidth - kMarginRight;
  const double plot_top = top + kMarginTop;
  const double plot_bottom = top + height - kMarginBottom;
  const Scale sx{x_lo, x_hi, plot_left, plot_right, x.log};
  const Scale sy{0, y_top, plot_bottom, plot_top, false};
  auto fx = x.format ? x.format : DefaultFormat;
  auto fy = y.format ? y.format : DefaultFormat;

  std::string out = "<g>\n";
  out += "<text x=\"" + Num(plot_left) + "\" y=\"" + Num(top + 18) +
         "\" font-size=\"14\" font-weight=\"bold\">" + SvgEscape(title) + "</text>\n";
  // Grid and tick labels.
  for (double t : y_ticks) {
    const double py = sy(t);
    out += "<line x1=\"" + Num(plot_left) + "\" y1=\"" + Num(py) + "\" x2=\"" + Num(plot_right) +
           "\" y2=\"" + Num(py) + "\" stroke=\"#e0e0e0\"/>\n";
    out += "<text x=\"" + Num(plot_left - 6) + "\" y=\"" + Num(py + 4) + "\" text-anchor=\"end\">" +
           SvgEscape(fy(t)) + "</text>\n";
  }
  for (double t : x_ticks) {
    const double px = sx(t);
    out += "<line x1=\"" + Num(px) + "\" y1=\"" + Num(plot_top) + "\" x2=\"" + Num(px) +
           "\" y2=\"" + Num(plot_bottom) + "\" stroke=\"#e0e0e0\"/>\n";
    out += "<text x=\"" + Num(px) + "\" y=\"" + Num(plot_bottom + 16) +
           "\" text-anchor=\"middle\">" + SvgEscape(fx(t)) + "</text>\n";
  }
  out += "<rect x=\"" + Num(plot_left) + "\" y=\"" + Num(plot_top) + "\" width=\"" +
         Num(plot_right - plot_left) + "\" height=\"" + Num(plot_bottom - plot_top) +
         "\" fill=\"none\" stroke=\"#404040\"/>\n";
  out += "<text x=\"" + Num((plot_left + plot_right) / 2) + "\" y=\"" + Num(plot_bottom + 36) +
         "\" text-anchor=\"middle\">" + SvgEscape(x.label) + "</text>\n";
  const double ly = (plot_top + plot_bottom) / 2;
  out += "<text x=\"" + Num(left + 14) + "\" y=\"" + Num(ly) +
         "\" text-anchor=\"middle\" transform=\"rotate(-90 " + Num(left + 14) + " " + Num(ly) +
         ")\">" + SvgEscape(y.label) + "</text>\n";
  // Vertical markers.
  for (size_t i = 0; i < markers.size(); ++i) {
    const ChartMarker& m = markers[i];
    const double px = sx(m.x);
    out += "<line x1=\"" + Num(px) + "\" y1=\"" + Num(plot_top) + "\" x2=\"" + Num(px) +
           "\" y2=\"" + Num(plot_bottom) + "\" stroke=\"#606060\" stroke-dasharray=\"2,3\"/>\n";
    out += "<text x=\"" + Num(px + 3) + "\" y=\"" +
           Num(plot_top + 12 + 14.0 * static_cast<double>(i)) +
           "\" fill=\"#606060\" font-size=\"11\">" + SvgEscape(m.label) + "</text>\n";
  }
  // Series and legend.
  for (size_t i = 0; i < series.size(); ++i) {
    const ChartSeries& s = series[i];
    const std::string dash = s.dashed ? " stroke-dasharray=\"6,4\"" : "";
    if (!s.points.empty()) {
      std::string path;
      for (const auto& [px, py] : s.points) {
        path += (path.empty() ? "M" : " L") + Num(sx(px)) + "," + Num(sy(py));
      }
      out += "<path d=\"" + path + "\" fill=\"none\" stroke=\"" + s.color +
             "\" stroke-width=\"2\"" + dash + "/>\n";
      if (s.markers) {
        for (const auto& [px, py] : s.points) {
          out += "<circle cx=\"" + Num(sx(px)) + "\" cy=\"" + Num(sy(py)) + "\" r=\"3\" fill=\"" +
                 s.color + "\"/>\n";
        }
      }
    }
    const double lx = plot_right + 16;
    const double lyy = plot_top + 8 + 18.0 * static_cast<double>(i);
    out += "<line x1=\"" + Num(lx) + "\" y1=\"" + Num(lyy) + "\" x2=\"" + Num(lx + 26) +
           "\" y2=\"" + Num(lyy) + "\" stroke=\"" + s.color + "\" stroke-width=\"2\"" + dash +
           "/>\n";
    out += "<text x=\"" + Num(lx + 32) + "\" y=\"" + Num(lyy + 4) + "\">" + SvgEscape(s.name) +
           "</text>\n";
  }
  return out + "</g>\n";
}

}  // namespace idem::retention
