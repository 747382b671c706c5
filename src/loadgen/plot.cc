// `frugal loadgen --plot`: latency over time as one self-contained HTML page with an inline SVG.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "loadgen/format.h"
#include "loadgen/loadgen.h"

namespace frugal::loadgen {
namespace {

const char* PhaseFill(const std::string& name) {
  if (name == "spike") return "#fde2df";
  if (name == "recovery") return "#e3f3e6";
  return "#e8eef8";
}

std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
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

// A tick step of 1, 2 or 5 x 10^k that gives about `want` intervals over `range`.
double NiceStep(double range, int want) {
  const double raw = range / want;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0}) {
    if (raw <= m * mag) return m * mag;
  }
  return 10 * mag;
}

const char* TurnColor(int turn) {
  return turn == 1 ? "#9467bd" : turn == 2 ? "#8c564b" : "#e377c2";
}

}  // namespace

std::string PlotHtml(const RunResult& result) {
  constexpr double kW = 1000, kH = 520, kLeft = 70, kRight = 20, kTop = 50, kBottom = 50;
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  const double t_max = result.phases.empty() ? 1 : result.phases.back().end_s;
  double lat_max = 1;
  for (const auto& r : result.records) lat_max = std::max(lat_max, r.latency_ms);
  const double y_step = NiceStep(lat_max, 6);
  const double y_max = std::ceil(lat_max / y_step) * y_step;
  const double x_step = NiceStep(t_max, 10);
  auto X = [&](double t) { return kLeft + t / t_max * pw; };
  auto Y = [&](double ms) { return kTop + ph - ms / y_max * ph; };

  int64_t errors = 0;
  for (const auto& r : result.records) errors += !r.ok();
  std::ostringstream title;
  title << "frugal loadgen: " << result.target << " (" << result.model << "), "
        << result.records.size() << " requests, " << errors << " errors";
  std::ostringstream svg;
  svg << std::fixed << std::setprecision(1);
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kW << "\" height=\"" << kH
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << kLeft << "\" y=\"20\" font-size=\"14\">" << XmlEscape(title.str())
      << "</text>\n";

  for (const auto& p : result.phases) {
    svg << "<rect x=\"" << X(p.start_s) << "\" y=\"" << kTop << "\" width=\""
        << X(p.end_s) - X(p.start_s) << "\" height=\"" << ph << "\" fill=\"" << PhaseFill(p.name)
        << "\"/>\n"
        << "<text x=\"" << X(p.start_s) + 4 << "\" y=\"" << kTop + 14 << "\" fill=\"#555\">"
        << p.name << " (" << Format("%g", p.rate) << " rps)</text>\n";
  }
  for (double y = 0; y <= y_max + y_step / 2; y += y_step) {
    svg << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + pw << "\" y1=\"" << Y(y) << "\" y2=\""
        << Y(y) << "\" stroke=\"#ccc\" stroke-width=\"0.5\"/>\n"
        << "<text x=\"" << kLeft - 6 << "\" y=\"" << Y(y) + 4 << "\" text-anchor=\"end\">"
        << Format("%g", y) << "</text>\n";
  }
  for (double t = 0; t <= t_max + x_step / 2; t += x_step) {
    svg << "<line x1=\"" << X(t) << "\" x2=\"" << X(t) << "\" y1=\"" << kTop + ph << "\" y2=\""
        << kTop + ph + 5 << "\" stroke=\"#333\"/>\n"
        << "<text x=\"" << X(t) << "\" y=\"" << kTop + ph + 18 << "\" text-anchor=\"middle\">"
        << Format("%g", t) << "</text>\n";
  }
  svg << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + pw << "\" y1=\"" << kTop + ph << "\" y2=\""
      << kTop + ph << "\" stroke=\"#333\"/>\n"
      << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft << "\" y1=\"" << kTop << "\" y2=\""
      << kTop + ph << "\" stroke=\"#333\"/>\n"
      << "<text x=\"" << kLeft + pw / 2 << "\" y=\"" << kH - 10
      << "\" text-anchor=\"middle\">send time (s)</text>\n"
      << "<text transform=\"translate(16 " << kTop + ph / 2
      << ") rotate(-90)\" text-anchor=\"middle\">latency (ms)</text>\n";

  for (size_t i = 0; i < result.records.size(); ++i) {
    const auto& r = result.records[i];
    const char* color = !r.ok() ? "#d62728" : r.cache_hit ? "#2ca02c" : "#1f77b4";
    std::string tip = Format("#%.0f", static_cast<double>(i)) + Format(" at %.2f s: ", r.send_s) +
                      Format("%.0f ms", r.latency_ms) + (r.cache_hit ? ", cache hit" : "");
    if (!r.ok()) tip.append(", ").append(r.error);
    svg << "<circle cx=\"" << X(r.send_s) << "\" cy=\"" << Y(r.latency_ms) << "\" r=\"2.5\" fill=\""
        << color << "\" fill-opacity=\"0.7\"><title>" << XmlEscape(tip) << "</title></circle>\n";
  }

  // Conversations: each request's time to first token, marked by its turn (turn 3 and later
  // share a colour), so a follow-up that finds its prefix shows under the first turns.
  bool any_turn = false;
  for (const auto& r : result.records) {
    if (r.turn <= 0 || !r.ok() || r.ttft_ms < 0) continue;
    any_turn = true;
    const char* color = TurnColor(r.turn);
    svg << "<path d=\"M" << X(r.send_s) - 3 << " " << Y(r.ttft_ms) - 3 << " l6 6 m0 -6 l-6 6\" "
        << "stroke=\"" << color << "\" stroke-width=\"1.2\"><title>"
        << XmlEscape(Format("conversation %.0f", static_cast<double>(r.conversation)) +
                     Format(", turn %.0f", r.turn) + Format(": TTFT %.0f ms", r.ttft_ms))
        << "</title></path>\n";
  }

  // Rolling P95 of successful requests over a trailing window, sampled at 200 points; the line
  // breaks where a window holds no successful request.
  std::vector<std::pair<double, double>> ok;  // (send time, latency)
  for (const auto& r : result.records) {
    if (r.ok()) ok.emplace_back(r.send_s, r.latency_ms);
  }
  std::sort(ok.begin(), ok.end());
  const double window = std::clamp(t_max / 15, 1.0, 10.0);
  std::ostringstream path;
  path << std::fixed << std::setprecision(1);
  bool pen_down = false;
  size_t lo = 0, hi = 0;
  for (int k = 1; k <= 200; ++k) {
    const double t = t_max * k / 200;
    while (hi < ok.size() && ok[hi].first <= t) ++hi;
    while (lo < hi && ok[lo].first < t - window) ++lo;
    std::vector<double> w;
    for (size_t j = lo; j < hi; ++j) w.push_back(ok[j].second);
    const auto p95 = Percentile(std::move(w), 95);
    if (!p95) {
      pen_down = false;
      continue;
    }
    path << (pen_down ? "L" : "M") << X(t) << " " << Y(*p95) << " ";
    pen_down = true;
  }
  if (!path.str().empty())
    svg << "<path d=\"" << path.str()
        << "\" fill=\"none\" stroke=\"#ff7f0e\" stroke-width=\"2\"/>\n";

  std::vector<std::pair<const char*, std::string>> legend = {
      {"#1f77b4", "success"},
      {"#2ca02c", "cache hit"},
      {"#d62728", "error"},
      {"#ff7f0e", Format("rolling P95 (%g s window)", window)}};
  if (any_turn) {
    for (int t = 1; t <= 3; ++t) {
      legend.emplace_back(TurnColor(t), Format(t < 3 ? "TTFT turn %.0f" : "TTFT turn %.0f+", t));
    }
  }
  double lx = kLeft;
  for (const auto& [color, label] : legend) {
    svg << "<rect x=\"" << lx << "\" y=\"30\" width=\"10\" height=\"10\" fill=\"" << color
        << "\"/>\n"
        << "<text x=\"" << lx + 14 << "\" y=\"39\">" << label << "</text>\n";
    lx += 30 + 7 * static_cast<double>(label.size());
  }
  svg << "</svg>\n";
  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" << XmlEscape(title.str())
       << "</title></head>\n<body>\n"
       << svg.str() << "</body></html>\n";
  return html.str();
}

}  // namespace frugal::loadgen
