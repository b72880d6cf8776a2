// LineChart: a line chart written as SVG text (no plotting dependency). Axes with ticks and
// grid lines, optional log x axis, solid or dashed series with point markers, labelled vertical
// markers, and a legend to the right of the plot.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace idem::retention {

struct ChartAxis {
  std::string label;
  bool log = false;                           // log scale (values must be > 0)
  std::function<std::string(double)> format;  // tick labels; null: "%g"
  std::vector<double> ticks;                  // empty: chosen automatically
};

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in order
  std::string color;
  bool dashed = false;
  bool markers = false;
};

struct ChartMarker {
  double x = 0;
  std::string label;
};

class LineChart {
 public:
  std::string title;
  ChartAxis x, y;
  std::vector<ChartSeries> series;
  std::vector<ChartMarker> markers;

  // An SVG <g> drawing the chart in the box (left, top, width, height).
  std::string Render(double left, double top, double width, double height) const;
};

// A complete SVG file around `body`, white background.
std::string SvgDocument(double width, double height, const std::string& body);
// The i-th colour of a 10-colour palette readable on white (wraps around).
std::string PaletteColor(size_t i);
// Escapes &, <, >, " for SVG text and attributes.
std::string SvgEscape(const std::string& text);

}  // namespace idem::retention
