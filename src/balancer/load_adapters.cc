#include "balancer/load_adapters.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "balancer/prometheus.h"
#include "http/json_limits.h"

namespace frugal::gateway {
namespace {

constexpr std::pair<WorkerKind, std::string_view> kKindNames[] = {
    {WorkerKind::kAuto, "auto"},         {WorkerKind::kFrugal, "frugal"},
    {WorkerKind::kVllm, "vllm"},         {WorkerKind::kSglang, "sglang"},
    {WorkerKind::kLlamaCpp, "llamacpp"}, {WorkerKind::kTgi, "tgi"},
    {WorkerKind::kOpenAi, "openai"},
};

// A request count above this is not a count (and would not fit an int64 exactly).
constexpr double kMaxCount = 1e12;

// One metric the adapter may read: a name and, for a histogram split by a label, the label set.
struct Metric {
  std::string_view name;
  LabelMatch match;
};

std::string Alternatives(std::initializer_list<std::string_view> names) {
  std::string out;
  for (const auto n : names) {
    if (!out.empty()) out += " or ";
    out += n;
  }
  return out;
}

// Builds one report from one scrape; the rates' baselines go to `next`.
class Reader {
 public:
  Reader(const MetricSet& m, WorkerLoad& l,
         const std::map<std::string, std::pair<double, double>>& prev,
         std::map<std::string, std::pair<double, double>>& next)
      : m_(m), l_(l), prev_(prev), next_(next) {}

  // The first of `names` present, summed (or averaged) over its label sets; nullopt, and the
  // names in `missing`, when none is present.
  std::optional<double> Read(std::initializer_list<std::string_view> names, bool mean = false) {
    for (const auto n : names) {
      const auto v = mean ? m_.Mean(n) : m_.Sum(n);
      if (v) return v;
    }
    Missing(Alternatives(names));
    return std::nullopt;
  }

  // A request count: a finite, non-negative gauge.
  void Count(std::initializer_list<std::string_view> names, int64_t& out, LoadSignal sig) {
    const auto v = Read(names);
    if (!v || !std::isfinite(*v) || *v < 0 || *v > kMaxCount) return;
    out = std::llround(*v);
    l_.known |= sig;
  }

  // A share in 0..1, averaged over label sets (one KV cache per engine).
  void Share(std::initializer_list<std::string_view> names, double& out, LoadSignal sig) {
    const auto v = Read(names, /*mean=*/true);
    if (!v || !(*v >= 0 && *v <= 1)) return;
    out = *v;
    l_.known |= sig;
  }

  // The first histogram of `candidates` present: its totals and the name it was read under.
  std::optional<std::pair<HistogramTotals, std::string>> FirstHistogram(
      const std::vector<Metric>& candidates) {
    for (const auto& c : candidates) {
      if (const auto h = m_.Histogram(c.name, c.match)) {
        std::string key(c.name);
        for (const auto& [k, v] : c.match) key += "{" + k + "=" + v + "}";
        return std::make_pair(*h, key);
      }
    }
    std::string names;
    for (const auto& c : candidates) {
      if (!names.empty()) names += " or ";
      names += c.name;
      for (const auto& [k, v] : c.match) names += "{" + k + "=\"" + v + "\"}";
    }
    Missing(names);
    return std::nullopt;
  }

  // num/den over the window since the previous scrape, from their cumulative values; the
  // cumulative ratio on the first scrape, after a reset, or when den did not move.
  std::optional<double> Ratio(const std::string& key, double num, double den) {
    if (!std::isfinite(num) || !std::isfinite(den) || num < 0 || den < 0) return std::nullopt;
    next_[key] = {num, den};
    const auto it = prev_.find(key);
    if (it != prev_.end() && num >= it->second.first && den >= it->second.second) {
      const double dn = num - it->second.first, dd = den - it->second.second;
      if (dd > 0) return dn / dd;
    }
    if (den > 0) return num / den;
    return std::nullopt;
  }

  // A histogram's mean over the window, in milliseconds.
  std::optional<double> MeanMs(const std::vector<Metric>& candidates) {
    const auto h = FirstHistogram(candidates);
    if (!h) return std::nullopt;
    return Ms(Ratio(h->second, h->first.sum, h->first.count));
  }

  // Seconds spent over tokens made, per token, in milliseconds.
  std::optional<double> PerTokenMs(const std::string& key, std::optional<double> seconds,
                                   std::optional<double> tokens) {
    if (!seconds || !tokens) return std::nullopt;
    return Ms(Ratio(key, *seconds, *tokens));
  }

  // Sets a time field; an infinite or negative one (from extreme values) stays unknown.
  void Set(std::optional<double> ms, double& out, LoadSignal sig) {
    if (!ms || !std::isfinite(*ms) || *ms < 0) return;
    out = *ms;
    l_.known |= sig;
  }

  // The drain estimate (docs/gateway.md): everything the engine holds, in waves of the current
  // batch, each wave taking one mean request service time. Zero when the engine holds nothing.
  void Backlog(std::optional<double> service_ms) {
    if (!l_.Has(kSignalWaiting) || !l_.Has(kSignalRunning)) return;
    const double held = static_cast<double>(l_.waiting + l_.running);
    if (held == 0) {
      Set(0.0, l_.backlog_ms, kSignalBacklog);
    } else if (service_ms) {
      const double batch = static_cast<double>(std::max<int64_t>(l_.running, 1));
      Set(held / batch * *service_ms, l_.backlog_ms, kSignalBacklog);
    }
  }

  void Missing(std::string name) {
    if (std::find(l_.missing.begin(), l_.missing.end(), name) == l_.missing.end())
      l_.missing.push_back(std::move(name));
  }

  const MetricSet& metrics() const { return m_; }
  WorkerLoad& load() { return l_; }

 private:
  static std::optional<double> Ms(std::optional<double> s) {
    if (!s || !std::isfinite(*s * 1e3) || *s < 0) return std::nullopt;
    return *s * 1e3;
  }

  const MetricSet& m_;
  WorkerLoad& l_;
  const std::map<std::string, std::pair<double, double>>& prev_;
  std::map<std::string, std::pair<double, double>>& next_;
};

// A counter's sum, or a histogram's _sum, of the first candidate present; nullopt (and named
// missing) when none is.
std::optional<double> SecondsOf(Reader& r, const std::vector<Metric>& candidates,
                                std::string& key) {
  const auto h = r.FirstHistogram(candidates);
  if (!h) return std::nullopt;
  key = h->second;
  return h->first.sum;
}

void ReadVllm(Reader& r) {
  WorkerLoad& l = r.load();
  r.Count({"vllm:num_requests_waiting"}, l.waiting, kSignalWaiting);
  r.Count({"vllm:num_requests_running"}, l.running, kSignalRunning);
  // kv_cache_usage_perc since V1 (0.9), gpu_cache_usage_perc before; both 0..1 despite "perc".
  r.Share({"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}, l.kv_usage, kSignalKvUsage);
  // Per generated token: inter_token_latency (V1), time_per_output_token (its older name);
  // request_time_per_output_token is each request's mean, so it weighs requests, not tokens.
  r.Set(r.MeanMs({{"vllm:inter_token_latency_seconds", {}},
                  {"vllm:time_per_output_token_seconds", {}},
                  {"vllm:request_time_per_output_token_seconds", {}}}),
        l.decode_ms_per_token, kSignalDecode);
  // Prefill time per prompt token: the PREFILL phase where vLLM has it, else time to first token
  // (which includes the wait in the queue: an upper bound).
  std::string key;
  const auto prefill_s = SecondsOf(
      r, {{"vllm:request_prefill_time_seconds", {}}, {"vllm:time_to_first_token_seconds", {}}},
      key);
  const auto prompt_tokens = r.Read({"vllm:prompt_tokens_total"});
  r.Set(r.PerTokenMs("prefill " + key, prefill_s, prompt_tokens), l.prefill_ms_per_token,
        kSignalPrefill);
  // A request's service time: the RUNNING phase (V1), else end to end.
  r.Backlog(r.MeanMs(
      {{"vllm:request_inference_time_seconds", {}}, {"vllm:e2e_request_latency_seconds", {}}}));
}

void ReadSglang(Reader& r) {
  WorkerLoad& l = r.load();
  r.Count({"sglang:num_queue_reqs"}, l.waiting, kSignalWaiting);
  r.Count({"sglang:num_running_reqs"}, l.running, kSignalRunning);
  r.Share({"sglang:token_usage"}, l.kv_usage, kSignalKvUsage);
  r.Set(r.MeanMs({{"sglang:inter_token_latency_seconds", {}},
                  {"sglang:time_per_output_token_seconds", {}}}),
        l.decode_ms_per_token, kSignalDecode);
  // SGLang has no prefill-phase histogram: time to first token (queue wait included).
  std::string key;
  const auto ttft_s = SecondsOf(r, {{"sglang:time_to_first_token_seconds", {}}}, key);
  const auto prompt_tokens = r.Read({"sglang:prompt_tokens_total"});
  r.Set(r.PerTokenMs("prefill " + key, ttft_s, prompt_tokens), l.prefill_ms_per_token,
        kSignalPrefill);
  r.Backlog(r.MeanMs({{"sglang:e2e_request_latency_seconds", {}}}));
}

// llama.cpp's server: counters of tokens and of the seconds spent on them; the throughput gauges
// where a counter is absent.
std::optional<double> LlamaPerTokenMs(Reader& r, const char* key, std::string_view seconds,
                                      std::string_view tokens, std::string_view per_second) {
  const auto s = r.metrics().Sum(seconds), t = r.metrics().Sum(tokens);
  if (s && t) return r.PerTokenMs(key, s, t);
  const auto tps = r.metrics().Sum(per_second);
  if (tps)
    return *tps > 0 && std::isfinite(*tps) ? std::optional<double>(1e3 / *tps) : std::nullopt;
  r.Missing(std::string(seconds) + " and " + std::string(tokens) + ", or " +
            std::string(per_second));
  return std::nullopt;
}

void ReadLlamaCpp(Reader& r) {
  WorkerLoad& l = r.load();
  r.Count({"llamacpp:requests_deferred"}, l.waiting, kSignalWaiting);
  r.Count({"llamacpp:requests_processing"}, l.running, kSignalRunning);
  r.Share({"llamacpp:kv_cache_usage_ratio"}, l.kv_usage, kSignalKvUsage);
  r.Set(LlamaPerTokenMs(r, "decode", "llamacpp:tokens_predicted_seconds_total",
                        "llamacpp:tokens_predicted_total", "llamacpp:predicted_tokens_seconds"),
        l.decode_ms_per_token, kSignalDecode);
  r.Set(LlamaPerTokenMs(r, "prefill", "llamacpp:prompt_seconds_total",
                        "llamacpp:prompt_tokens_total", "llamacpp:prompt_tokens_seconds"),
        l.prefill_ms_per_token, kSignalPrefill);
  r.Backlog(std::nullopt);  // no per-request time: known only when idle
}

void ReadTgi(Reader& r) {
  WorkerLoad& l = r.load();
  r.Count({"tgi_queue_size"}, l.waiting, kSignalWaiting);
  r.Count({"tgi_batch_current_size"}, l.running, kSignalRunning);
  // Each request's mean time per token, else the decode forward pass (one token per sequence).
  r.Set(r.MeanMs({{"tgi_request_mean_time_per_token_duration", {}},
                  {"tgi_batch_forward_duration", {{"method", "decode"}}}}),
        l.decode_ms_per_token, kSignalDecode);
  std::string key;
  const auto prefill_s =
      SecondsOf(r, {{"tgi_batch_forward_duration", {{"method", "prefill"}}}}, key);
  std::optional<double> input_tokens;
  if (const auto h = r.metrics().Histogram("tgi_request_input_length")) {
    input_tokens = h->sum;
  } else {
    r.Missing("tgi_request_input_length");
  }
  r.Set(r.PerTokenMs("prefill", prefill_s, input_tokens), l.prefill_ms_per_token, kSignalPrefill);
  r.Backlog(r.MeanMs({{"tgi_request_inference_duration", {}}, {"tgi_request_duration", {}}}));
}

}  // namespace

StatusOr<WorkerKind> ParseWorkerKind(std::string_view name) {
  std::string all;
  for (const auto& [kind, n] : kKindNames) {
    if (n == name) return kind;
    all += all.empty() ? "" : ", ";
    all += n;
  }
  return InvalidArgument("unknown worker kind '" + std::string(name) + "' (one of: " + all + ")");
}

std::string_view WorkerKindName(WorkerKind k) {
  for (const auto& [kind, n] : kKindNames) {
    if (kind == k) return n;
  }
  return "auto";
}

WorkerKind DetectKind(std::string_view metrics_text) {
  const auto set = ParsePrometheusText(metrics_text);
  if (!set.ok()) return WorkerKind::kAuto;
  constexpr std::pair<std::string_view, WorkerKind> kPrefixes[] = {
      {"vllm:", WorkerKind::kVllm},
      {"sglang:", WorkerKind::kSglang},
      {"llamacpp:", WorkerKind::kLlamaCpp},
      {"tgi_", WorkerKind::kTgi},
  };
  WorkerKind found = WorkerKind::kAuto;
  for (const auto& s : set->samples()) {
    for (const auto& [prefix, kind] : kPrefixes) {
      if (s.name.compare(0, prefix.size(), prefix) != 0) continue;
      if (found != WorkerKind::kAuto && found != kind) return WorkerKind::kAuto;  // mixed
      found = kind;
    }
  }
  return found;
}

MetricsLoadAdapter::MetricsLoadAdapter(WorkerKind kind) : kind_(kind) {}

StatusOr<WorkerLoad> MetricsLoadAdapter::Update(std::string_view metrics_text, double now_s) {
  void (*read)(Reader&) = nullptr;
  switch (kind_) {
    case WorkerKind::kVllm:
      read = ReadVllm;
      break;
    case WorkerKind::kSglang:
      read = ReadSglang;
      break;
    case WorkerKind::kLlamaCpp:
      read = ReadLlamaCpp;
      break;
    case WorkerKind::kTgi:
      read = ReadTgi;
      break;
    default:
      return InvalidArgument("no /metrics adapter for worker kind " +
                             std::string(WorkerKindName(kind_)));
  }
  const std::string source = std::string(WorkerKindName(kind_)) + " /metrics";
  if (!std::isfinite(now_s) || now_s < last_now_s_) {
    return InvalidArgument(source + ": scrape time " + std::to_string(now_s) +
                           " is before the previous one or not finite");
  }
  auto set = ParsePrometheusText(metrics_text);
  if (!set.ok()) return set.status().WithContext(source);
  WorkerLoad l;
  l.source = source;
  std::map<std::string, std::pair<double, double>> next = prev_;
  Reader r(*set, l, prev_, next);
  read(r);
  prev_ = std::move(next);
  last_now_s_ = now_s;
  return l;
}

Status ApplyLlamaCppSlots(std::string_view slots_json, WorkerLoad& load) {
  if (!http::JsonDepthWithin(slots_json)) return InvalidArgument("/slots nests too deeply");
  const auto j = nlohmann::json::parse(slots_json, nullptr, false);
  if (j.is_discarded() || !j.is_array() || j.empty())
    return InvalidArgument("/slots is not a non-empty JSON array");
  // A token count, when present a finite integer; -1 (unbounded) stays as it is.
  auto tokens = [](const nlohmann::json& o, const char* k) -> std::optional<double> {
    if (!o.is_object() || !o.contains(k) || !o[k].is_number_integer()) return std::nullopt;
    const auto v = o[k].get<int64_t>();
    if (v < -1 || v > static_cast<int64_t>(kMaxCount)) return std::nullopt;
    return static_cast<double>(v);
  };
  int processing = 0;
  bool bounded = true;
  double remaining_tokens_ms = 0, full_ms = 0;
  const bool timed = load.Has(kSignalPrefill) && load.Has(kSignalDecode);
  for (const auto& slot : j) {
    if (!slot.is_object() || !slot.contains("is_processing") || !slot["is_processing"].is_boolean())
      return InvalidArgument("/slots: a slot without a boolean is_processing");
    if (!slot["is_processing"].get<bool>()) continue;
    ++processing;
    const auto prompt = tokens(slot, "n_prompt_tokens");
    const nlohmann::json next =
        slot.contains("next_token") && slot["next_token"].is_array() && !slot["next_token"].empty()
            ? slot["next_token"][0]
            : nlohmann::json();
    const auto remain = tokens(next, "n_remain"), decoded = tokens(next, "n_decoded");
    if (!prompt || !remain || !decoded || *remain < 0 || *prompt < 0 || *decoded < 0) {
      bounded = false;
      continue;
    }
    // The prompt is done once the answer has begun; before, what it has not evaluated yet
    // (n_prompt_tokens_processed counts the evaluated ones, n_prompt_tokens_cache the reused).
    double prompt_left = 0;
    if (*decoded == 0) {
      prompt_left = *prompt - std::max(0.0, tokens(slot, "n_prompt_tokens_processed").value_or(0)) -
                    std::max(0.0, tokens(slot, "n_prompt_tokens_cache").value_or(0));
      prompt_left = std::max(0.0, prompt_left);
    }
    remaining_tokens_ms +=
        prompt_left * load.prefill_ms_per_token + *remain * load.decode_ms_per_token;
    full_ms +=
        *prompt * load.prefill_ms_per_token + (*decoded + *remain) * load.decode_ms_per_token;
  }
  const auto slots = static_cast<int64_t>(j.size());
  const int64_t waiting = load.Has(kSignalWaiting) ? load.waiting : 0;
  if (processing < slots && waiting == 0) {
    load.backlog_ms = 0;  // a new request starts at once
  } else if (!timed || !bounded || processing == 0) {
    return Status::Ok();  // what the busy slots have left is not known
  } else {
    load.backlog_ms =
        (remaining_tokens_ms + static_cast<double>(waiting) * full_ms / processing) / processing;
    if (!std::isfinite(load.backlog_ms)) return Status::Ok();
  }
  load.known |= kSignalBacklog;
  load.source += " + /slots";
  return Status::Ok();
}

}  // namespace frugal::gateway
