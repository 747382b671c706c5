// `frugal loadgen`: an open-loop load generator for OpenAI-compatible endpoints (a gateway or a
// worker). docs/loadgen.md describes the profile, the report and the plot.
//
// Open loop: the whole arrival schedule (Poisson per phase) is drawn before the first request and
// every request leaves on time whether or not earlier ones have finished, so a slow target meets
// the offered load instead of a load that politely slows down with it (a closed loop hides
// queueing: latency would look flat while throughput quietly drops).
//
// The pieces are separate so they can be tested without a network: BuildSchedule (times, phases,
// which question, long or short), Summarize (per-phase statistics of finished requests), the
// renderers (JSON, table, HTML plot, CSV); Run ties them to a live target.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "frugal/status.h"
#include "loadgen/conversation.h"

namespace frugal::loadgen {

// One line of the questions file: a question and other ways of asking it.
struct QuestionGroup {
  std::string question;
  std::vector<std::string> paraphrases;
};

// JSONL: {"question": "...", "paraphrases": ["...", ...]} per line; blank lines are skipped.
StatusOr<std::vector<QuestionGroup>> LoadQuestions(const std::string& path);

struct Profile {
  double rate = 2;          // requests per second in steady and recovery
  double spike_factor = 6;  // spike rate = rate x spike_factor
  double steady_s = 20, spike_s = 20, recovery_s = 20;
};

struct Phase {
  std::string name;  // "steady", "spike", "recovery"
  double start_s = 0, end_s = 0;
  double rate = 0;
  double length_s() const { return end_s - start_s; }
};

// The phases of a profile in order, without the zero-length ones.
std::vector<Phase> Phases(const Profile& profile);

struct Mix {
  double repeat_share = 0.35;  // re-ask a group already asked
  double long_share = 0.3;     // context passage + 3x max_tokens
};

struct Arrival {
  double time_s = 0;    // from the start of the run
  int phase = 0;        // index into Phases()
  size_t group = 0;     // question group
  int variant = 0;      // 0: the question itself; k > 0: paraphrase k - 1
  bool repeat = false;  // drawn as a re-ask (a group asked before)
  // Drawn as new, but every group had been asked: the question file wrapped around, so this
  // "new" question is a re-ask too (a hit rate over a run with many of these is inflated).
  bool wrapped = false;
  bool long_prompt = false;
};

// The arrival schedule: per phase, exponential inter-arrival times at the phase's rate; per
// request, repeat or new and long or short. New requests take the groups in an order shuffled by
// the seed, starting over when all were used. Same inputs, same schedule.
std::vector<Arrival> BuildSchedule(const Profile& profile, const Mix& mix,
                                   const std::vector<QuestionGroup>& groups, uint64_t seed);

// The text of an arrival's user message: the question (or paraphrase), for a long request
// preceded by a store-policy passage about twice its length. The passage depends only on the
// group, so a repeated long question repeats its context too.
std::string PromptText(const Arrival& a, const std::vector<QuestionGroup>& groups);

// The p-th percentile (0-100) of values, interpolated linearly between ranks (numpy's default).
// nullopt for no values.
std::optional<double> Percentile(std::vector<double> values, double p);

// What happened to one request.
struct RequestRecord {
  int phase = 0;
  double send_s = 0;               // from the start of the run
  int status = 0;                  // HTTP status; 0 when none arrived
  std::string error;               // empty = success
  double latency_ms = 0;           // send -> last byte (or the failure)
  double ttft_ms = -1;             // send -> first content delta; -1 when none came
  int64_t completion_tokens = -1;  // from the usage chunk; -1 when absent
  bool cache_hit = false;          // response header X-Frugal-Cache: hit
  // A hit whose answer no miss of its own group received (MarkWrongHits).
  bool wrong_hit = false;
  std::string answer;  // the content deltas, joined
  bool long_prompt = false;
  bool repeat = false;
  bool wrapped = false;
  size_t group = 0;
  int64_t conversation = -1;  // --conversations: which one, and its user turn (1 = first);
  int turn = 0;               // 0 without conversations
  bool ok() const { return error.empty(); }
};

struct RunOptions {
  std::string target;   // http://host[:port][/v1]
  std::string model;    // empty: the first id of GET /v1/models
  std::string api_key;  // sent as Authorization: Bearer
  Profile profile;
  Mix mix;
  ConversationMix conversation;  // off by default: one user message per request
  uint64_t seed = 1;
  int64_t max_tokens = 32;  // long requests get 3x
  double timeout_s = 120;   // per request, and for the drain after the last phase
  int io_threads = 2;
};

struct Progress {
  std::string phase;  // the phase the clock is in, or "draining"
  double elapsed_s = 0;
  int64_t sent = 0, done = 0, errors = 0;
};

struct RunResult {
  std::string target, model;
  std::vector<Phase> phases;
  std::vector<RequestRecord> records;  // one per sent request, in send order
};

// Runs the profile against the target. Fails (InvalidArgument) before sending anything when the
// target URL is malformed or, without a model, GET /v1/models does not answer with one.
// on_progress, if set, is called about once per second from the calling thread.
StatusOr<RunResult> Run(const RunOptions& options, const std::vector<QuestionGroup>& groups,
                        const std::function<void(const Progress&)>& on_progress = {});

struct PhaseStats {
  std::string name;
  double length_s = 0;
  int64_t requests = 0, errors = 0, hits = 0;
  int64_t wrong_hits = 0;  // hits that served another group's answer
  int64_t wrapped = 0;     // "new" questions that re-asked because the question file ran out
  double throughput_rps =
      0;  // successful responses completed in the phase / length (total: all / profile length)
  std::optional<double> latency_p50_ms, latency_p95_ms, latency_p99_ms;  // successful requests
  std::optional<double> ttft_p50_ms, ttft_p95_ms, ttft_p99_ms;
  std::optional<double> cache_hit_rate;  // hits / successful
  std::optional<double> wrong_hit_rate;  // wrong_hits / hits
  // Conversations: per user turn (1, 2, then every later turn together as 3), what turn-k
  // requests saw. Empty without conversations.
  struct Turn {
    int turn = 0;
    int64_t requests = 0, errors = 0;
    std::optional<double> ttft_p50_ms, ttft_p95_ms, latency_p50_ms;
  };
  std::vector<Turn> turns;
};

// Marks the cache hits that served a wrong answer. At temperature 0 from a cache that was empty
// when the run began, every hit serves an answer that some miss of this run received; the hit
// is right when a miss of its own question group (in any conversation) received that very text,
// and wrong otherwise: its entry was stored for another group's question.
void MarkWrongHits(std::vector<RequestRecord>& records);

// One entry per phase, then the total (named "total") over the whole run.
std::vector<PhaseStats> Summarize(const RunResult& result);
// Per user turn (1, 2, then 3 for every later one) of the conversation requests among these:
// requests, errors, TTFT and latency percentiles of the successful ones. Empty when none is part
// of a conversation.
std::vector<PhaseStats::Turn> TurnStats(const std::vector<const RequestRecord*>& records);

// {"phases": [...], "total": {...}, "target", "profile"}; docs/loadgen.md has the schema.
std::string ReportJson(const RunResult& result, const RunOptions& options);
std::string ReportTable(const RunResult& result, const RunOptions& options);
// A self-contained HTML page: an inline SVG of latency against send time.
std::string PlotHtml(const RunResult& result);
std::string RecordsCsv(const RunResult& result);

}  // namespace frugal::loadgen
