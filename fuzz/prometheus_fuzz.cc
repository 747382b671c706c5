// libFuzzer target for what the gateway reads from other engines' /metrics
// (balancer/prometheus.h, balancer/load_adapters.h): any bytes, split at the first NUL into two
// scrapes, are parsed, given to DetectKind and to every kind's adapter one after the other (so
// the rates between scrapes run too), the second also as llama.cpp's /slots JSON over the
// llamacpp report, and must yield a value or a Status, never a crash or a sanitizer report; a
// report holds only finite, non-negative fields, counts and a KV share in 0..1.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "balancer/load_adapters.h"
#include "balancer/prometheus.h"

namespace {

using frugal::gateway::WorkerKind;
using frugal::gateway::WorkerLoad;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckLoad(const WorkerLoad& l) {
  Check(l.waiting >= 0 && l.running >= 0);
  for (const double v : {l.backlog_ms, l.prefill_ms_per_token, l.decode_ms_per_token, l.kv_usage})
    Check(std::isfinite(v) && v >= 0);
  Check(l.kv_usage <= 1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const size_t cut = all.find('\0');
  const std::string_view a = all.substr(0, cut),
                         b = cut == std::string_view::npos ? all : all.substr(cut + 1);
  const auto set = frugal::gateway::ParsePrometheusText(a);
  if (set.ok()) {
    for (const auto& s : set->samples()) Check(!s.name.empty());
    (void)set->Histogram("x");
  }
  (void)frugal::gateway::DetectKind(b);
  for (const WorkerKind k : {WorkerKind::kVllm, WorkerKind::kSglang, WorkerKind::kLlamaCpp,
                             WorkerKind::kTgi, WorkerKind::kOpenAi}) {
    frugal::gateway::MetricsLoadAdapter adapter(k);
    for (const auto& [text, now] : {std::pair{a, 1.0}, std::pair{b, 2.0}}) {
      auto l = adapter.Update(text, now);
      if (!l.ok()) continue;
      CheckLoad(*l);
      if (k == WorkerKind::kLlamaCpp) {  // the second part as llama.cpp's /slots too
        (void)frugal::gateway::ApplyLlamaCppSlots(b, *l);
        CheckLoad(*l);
      }
    }
  }
  return 0;
}
