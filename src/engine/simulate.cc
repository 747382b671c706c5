#include "engine/simulate.h"

#include <charconv>
#include <cmath>
#include <set>
#include <system_error>

namespace frugal {
namespace {

constexpr std::string_view kKeys = "prefill_ms, decode_ms, batch_slowdown, max_batch, jitter, seed";

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Status BadValue(std::string_view key, std::string_view value, std::string_view want) {
  return InvalidArgument("simulation spec: " + std::string(key) + "=" + std::string(value) + ": " +
                         std::string(want));
}

template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && p == end;
}

void AppendNumber(std::string* out, std::string_view key, double v) {
  char buf[64];
  // Shortest text that reads back as the same double.
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  if (!out->empty()) *out += ',';
  *out += key;
  *out += '=';
  out->append(buf, r.ptr);
}

}  // namespace

StatusOr<SimulationSpec> ParseSimulationSpec(std::string_view spec) {
  SimulationSpec s;
  std::set<std::string, std::less<>> seen;
  if (Trim(spec).empty()) return s;
  while (true) {
    const size_t comma = spec.find(',');
    const std::string_view item = Trim(spec.substr(0, comma));
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgument("simulation spec: '" + std::string(item) +
                             "' is not key=value (keys: " + std::string(kKeys) + ")");
    }
    const std::string_view key = Trim(item.substr(0, eq));
    const std::string_view value = Trim(item.substr(eq + 1));
    if (!seen.insert(std::string(key)).second) {
      return InvalidArgument("simulation spec: " + std::string(key) + " is given twice");
    }
    double* real = key == "prefill_ms"       ? &s.prefill_ms
                   : key == "decode_ms"      ? &s.decode_ms
                   : key == "batch_slowdown" ? &s.batch_slowdown
                   : key == "jitter"         ? &s.jitter
                                             : nullptr;
    if (real != nullptr) {
      if (!ParseNumber(value, real) || !std::isfinite(*real))
        return BadValue(key, value, "not a number");
      if (*real < 0) return BadValue(key, value, "must not be negative");
      if (key == "jitter" && *real >= 1) return BadValue(key, value, "must be below 1");
    } else if (key == "max_batch") {
      if (!ParseNumber(value, &s.max_batch) || s.max_batch < 1 || s.max_batch > 4096) {
        return BadValue(key, value, "must be an integer from 1 to 4096");
      }
    } else if (key == "seed") {
      if (!ParseNumber(value, &s.seed))
        return BadValue(key, value, "must be a non-negative integer");
    } else {
      return InvalidArgument("simulation spec: unknown key '" + std::string(key) +
                             "' (keys: " + std::string(kKeys) + ")");
    }
    if (comma == std::string_view::npos) break;
    spec.remove_prefix(comma + 1);
  }
  return s;
}

std::string FormatSimulationSpec(const SimulationSpec& spec) {
  std::string out;
  AppendNumber(&out, "prefill_ms", spec.prefill_ms);
  AppendNumber(&out, "decode_ms", spec.decode_ms);
  AppendNumber(&out, "batch_slowdown", spec.batch_slowdown);
  if (spec.max_batch > 0) out += ",max_batch=" + std::to_string(spec.max_batch);
  AppendNumber(&out, "jitter", spec.jitter);
  if (spec.seed != 0) out += ",seed=" + std::to_string(spec.seed);
  return out;
}

StepTimeModel::StepTimeModel(const SimulationSpec& spec)
    : spec_(spec), rng_(spec.seed != 0 ? spec.seed : std::random_device{}()) {}

double StepTimeModel::StepMs(int64_t prefill_tokens, int64_t decode_sequences) {
  double ms = static_cast<double>(prefill_tokens) * spec_.prefill_ms;
  if (decode_sequences > 0) {
    ms += spec_.decode_ms * (1 + spec_.batch_slowdown * static_cast<double>(decode_sequences - 1));
  }
  if (spec_.jitter > 0)
    ms *= std::uniform_real_distribution<double>(1 - spec_.jitter, 1 + spec_.jitter)(rng_);
  return ms;
}

}  // namespace frugal
