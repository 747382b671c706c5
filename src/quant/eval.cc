#include "quant/eval.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "common/fp16.h"
#include "common/mmap_file.h"
#include "engine/scheduler.h"

namespace frugal {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// exp(x) of every half value, as double: the KL loops read 2 x n_vocab halves per position.
const std::vector<double>& HalfTable() {
  static const std::vector<double> table = [] {
    std::vector<double> t(65536);
    for (uint32_t h = 0; h < 65536; ++h)
      t[h] = static_cast<double>(Fp16ToFp32(static_cast<uint16_t>(h)));
    return t;
  }();
  return table;
}

// log(sum(exp(x))) of halves in double, with the max taken out.
double LogSumExpF16(std::span<const uint16_t> x, const std::vector<double>& t) {
  double mx = -INFINITY;
  for (uint16_t h : x) mx = std::max(mx, t[h]);
  double sum = 0;
  for (uint16_t h : x) sum += std::exp(t[h] - mx);
  return mx + std::log(sum);
}

// What a scored position gives, computed exactly as Engine::Perplexity does (float max and
// differences, double exponentials and sum) so the perplexities match `frugal perplexity`.
struct PositionScore {
  double nll = 0;
  int32_t argmax = 0;
};

PositionScore ScorePosition(const float* l, int64_t n_vocab, int32_t next, uint16_t* logprobs) {
  const float* mx_it = std::max_element(l, l + n_vocab);
  const float mx = *mx_it;
  double sum = 0;
  for (int64_t v = 0; v < n_vocab; ++v) sum += std::exp(static_cast<double>(l[v] - mx));
  const double log_sum = std::log(sum);
  PositionScore s;
  s.nll = -(static_cast<double>(l[next] - mx) - log_sum);
  s.argmax = static_cast<int32_t>(mx_it - l);
  for (int64_t v = 0; v < n_vocab; ++v) {
    logprobs[v] = Fp32ToFp16(static_cast<float>(static_cast<double>(l[v] - mx) - log_sum));
  }
  return s;
}

// The text's tokens and chunking, by Engine::Perplexity's rules.
struct TextPlan {
  std::vector<int32_t> tokens;
  int64_t chunk = 0, n_chunks = 0;
};

StatusOr<TextPlan> PlanText(const Engine& engine, std::string_view text, int64_t chunk,
                            int64_t max_tokens) {
  if (chunk < 0 || max_tokens < 0) return InvalidArgument("chunk and token limits must be >= 0");
  const int64_t n_ctx = engine.info().context_length;
  if (chunk == 0) chunk = std::min<int64_t>(n_ctx, 512);
  if (chunk > n_ctx) {
    return OutOfRange("chunk of " + std::to_string(chunk) + " tokens exceeds the context of " +
                      std::to_string(n_ctx));
  }
  if (chunk < 4) return InvalidArgument("chunk must be at least 4 tokens");
  TextPlan p;
  FRUGAL_ASSIGN_OR_RETURN(p.tokens,
                          engine.Tokenize(text, /*add_special=*/false, /*parse_special=*/false));
  if (max_tokens > 0 && static_cast<int64_t>(p.tokens.size()) > max_tokens)
    p.tokens.resize(static_cast<size_t>(max_tokens));
  if (static_cast<int64_t>(p.tokens.size()) < chunk) chunk = static_cast<int64_t>(p.tokens.size());
  if (chunk < 4) return InvalidArgument("the text is too short to score (need at least 4 tokens)");
  p.chunk = chunk;
  p.n_chunks = static_cast<int64_t>(p.tokens.size()) / chunk;
  return p;
}

// Runs every chunk through Engine::Logits and calls on_position(position index, logits row,
// next token) for each scored position (the second half of each chunk, as perplexity).
Status ScoreText(Engine& engine, const TextPlan& plan, const char* stage,
                 const EvalProgress& progress,
                 const std::function<void(int64_t, const float*, int32_t)>& on_position) {
  const int64_t n_vocab = engine.info().n_vocab;
  const int64_t chunk = plan.chunk;
  int64_t pos = 0;
  if (progress) progress(stage, 0, plan.n_chunks);
  for (int64_t c = 0; c < plan.n_chunks; ++c) {
    std::span<const int32_t> part(plan.tokens.data() + c * chunk, static_cast<size_t>(chunk));
    FRUGAL_ASSIGN_OR_RETURN(std::vector<float> logits, engine.Logits(part));
    if (static_cast<int64_t>(logits.size()) != chunk * n_vocab)
      return Internal("logits of unexpected size");
    for (int64_t i = chunk / 2; i < chunk - 1; ++i) {
      on_position(pos++, &logits[static_cast<size_t>(i * n_vocab)],
                  part[static_cast<size_t>(i + 1)]);
    }
    if (progress) progress(stage, c + 1, plan.n_chunks);
  }
  return Status::Ok();
}

int64_t ScoredPositions(const TextPlan& plan) {
  return plan.n_chunks * (plan.chunk - 1 - plan.chunk / 2);
}

std::string ProbeShownPrompt(const Probe& p) {
  return p.messages.empty() ? p.prompt : p.messages.back().content;
}

// Greedy answers to all probes, decoded together through the engine's continuous-batching
// scheduler (batch-invariant: each answer is what Engine::Generate alone would give).
StatusOr<std::vector<ProbeAnswer>> AnswerProbes(Engine& engine, const std::vector<Probe>& probes,
                                                int max_new, int max_batch, const char* stage,
                                                const EvalProgress& progress) {
  std::vector<ProbeAnswer> answers(probes.size());
  if (probes.empty()) return answers;
  if (max_new < 1) return InvalidArgument("max new tokens must be at least 1");
  if (max_batch < 1) return InvalidArgument("max batch must be at least 1");
  const int64_t n_ctx = engine.info().context_length;
  std::vector<std::vector<int32_t>> prompts(probes.size());
  int64_t longest = 0;
  for (size_t i = 0; i < probes.size(); ++i) {
    const Probe& p = probes[i];
    if (p.messages.empty()) {
      prompts[i] = engine.EncodePrompt(p.prompt, /*parse_special=*/false);
    } else {
      auto ids = engine.EncodeChat(p.messages);
      if (!ids.ok()) return ids.status().WithContext("probe " + p.id);
      prompts[i] = *std::move(ids);
    }
    const auto n = static_cast<int64_t>(prompts[i].size());
    if (n == 0) return InvalidArgument("probe " + p.id + ": the prompt is empty");
    if (n + max_new > n_ctx) {
      return OutOfRange("probe " + p.id + ": its prompt has " + std::to_string(n) +
                        " tokens; with " + std::to_string(max_new) +
                        " new tokens that exceeds the context of " + std::to_string(n_ctx));
    }
    longest = std::max(longest, n);
    answers[i].id = p.id;
    answers[i].prompt = ProbeShownPrompt(p);
  }

  SchedulerOptions so;
  so.max_batch = max_batch;
  so.max_queue = static_cast<int64_t>(probes.size()) + 1;
  // Admission reserves prompt + max_tokens positions per sequence: a full batch of the longest.
  so.kv_blocks = static_cast<int64_t>(max_batch) *
                 ((longest + max_new + so.kv_block_tokens - 1) / so.kv_block_tokens);
  FRUGAL_ASSIGN_OR_RETURN(std::unique_ptr<Scheduler> sched, Scheduler::Start(engine, so));

  std::mutex mu;
  std::condition_variable cv;
  size_t done = 0;
  Status failed;
  for (size_t i = 0; i < probes.size(); ++i) {
    InferenceRequest req;
    req.prompt = std::move(prompts[i]);
    req.max_tokens = max_new;
    req.sampling.temperature = 0;  // greedy
    req.sampling.repetition_penalty = 1;
    auto handle = sched->Submit(std::move(req), [&, i](const InferenceEvent& ev) {
      std::lock_guard<std::mutex> lock(mu);
      if (ev.kind == InferenceEvent::Kind::kText) {
        answers[i].text += ev.text;
        return;
      }
      answers[i].finish_reason = ev.finish_reason;
      answers[i].prompt_tokens = ev.prompt_tokens;
      answers[i].answer_tokens = ev.completion_tokens;
      if (!ev.status.ok() && failed.ok()) failed = ev.status.WithContext("probe " + probes[i].id);
      ++done;
      cv.notify_all();
    });
    if (!handle.ok()) {
      // Requests already queued still call back into `answers`: let them finish first.
      sched.reset();
      return handle.status().WithContext("probe " + probes[i].id);
    }
  }
  if (progress) progress(stage, 0, static_cast<int64_t>(probes.size()));
  {
    std::unique_lock<std::mutex> lock(mu);
    size_t reported = 0;
    // Until the last count is reported: the probes may all finish while a report is printed.
    while (reported < probes.size()) {
      cv.wait_for(lock, std::chrono::milliseconds(500),
                  [&] { return done != reported || done == probes.size(); });
      if (done != reported) {
        reported = done;
        if (progress) {
          const auto d = static_cast<int64_t>(done);
          lock.unlock();
          progress(stage, d, static_cast<int64_t>(probes.size()));
          lock.lock();
        }
      }
    }
  }
  sched.reset();
  if (!failed.ok()) return failed;
  for (auto& a : answers) {
    if (a.finish_reason != "stop" && a.finish_reason != "length") {
      return Internal("probe " + a.id + " ended with '" + a.finish_reason + "'");
    }
    a.numbers = text::NumberValues(text::ExtractNumbers(a.text, text::NumberReading::kAnswer));
  }
  return answers;
}

std::string Clip(std::string_view s, size_t n) {
  std::string out;
  for (char c : s) out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  if (out.size() > n) {
    size_t cut = n;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // whole UTF-8
    out = out.substr(0, cut) + "...";
  }
  return out;
}

std::string JoinNumbers(const std::vector<std::string>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s + "]";
}

}  // namespace

void LogSoftmaxToF16(std::span<const float> logits, std::span<uint16_t> out) {
  if (logits.empty() || out.size() != logits.size()) return;
  ScorePosition(logits.data(), static_cast<int64_t>(logits.size()), 0, out.data());
}

double KlDivergenceF16(std::span<const uint16_t> log_p, std::span<const uint16_t> log_q) {
  const auto& t = HalfTable();
  const size_t n = std::min(log_p.size(), log_q.size());
  if (n == 0) return 0;
  const double lse_p = LogSumExpF16(log_p.first(n), t);
  const double lse_q = LogSumExpF16(log_q.first(n), t);
  double kl = 0;
  for (size_t v = 0; v < n; ++v) {
    const double lp = t[log_p[v]] - lse_p;
    if (lp == -INFINITY) continue;  // 0 * log(0 / q) = 0
    kl += std::exp(lp) * (lp - (t[log_q[v]] - lse_q));
  }
  return std::max(kl, 0.0);
}

double KlDivergence(std::span<const float> p_logits, std::span<const float> q_logits) {
  const size_t n = std::min(p_logits.size(), q_logits.size());
  if (n == 0) return 0;
  auto lse = [n](std::span<const float> x) {
    double mx = -INFINITY;
    for (size_t v = 0; v < n; ++v) mx = std::max(mx, static_cast<double>(x[v]));
    double sum = 0;
    for (size_t v = 0; v < n; ++v) sum += std::exp(static_cast<double>(x[v]) - mx);
    return mx + std::log(sum);
  };
  const double lp0 = lse(p_logits), lq0 = lse(q_logits);
  double kl = 0;
  for (size_t v = 0; v < n; ++v) {
    const double lp = static_cast<double>(p_logits[v]) - lp0;
    if (lp == -INFINITY) continue;
    kl += std::exp(lp) * (lp - (static_cast<double>(q_logits[v]) - lq0));
  }
  return std::max(kl, 0.0);
}

double PercentileNearestRank(std::vector<double> values, double p) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(values.size()));
  const auto idx =
      static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(values.size()))) - 1;
  return values[idx];
}

StatusOr<std::vector<Probe>> ParseProbes(std::string_view jsonl, std::string_view name) {
  std::vector<Probe> out;
  std::set<std::string> ids;
  size_t line_no = 0;
  size_t start = 0;
  while (start <= jsonl.size()) {
    size_t end = jsonl.find('\n', start);
    if (end == std::string_view::npos) end = jsonl.size();
    std::string_view line = jsonl.substr(start, end - start);
    start = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) {
      if (end == jsonl.size()) break;
      continue;
    }
    const std::string where = std::string(name) + ":" + std::to_string(line_no);
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return InvalidArgument(where + ": not valid JSON");
    if (!j.is_object())
      return InvalidArgument(where + ": expected a JSON object with \"prompt\" or \"messages\"");
    Probe p;
    if (auto it = j.find("id"); it != j.end()) {
      if (it->is_string()) {
        p.id = it->get<std::string>();
      } else if (it->is_number_integer()) {
        p.id = std::to_string(it->get<int64_t>());
      } else {
        return InvalidArgument(where + ": \"id\" must be a string or an integer");
      }
      if (p.id.empty()) return InvalidArgument(where + ": \"id\" is empty");
    } else {
      p.id = "line " + std::to_string(line_no);
    }
    if (!ids.insert(p.id).second) return InvalidArgument(where + ": duplicate id '" + p.id + "'");
    const bool has_prompt = j.contains("prompt"), has_messages = j.contains("messages");
    if (has_prompt == has_messages) {
      return InvalidArgument(
          where + ": expected exactly one of \"prompt\" (a string) or \"messages\" (an array)");
    }
    if (has_prompt) {
      const auto& v = j["prompt"];
      if (!v.is_string() || v.get<std::string>().empty())
        return InvalidArgument(where + ": \"prompt\" must be a non-empty string");
      p.prompt = v.get<std::string>();
    } else {
      const auto& m = j["messages"];
      if (!m.is_array() || m.empty())
        return InvalidArgument(where + ": \"messages\" must be a non-empty array");
      for (const auto& msg : m) {
        if (!msg.is_object() || !msg.contains("role") || !msg.contains("content") ||
            !msg["role"].is_string() || !msg["content"].is_string()) {
          return InvalidArgument(where +
                                 ": each message must be {\"role\": string, \"content\": string}");
        }
        const std::string role = msg["role"].get<std::string>();
        if (role != "system" && role != "user" && role != "assistant") {
          return InvalidArgument(where + ": unknown role '" + role + "' (system, user, assistant)");
        }
        p.messages.push_back({role, msg["content"].get<std::string>()});
      }
    }
    out.push_back(std::move(p));
    if (end == jsonl.size()) break;
  }
  if (out.empty())
    return InvalidArgument(std::string(name) + ": no probes (expected one JSON object per line)");
  return out;
}

StatusOr<std::vector<Probe>> LoadProbes(const std::string& path) {
  FRUGAL_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseProbes(text, path);
}

double EvalReference::perplexity() const {
  double nll = 0;
  for (double x : nll_) nll += x;
  return nll_.empty() ? std::nan("") : std::exp(nll / static_cast<double>(nll_.size()));
}

size_t EvalReference::memory_bytes() const {
  return logprobs_.size() * sizeof(uint16_t) + argmax_.size() * sizeof(int32_t) +
         nll_.size() * sizeof(double) + tokens_.size() * sizeof(int32_t);
}

StatusOr<std::unique_ptr<EvalReference>> EvalReference::Build(const EvalReferenceOptions& options) {
  const auto t0 = Clock::now();
  auto ref = std::unique_ptr<EvalReference>(new EvalReference());
  ref->model_path_ = options.engine.model_path;
  ref->options_ = options;
  ref->options_.progress = nullptr;  // the caller's callback need not outlive Build
  FRUGAL_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Open(options.engine));
  if (engine->info().kind != ModelKind::kDecoder)
    return InvalidArgument(ref->model_path_ + " is not a decoder model");
  FRUGAL_ASSIGN_OR_RETURN(TextPlan plan,
                          PlanText(*engine, options.text, options.chunk, options.max_tokens));
  const int64_t n_vocab = engine->info().n_vocab;
  const int64_t positions = ScoredPositions(plan);
  ref->n_vocab_ = n_vocab;
  ref->chunk_ = plan.chunk;
  ref->n_chunks_ = plan.n_chunks;
  ref->logprobs_.resize(static_cast<size_t>(positions * n_vocab));
  ref->argmax_.resize(static_cast<size_t>(positions));
  ref->nll_.resize(static_cast<size_t>(positions));
  FRUGAL_RETURN_IF_ERROR(ScoreText(*engine, plan, "reference logits", options.progress,
                                   [&](int64_t pos, const float* l, int32_t next) {
                                     const PositionScore s = ScorePosition(
                                         l, n_vocab, next,
                                         &ref->logprobs_[static_cast<size_t>(pos * n_vocab)]);
                                     ref->nll_[static_cast<size_t>(pos)] = s.nll;
                                     ref->argmax_[static_cast<size_t>(pos)] = s.argmax;
                                   }));
  ref->tokens_ = std::move(plan.tokens);
  if (!options.defer_probes) {
    FRUGAL_ASSIGN_OR_RETURN(
        ref->answers_,
        frugal::AnswerProbes(*engine, options.probes, options.max_new_tokens, options.max_batch,
                             "reference probes", options.progress));
    ref->probes_answered_ = true;
  }
  ref->seconds_ = Seconds(t0, Clock::now());
  return ref;
}

Status EvalReference::AnswerProbes(const EvalProgress& progress) {
  if (probes_answered_) return Status::Ok();
  const auto t0 = Clock::now();
  FRUGAL_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Open(options_.engine));
  FRUGAL_ASSIGN_OR_RETURN(answers_,
                          frugal::AnswerProbes(*engine, options_.probes, options_.max_new_tokens,
                                               options_.max_batch, "reference probes", progress));
  probes_answered_ = true;
  seconds_ += Seconds(t0, Clock::now());
  return Status::Ok();
}

namespace {
Status AddProbeAnswers(Engine& engine, EvalReport& r, const EvalReference& ref,
                       const EvalProgress& progress);
}  // namespace

StatusOr<EvalReport> EvaluateAgainst(const EvalReference& ref, const EngineOptions& model,
                                     const EvalProgress& progress, bool with_probes) {
  if (with_probes && !ref.probes_answered())
    return Internal("the reference's probes are not answered yet (EvalReference::AnswerProbes)");
  const auto t0 = Clock::now();
  const EvalReferenceOptions& ro = ref.options();
  FRUGAL_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Open(model));
  if (engine->info().kind != ModelKind::kDecoder)
    return InvalidArgument(model.model_path + " is not a decoder model");
  const int64_t n_vocab = engine->info().n_vocab;
  if (n_vocab != ref.n_vocab()) {
    return InvalidArgument(model.model_path + " has a vocabulary of " + std::to_string(n_vocab) +
                           " tokens, the reference " + ref.model_path() + " " +
                           std::to_string(ref.n_vocab()) + ": they cannot be compared");
  }
  FRUGAL_ASSIGN_OR_RETURN(TextPlan plan, PlanText(*engine, ro.text, ref.chunk(), ro.max_tokens));
  if (plan.tokens != ref.tokens()) {
    size_t i = 0;
    while (i < plan.tokens.size() && i < ref.tokens().size() && plan.tokens[i] == ref.tokens()[i])
      ++i;
    return InvalidArgument(
        model.model_path +
        " tokenizes the text differently from the reference (first difference at token " +
        std::to_string(i) + "): the models must share a tokenizer");
  }
  EvalReport r;
  r.model = model.model_path;
  r.ref = ref.model_path();
  r.activations = model.int8_activations ? "int8" : "f32";
  r.chunk_size = plan.chunk;
  r.chunks = plan.n_chunks;
  const int64_t positions = ref.positions();
  std::vector<double> kld(static_cast<size_t>(positions));
  std::vector<uint16_t> logprobs(static_cast<size_t>(n_vocab));
  double nll = 0;
  int64_t agree = 0;
  FRUGAL_RETURN_IF_ERROR(
      ScoreText(*engine, plan, "logits", progress, [&](int64_t pos, const float* l, int32_t next) {
        const PositionScore s = ScorePosition(l, n_vocab, next, logprobs.data());
        nll += s.nll;
        agree += s.argmax == ref.argmax()[static_cast<size_t>(pos)] ? 1 : 0;
        kld[static_cast<size_t>(pos)] = KlDivergenceF16(ref.logprobs(pos), logprobs);
      }));
  r.tokens_scored = positions;
  r.ppl_ref = ref.perplexity();
  r.ppl = std::exp(nll / static_cast<double>(positions));
  double kl_sum = 0;
  for (double k : kld) kl_sum += k;
  r.kld_mean = kl_sum / static_cast<double>(positions);
  r.kld_max = *std::max_element(kld.begin(), kld.end());
  r.kld_p99 = PercentileNearestRank(std::move(kld), 99);
  r.top1_agreement = static_cast<double>(agree) / static_cast<double>(positions);
  r.seconds_ref = ref.seconds();
  if (with_probes) FRUGAL_RETURN_IF_ERROR(AddProbeAnswers(*engine, r, ref, progress));
  r.seconds = Seconds(t0, Clock::now());
  return r;
}

Status AddProbes(EvalReport& r, const EvalReference& ref, const EngineOptions& model,
                 const EvalProgress& progress) {
  if (!ref.probes_answered())
    return Internal("the reference's probes are not answered yet (EvalReference::AnswerProbes)");
  const auto t0 = Clock::now();
  FRUGAL_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Open(model));
  FRUGAL_RETURN_IF_ERROR(AddProbeAnswers(*engine, r, ref, progress));
  r.seconds += Seconds(t0, Clock::now());
  return Status::Ok();
}

namespace {

// The candidate's answers to the reference's probes, compared, into the report.
Status AddProbeAnswers(Engine& engine, EvalReport& r, const EvalReference& ref,
                       const EvalProgress& progress) {
  const EvalReferenceOptions& ro = ref.options();
  FRUGAL_ASSIGN_OR_RETURN(
      std::vector<ProbeAnswer> answers,
      AnswerProbes(engine, ro.probes, ro.max_new_tokens, ro.max_batch, "probes", progress));
  r.probes = static_cast<int64_t>(answers.size());
  for (size_t i = 0; i < answers.size(); ++i) {
    const ProbeAnswer& a = ref.answers()[i];
    const ProbeAnswer& b = answers[i];
    r.probe_prompt_tokens += b.prompt_tokens;
    r.probe_answer_tokens += b.answer_tokens;
    if (a.numbers.empty()) ++r.probes_ref_without_numbers;
    if (a.text == b.text) ++r.probes_identical;
    if (a.numbers == b.numbers) {
      ++r.probes_matched;
      continue;
    }
    r.mismatches.push_back({a.id, a.prompt, a.text, b.text, a.numbers, b.numbers});
  }
  if (r.probes > 0)
    r.numeric_fidelity = static_cast<double>(r.probes_matched) / static_cast<double>(r.probes);
  r.seconds_ref = ref.seconds();
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<EvalReport>> Evaluate(const EvalOptions& o) {
  if (o.models.empty()) return InvalidArgument("no model given");
  if (o.ref.empty()) return InvalidArgument("no reference model given");
  if (o.text_path.empty()) return InvalidArgument("no text given");
  // Fail on a missing model now, not after the reference's run.
  std::vector<std::string> paths = o.models;
  paths.push_back(o.ref);
  for (const std::string& p : paths) {
    std::error_code ec;
    if (p.empty() || !std::filesystem::exists(p, ec))
      return NotFound(p + ": no such file or folder");
  }
  EvalReferenceOptions ro;
  FRUGAL_ASSIGN_OR_RETURN(ro.text, ReadFileToString(o.text_path));
  if (!o.probes_path.empty()) {
    FRUGAL_ASSIGN_OR_RETURN(ro.probes, LoadProbes(o.probes_path));
  }
  ro.engine.model_path = o.ref;
  ro.engine.threads = o.threads;
  ro.engine.int8_activations = o.int8_activations;
  ro.chunk = o.chunk;
  ro.max_tokens = o.max_tokens;
  ro.max_new_tokens = o.max_new_tokens;
  ro.max_batch = o.max_batch;
  ro.progress = o.progress;
  FRUGAL_ASSIGN_OR_RETURN(std::unique_ptr<EvalReference> ref, EvalReference::Build(ro));
  std::vector<EvalReport> reports;
  for (const std::string& m : o.models) {
    EngineOptions mo = ro.engine;
    mo.model_path = m;
    FRUGAL_ASSIGN_OR_RETURN(EvalReport r, EvaluateAgainst(*ref, mo, o.progress));
    reports.push_back(std::move(r));
  }
  return reports;
}

std::string FormatReport(const EvalReport& r) {
  std::string s;
  char buf[512];
  auto line = [&](const char* fmt, auto... args) {
    std::snprintf(buf, sizeof buf, fmt, args...);
    s += buf;
  };
  line("frugal eval: %s against %s (activations %s)\n", r.model.c_str(), r.ref.c_str(),
       r.activations.c_str());
  line("%-18s %12s\n", "metric", "value");
  line("%-18s %12.4f\n", "ppl_ref", r.ppl_ref);
  line("%-18s %12.4f   (%+.4f, %+.2f %%)\n", "ppl", r.ppl, r.ppl - r.ppl_ref,
       100.0 * (r.ppl / r.ppl_ref - 1.0));
  line("%-18s %12.6f\n", "kld_mean", r.kld_mean);
  line("%-18s %12.6f\n", "kld_p99", r.kld_p99);
  line("%-18s %12.6f\n", "kld_max", r.kld_max);
  line("%-18s %12.4f\n", "top1_agreement", r.top1_agreement);
  if (r.probes > 0) {
    line("%-18s %12.4f   (%lld/%lld probes with the same numbers, %lld identical answers)\n",
         "numeric_fidelity", r.numeric_fidelity, static_cast<long long>(r.probes_matched),
         static_cast<long long>(r.probes), static_cast<long long>(r.probes_identical));
    line("%-18s %12lld   (prompt tokens of all probes; %lld answer tokens)\n", "probe_tokens",
         static_cast<long long>(r.probe_prompt_tokens),
         static_cast<long long>(r.probe_answer_tokens));
  } else {
    line("%-18s %12s   (no probes)\n", "numeric_fidelity", "n/a");
  }
  line("%-18s %12lld   (%lld chunks of %lld)\n", "tokens_scored",
       static_cast<long long>(r.tokens_scored), static_cast<long long>(r.chunks),
       static_cast<long long>(r.chunk_size));
  line("%-18s %12.1f   (reference %.1f s)\n", "seconds", r.seconds, r.seconds_ref);
  if (r.probes_ref_without_numbers > 0) {
    line("note: %lld reference answers contain no number (those probes test little)\n",
         static_cast<long long>(r.probes_ref_without_numbers));
  }
  if (!r.mismatches.empty()) {
    line("numeric mismatches (%zu):\n", r.mismatches.size());
    for (const auto& m : r.mismatches) {
      s += "  [" + m.id + "] " + Clip(m.prompt, 100) + "\n";
      s += "    ref:   " + JoinNumbers(m.ref_numbers) + "  " + Clip(m.ref_answer, 160) + "\n";
      s += "    model: " + JoinNumbers(m.numbers) + "  " + Clip(m.answer, 160) + "\n";
    }
  }
  return s;
}

namespace {
nlohmann::json ReportValue(const EvalReport& r) {
  auto num = [](double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
  };
  nlohmann::json mismatches = nlohmann::json::array();
  for (const auto& m : r.mismatches) {
    mismatches.push_back({{"id", m.id},
                          {"prompt", m.prompt},
                          {"ref_answer", m.ref_answer},
                          {"answer", m.answer},
                          {"ref_numbers", m.ref_numbers},
                          {"numbers", m.numbers}});
  }
  return {{"model", r.model},
          {"ref", r.ref},
          {"activations", r.activations},
          {"ppl_ref", num(r.ppl_ref)},
          {"ppl", num(r.ppl)},
          {"kld_mean", num(r.kld_mean)},
          {"kld_p99", num(r.kld_p99)},
          {"kld_max", num(r.kld_max)},
          {"top1_agreement", num(r.top1_agreement)},
          {"numeric_fidelity", num(r.numeric_fidelity)},
          {"tokens_scored", r.tokens_scored},
          {"chunks", r.chunks},
          {"chunk_size", r.chunk_size},
          {"probes", r.probes},
          {"probes_matched", r.probes_matched},
          {"probes_identical", r.probes_identical},
          {"probes_ref_without_numbers", r.probes_ref_without_numbers},
          {"mismatches", std::move(mismatches)},
          {"probe_prompt_tokens", r.probe_prompt_tokens},
          {"probe_answer_tokens", r.probe_answer_tokens},
          {"seconds_ref", r.seconds_ref},
          {"seconds", r.seconds}};
}
}  // namespace

std::string ReportJson(const EvalReport& r) { return ReportValue(r).dump(); }

}  // namespace frugal
