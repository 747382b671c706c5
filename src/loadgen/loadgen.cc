#include "loadgen/loadgen.h"

#include <strings.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <set>
#include <sstream>

#include "common/check.h"
#include "common/thread_annotations.h"
#include "http/client.h"
#include "loadgen/format.h"

namespace frugal::loadgen {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// Separate random streams for arrival times and for question choice, so changing the rate does
// not change which questions are asked, and the other way round.
constexpr uint32_t kTimeStream = 1, kChoiceStream = 2;
// Whether an arrival goes on with a conversation or starts one: drawn in send order.
constexpr uint32_t kConversationStream = 3;

std::mt19937_64 Rng(uint64_t seed, uint32_t stream) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), stream};
  return std::mt19937_64(seq);
}

// Uniform in [0, 1). Not std::uniform_real_distribution: its output is implementation-defined,
// and the schedule should be the same whatever standard library built the binary.
double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

size_t Below(std::mt19937_64& rng, size_t n) { return static_cast<size_t>(rng() % n); }

bool IsAscii(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

size_t CodePoints(const std::string& s) {
  return static_cast<size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// Store-policy passages for long prompts, in the two languages of the questions file.
const std::vector<std::string>& PassageSentences(bool ascii) {
  static const std::vector<std::string> en = {
      "Standard shipping takes 3 to 5 business days and is free on orders over $50.",
      "Express shipping arrives in 1 to 2 business days for a flat fee of $12.",
      "Orders placed before 2 pm ship the same day; later orders ship the next business day.",
      "Unworn items can be returned within 30 days of delivery for a full refund.",
      "Refunds go back to the original payment method within 5 to 7 business days.",
      "Final-sale items, gift cards and opened personal-care products cannot be returned.",
      "Members of the rewards program earn 1 point per dollar and get free returns.",
      "Only one discount code can be used per order, and codes do not apply to gift cards.",
      "Stock levels on the product page are updated every 15 minutes.",
      "Back-ordered items ship as soon as they arrive, and the card is charged only then.",
      // NOLINTNEXTLINE(bugprone-suspicious-missing-comma): one sentence in two literals
      "Price matching applies to identical items sold by major retailers within 14 days of "
      "purchase.",
      "Order status and tracking links are under My Account, Orders, once the parcel ships.",
  };
  static const std::vector<std::string> zh = {
      "标准配送需要三到五个工作日，订单满五十元包邮。",
      "加急配送一到两个工作日送达，运费十二元。",
      "下午两点前下单当天发货，之后的订单次日发货。",
      "未穿过的商品在签收后三十天内可以全额退款。",
      "退款会在五到七个工作日内退回原支付方式。",
      "特价商品、礼品卡和已拆封的个人护理用品不支持退货。",
      "会员每消费一元积一分，并享受免费退货。",
      "每个订单只能使用一张优惠券，礼品卡不能使用优惠券。",
      "商品页面的库存每十五分钟更新一次。",
      "缺货商品到货后立即发货，届时才会扣款。",
      "购买后十四天内，如果大型零售商售价更低，可以申请价格保护。",
      "发货后可以在我的账户的订单页面查看物流信息。",
  };
  return ascii ? en : zh;
}

double Round(double v, double unit) { return std::round(v / unit) * unit; }

json OptionalMs(const std::optional<double>& v) {
  return v ? json(Round(*v, 0.01)) : json(nullptr);
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

struct Target {
  std::string host;
  uint16_t port = 80;
  std::string prefix;  // path before /v1, without a trailing '/'
};

StatusOr<Target> ParseTarget(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) {
    return InvalidArgument("--target must be an http:// URL (https is not supported), got '" + url +
                           "'");
  }
  std::string rest = url.substr(scheme.size());
  Target t;
  const size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  t.prefix = slash == std::string::npos ? "" : rest.substr(slash);
  while (!t.prefix.empty() && t.prefix.back() == '/') t.prefix.pop_back();
  // Both http://host:port and http://host:port/v1 (what OpenAI SDKs take as base_url) work.
  if (t.prefix.size() >= 3 && t.prefix.compare(t.prefix.size() - 3, 3, "/v1") == 0)
    t.prefix.resize(t.prefix.size() - 3);
  const size_t colon = authority.rfind(':');
  if (colon != std::string::npos) {
    const std::string port = authority.substr(colon + 1);
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (port.empty() || *end != '\0' || p < 1 || p > 65535)
      return InvalidArgument("bad port in --target '" + url + "'");
    t.port = static_cast<uint16_t>(p);
    authority.resize(colon);
  }
  if (authority.empty()) return InvalidArgument("no host in --target '" + url + "'");
  t.host = authority;
  return t;
}

http::ClientRequest MakeRequest(const Target& t, const RunOptions& o, std::string method,
                                const std::string& path) {
  http::ClientRequest r;
  r.host = t.host;
  r.port = t.port;
  r.method = std::move(method);
  r.target = t.prefix + path;
  if (!o.api_key.empty())
    r.headers.emplace_back("Authorization", std::string("Bearer ").append(o.api_key));
  return r;
}

StatusOr<std::string> FirstModel(http::Client& client, const Target& t, const RunOptions& o) {
  std::string what = "GET ";
  what.append(o.target).append(" /v1/models");
  auto r = client.Fetch(MakeRequest(t, o, "GET", "/v1/models"));
  if (!r.ok())
    return InvalidArgument(what + ": " + r.status().message() +
                           " (is the target up? or give --model)");
  if (r->status < 200 || r->status >= 300) {
    return InvalidArgument(what + ": HTTP " + std::to_string(r->status) +
                           " (give --model to skip this)");
  }
  const json j = json::parse(r->body, nullptr, false);
  if (j.is_object() && j.contains("data") && j["data"].is_array() && !j["data"].empty() &&
      j["data"][0].is_object()) {
    const auto& id = j["data"][0].value("id", json());
    if (id.is_string()) return id.get<std::string>();
  }
  return InvalidArgument(what + ": no model id in the answer (give --model)");
}

// The message of an OpenAI-shaped {"error": {"message": ...}} body, else the body's start.
std::string ErrorMessage(const std::string& body) {
  const json j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error")) {
    const json& e = j["error"];
    return e.is_object() && e.contains("message") && e["message"].is_string()
               ? e["message"].get<std::string>()
               : e.dump();
  }
  return body.substr(0, 200);
}

std::string ErrorText(int status, const std::string& body) {
  std::string out = std::string("HTTP ").append(std::to_string(status));
  const std::string msg = ErrorMessage(body);
  if (!msg.empty()) out.append(": ").append(msg);
  return out;
}

// One request while it is in flight. Its callbacks all run on the request's strand, one at a
// time, so the fields need no lock.
struct Flight {
  Clock::time_point sent;
  http::SseParser sse;
  bool saw_done = false;
  std::string stream_error;
  std::string error_body;  // of a non-2xx answer, for the error text
  std::string answer;      // the content deltas: the next turn of a conversation carries it
};

void OnEvent(const http::SseEvent& ev, Flight& f, RequestRecord& r) {
  if (ev.data == "[DONE]") {
    f.saw_done = true;
    return;
  }
  const json j = json::parse(ev.data, nullptr, false);
  if (ev.event == "error" || (j.is_object() && j.contains("error"))) {
    if (f.stream_error.empty()) {
      f.stream_error = "error event: ";
      f.stream_error.append(ErrorMessage(ev.data));
    }
    return;
  }
  if (!j.is_object()) {
    if (f.stream_error.empty()) f.stream_error = "SSE data that is not a JSON object";
    return;
  }
  if (j.contains("choices") && j["choices"].is_array() && !j["choices"].empty()) {
    const json& c = j["choices"][0];
    if (c.is_object() && c.contains("delta") && c["delta"].is_object()) {
      const json& content = c["delta"].value("content", json());
      if (content.is_string() && !content.get_ref<const std::string&>().empty()) {
        if (r.ttft_ms < 0) {
          r.ttft_ms = std::chrono::duration<double, std::milli>(Clock::now() - f.sent).count();
        }
        f.answer += content.get_ref<const std::string&>();
      }
    }
  }
  if (j.contains("usage") && j["usage"].is_object()) {
    const json& n = j["usage"].value("completion_tokens", json());
    if (n.is_number_integer()) r.completion_tokens = n.get<int64_t>();
  }
}

const char* PhaseAt(const std::vector<Phase>& phases, double t) {
  for (const auto& p : phases) {
    if (t < p.end_s) return p.name.c_str();
  }
  return "draining";
}

json StatsJson(const PhaseStats& s) {
  json j = {
      {"name", s.name},
      {"requests", s.requests},
      {"errors", s.errors},
      {"throughput_rps", Round(s.throughput_rps, 0.001)},
      {"latency_p50_ms", OptionalMs(s.latency_p50_ms)},
      {"latency_p95_ms", OptionalMs(s.latency_p95_ms)},
      {"latency_p99_ms", OptionalMs(s.latency_p99_ms)},
      {"ttft_p50_ms", OptionalMs(s.ttft_p50_ms)},
      {"ttft_p95_ms", OptionalMs(s.ttft_p95_ms)},
      {"ttft_p99_ms", OptionalMs(s.ttft_p99_ms)},
      {"cache_hit_rate", s.cache_hit_rate ? json(Round(*s.cache_hit_rate, 0.0001)) : json(nullptr)},
      {"hits", s.hits},
      {"wrong_hits", s.wrong_hits},
      {"wrong_hit_rate", s.wrong_hit_rate ? json(Round(*s.wrong_hit_rate, 0.0001)) : json(nullptr)},
      {"wrapped", s.wrapped}};
  // Conversations only: what each user turn saw.
  if (!s.turns.empty()) {
    json turns = json::array();
    for (const auto& t : s.turns) {
      turns.push_back({{"turn", t.turn},
                       {"requests", t.requests},
                       {"errors", t.errors},
                       {"ttft_p50_ms", OptionalMs(t.ttft_p50_ms)},
                       {"ttft_p95_ms", OptionalMs(t.ttft_p95_ms)},
                       {"latency_p50_ms", OptionalMs(t.latency_p50_ms)}});
    }
    j["turns"] = std::move(turns);
  }
  return j;
}

// Successful responses that completed in [start_s, end_s): what the target actually served in
// that window. Counted by completion, not by send time, so a spike the target only queues shows
// as throughput below the offered rate, not just as latency.
int64_t ServedIn(const std::vector<RequestRecord>& all, double start_s, double end_s) {
  int64_t n = 0;
  for (const auto& r : all) {
    const double done = r.send_s + r.latency_ms / 1e3;
    n += r.ok() && done >= start_s && done < end_s;
  }
  return n;
}

PhaseStats Stats(std::string name, double length_s,
                 const std::vector<const RequestRecord*>& records, int64_t served) {
  PhaseStats s;
  s.name = std::move(name);
  s.length_s = length_s;
  std::vector<double> lat, ttft;
  for (const RequestRecord* r : records) {
    ++s.requests;
    if (!r->ok()) {
      ++s.errors;
      continue;
    }
    lat.push_back(r->latency_ms);
    if (r->ttft_ms >= 0) ttft.push_back(r->ttft_ms);
    s.hits += r->cache_hit;
    s.wrong_hits += r->wrong_hit;
  }
  for (const RequestRecord* r : records) s.wrapped += r->wrapped;
  const int64_t ok = s.requests - s.errors;
  s.throughput_rps = length_s > 0 ? static_cast<double>(served) / length_s : 0;
  s.latency_p50_ms = Percentile(lat, 50);
  s.latency_p95_ms = Percentile(lat, 95);
  s.latency_p99_ms = Percentile(lat, 99);
  s.ttft_p50_ms = Percentile(ttft, 50);
  s.ttft_p95_ms = Percentile(ttft, 95);
  s.ttft_p99_ms = Percentile(ttft, 99);
  if (ok > 0) s.cache_hit_rate = static_cast<double>(s.hits) / static_cast<double>(ok);
  if (s.hits > 0) {
    s.wrong_hit_rate = static_cast<double>(s.wrong_hits) / static_cast<double>(s.hits);
  }
  s.turns = TurnStats(records);
  return s;
}

}  // namespace

StatusOr<std::vector<QuestionGroup>> LoadQuestions(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot open questions file " + path);
  std::vector<QuestionGroup> groups;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(n) + ": ";
    const json j = json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("question") || !j["question"].is_string()) {
      return InvalidArgument(where + "expected {\"question\": \"...\", \"paraphrases\": [...]}");
    }
    QuestionGroup g;
    g.question = j["question"].get<std::string>();
    if (j.contains("paraphrases")) {
      if (!j["paraphrases"].is_array())
        return InvalidArgument(where + "\"paraphrases\" must be an array of strings");
      for (const auto& p : j["paraphrases"]) {
        if (!p.is_string())
          return InvalidArgument(where + "\"paraphrases\" must be an array of strings");
        g.paraphrases.push_back(p.get<std::string>());
      }
    }
    if (g.question.empty()) return InvalidArgument(where + "empty question");
    groups.push_back(std::move(g));
  }
  if (groups.empty()) return InvalidArgument("no questions in " + path);
  return groups;
}

std::vector<Phase> Phases(const Profile& profile) {
  std::vector<Phase> out;
  double t = 0;
  const std::pair<const char*, std::pair<double, double>> spec[] = {
      {"steady", {profile.steady_s, profile.rate}},
      {"spike", {profile.spike_s, profile.rate * profile.spike_factor}},
      {"recovery", {profile.recovery_s, profile.rate}},
  };
  for (const auto& [name, len_rate] : spec) {
    if (len_rate.first <= 0) continue;
    out.push_back({name, t, t + len_rate.first, len_rate.second});
    t += len_rate.first;
  }
  return out;
}

std::vector<Arrival> BuildSchedule(const Profile& profile, const Mix& mix,
                                   const std::vector<QuestionGroup>& groups, uint64_t seed) {
  FRUGAL_CHECK(!groups.empty());
  const auto phases = Phases(profile);
  std::vector<Arrival> out;
  auto time_rng = Rng(seed, kTimeStream);
  for (size_t p = 0; p < phases.size(); ++p) {
    if (phases[p].rate <= 0) continue;
    double t = phases[p].start_s;
    while (true) {
      t += -std::log1p(-Uniform(time_rng)) / phases[p].rate;
      if (t >= phases[p].end_s) break;
      Arrival a;
      a.time_s = t;
      a.phase = static_cast<int>(p);
      out.push_back(a);
    }
  }

  auto rng = Rng(seed, kChoiceStream);
  std::vector<size_t> order(groups.size());
  std::iota(order.begin(), order.end(), size_t{0});
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[Below(rng, i)]);
  std::vector<size_t> asked;
  std::vector<bool> was_asked(groups.size());
  size_t next_new = 0;
  for (Arrival& a : out) {
    // Every arrival consumes the same draws, so one choice never shifts the ones after it.
    const double u_repeat = Uniform(rng), u_variant = Uniform(rng), u_long = Uniform(rng);
    const uint64_t pick = rng();
    if (!asked.empty() && u_repeat < mix.repeat_share) {
      a.repeat = true;
      a.group = asked[pick % asked.size()];
      const size_t np = groups[a.group].paraphrases.size();
      a.variant = np == 0 || u_variant < 0.5 ? 0 : 1 + static_cast<int>((pick >> 32) % np);
    } else {
      a.group = order[next_new++ % order.size()];
      if (!was_asked[a.group]) {
        was_asked[a.group] = true;
        asked.push_back(a.group);
      } else {
        a.wrapped = true;
      }
    }
    a.long_prompt = u_long < mix.long_share;
  }
  return out;
}

std::string PromptText(const Arrival& a, const std::vector<QuestionGroup>& groups) {
  const QuestionGroup& g = groups[a.group];
  const std::string& q =
      a.variant == 0 ? g.question : g.paraphrases[static_cast<size_t>(a.variant - 1)];
  if (!a.long_prompt) return q;
  // Sentences until the passage is twice the question, so the message is about 3x its tokens.
  const bool ascii = IsAscii(q);
  const auto& sentences = PassageSentences(ascii);
  std::string passage;
  for (size_t i = a.group; CodePoints(passage) < 2 * CodePoints(q); ++i) {
    if (!passage.empty() && ascii) passage += ' ';
    passage += sentences[i % sentences.size()];
  }
  return passage.append("\n\n").append(q);
}

std::optional<double> Percentile(std::vector<double> values, double p) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (rank - static_cast<double>(lo));
}

StatusOr<RunResult> Run(const RunOptions& o, const std::vector<QuestionGroup>& groups,
                        const std::function<void(const Progress&)>& on_progress) {
  FRUGAL_ASSIGN_OR_RETURN(const Target target, ParseTarget(o.target));
  RunResult result;
  result.target = o.target;
  result.phases = Phases(o.profile);
  if (result.phases.empty())
    return InvalidArgument(
        "the profile is empty: give --steady-seconds, --spike-seconds or --after-seconds > 0");
  const auto schedule = BuildSchedule(o.profile, o.mix, groups, o.seed);
  const size_t n = schedule.size();
  result.records.resize(n);
  std::vector<Flight> flights(n);
  std::vector<uint64_t> ids(n);
  struct {
    Mutex mu;
    CondVar cv;
    int64_t done FRUGAL_GUARDED_BY(mu) = 0;
    int64_t errors FRUGAL_GUARDED_BY(mu) = 0;
  } tally;

  const auto timeout =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.timeout_s));
  http::ClientOptions co;
  co.io_threads = o.io_threads;
  co.response_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  co.connect_timeout = std::min(co.connect_timeout, co.response_timeout);
  // Declared after the state its callbacks write: its destructor (which may still call on_done)
  // runs first.
  http::Client client(co);
  ConversationBook book(o.conversation);
  auto conversation_rng = Rng(o.seed, kConversationStream);

  result.model = o.model;
  if (result.model.empty()) {
    FRUGAL_ASSIGN_OR_RETURN(result.model, FirstModel(client, target, o));
  }

  const auto start = Clock::now();
  const auto at = [&](double s) {
    return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
  };
  const double end_s = result.phases.back().end_s;
  const auto drain_deadline = at(end_s) + timeout;
  auto next_tick = start + std::chrono::seconds(1);
  bool cancelled = false;

  auto send = [&](size_t i) {
    const Arrival& a = schedule[i];
    RequestRecord& r = result.records[i];
    r.phase = a.phase;
    r.group = a.group;
    r.repeat = a.repeat;
    r.wrapped = a.wrapped;
    r.long_prompt = a.long_prompt;
    const int64_t max_tokens = a.long_prompt ? 3 * o.max_tokens : o.max_tokens;
    json messages = json::array();
    if (o.conversation.enabled) {
      const ConversationBook::Turn turn =
          book.Next(Uniform(conversation_rng), PromptText(a, groups));
      r.conversation = turn.conversation;
      r.turn = turn.turn;
      for (const auto& m : turn.messages) {
        messages.push_back({{"role", m.role}, {"content", m.content}});
      }
    } else {
      messages.push_back({{"role", "user"}, {"content", PromptText(a, groups)}});
    }
    const json body = {{"model", result.model},    {"messages", std::move(messages)},
                       {"max_tokens", max_tokens}, {"temperature", 0},
                       {"stream", true},           {"stream_options", {{"include_usage", true}}}};
    auto req = MakeRequest(target, o, "POST", "/v1/chat/completions");
    req.headers.emplace_back("Content-Type", "application/json");
    req.headers.emplace_back("Accept", "text/event-stream");
    req.body = body.dump();
    Flight& f = flights[i];
    http::ClientCallbacks cb;
    cb.on_headers = [&r](int status, const http::Headers& headers) {
      r.status = status;
      for (const auto& [k, v] : headers) {
        if (strcasecmp(k.c_str(), "X-Frugal-Cache") == 0 && strcasecmp(v.c_str(), "hit") == 0)
          r.cache_hit = true;
      }
    };
    cb.on_data = [&r, &f](std::string_view data) {
      if (r.status >= 200 && r.status < 300) {
        f.sse.Feed(data, [&](const http::SseEvent& ev) { OnEvent(ev, f, r); });
      } else if (f.error_body.size() < 4096) {
        f.error_body.append(data);
      }
    };
    cb.on_done = [&, i](const Status& st, size_t) {
      RequestRecord& rec = result.records[i];
      Flight& fl = flights[i];
      rec.latency_ms = std::chrono::duration<double, std::milli>(Clock::now() - fl.sent).count();
      if (st.code() == StatusCode::kCancelled) {
        rec.error = "still in flight --timeout after the last phase";
      } else if (st.code() == StatusCode::kDeadlineExceeded) {
        rec.error = "timeout: " + st.message();
      } else if (!st.ok()) {
        rec.error = st.message();
      } else if (rec.status < 200 || rec.status >= 300) {
        rec.error = ErrorText(rec.status, fl.error_body);
      } else if (!fl.stream_error.empty()) {
        rec.error = fl.stream_error;
      } else if (!fl.saw_done) {
        rec.error = "the stream ended without [DONE]";
      }
      if (rec.turn > 0) book.Answered(rec.conversation, rec.ok(), fl.answer);
      if (rec.ok()) rec.answer = fl.answer;
      // Notified under the lock: once the last count is seen, Run may return and destroy cv.
      MutexLock lock(tally.mu);
      ++tally.done;
      tally.errors += !rec.ok();
      tally.cv.NotifyAll();
    };
    f.sent = Clock::now();
    r.send_s = std::chrono::duration<double>(f.sent - start).count();
    ids[i] = client.Send(std::move(req), std::move(cb));
  };

  size_t next = 0;
  tally.mu.lock();
  while (next < n || tally.done < static_cast<int64_t>(n)) {
    const auto now = Clock::now();
    if (next < n && now >= at(schedule[next].time_s)) {
      tally.mu.unlock();
      send(next++);
      tally.mu.lock();
      continue;
    }
    if (now >= next_tick) {
      next_tick = now + std::chrono::seconds(1);
      if (on_progress) {
        const double elapsed = std::chrono::duration<double>(now - start).count();
        const Progress progress{PhaseAt(result.phases, elapsed), elapsed,
                                static_cast<int64_t>(next), tally.done, tally.errors};
        tally.mu.unlock();
        on_progress(progress);
        tally.mu.lock();
      }
      continue;
    }
    if (next == n && now >= drain_deadline && !cancelled) {
      // The client's own timeout ends almost all of them sooner; this bounds the rest.
      cancelled = true;
      tally.mu.unlock();
      for (size_t i = 0; i < n; ++i) client.Cancel(ids[i]);
      tally.mu.lock();
      continue;
    }
    auto wake = next_tick;
    if (next < n) wake = std::min(wake, at(schedule[next].time_s));
    if (next == n && !cancelled) wake = std::min(wake, drain_deadline);
    tally.cv.WaitUntil(tally.mu, wake);
  }
  tally.mu.unlock();
  MarkWrongHits(result.records);
  return result;
}

void MarkWrongHits(std::vector<RequestRecord>& records) {
  std::map<size_t, std::set<std::string_view>> served;  // group -> answers its misses received
  for (const auto& r : records) {
    if (r.ok() && !r.cache_hit) served[r.group].insert(r.answer);
  }
  for (auto& r : records) {
    if (!r.ok() || !r.cache_hit) continue;
    const auto it = served.find(r.group);
    r.wrong_hit = it == served.end() || !it->second.contains(r.answer);
  }
}

std::vector<PhaseStats> Summarize(const RunResult& result) {
  std::vector<PhaseStats> out;
  std::vector<std::vector<const RequestRecord*>> by_phase(result.phases.size());
  std::vector<const RequestRecord*> all;
  for (const auto& r : result.records) {
    by_phase[static_cast<size_t>(r.phase)].push_back(&r);
    all.push_back(&r);
  }
  for (size_t p = 0; p < result.phases.size(); ++p) {
    const auto& ph = result.phases[p];
    out.push_back(
        Stats(ph.name, ph.length_s(), by_phase[p], ServedIn(result.records, ph.start_s, ph.end_s)));
  }
  int64_t ok = 0;
  for (const auto* r : all) ok += r->ok();
  out.push_back(Stats("total", result.phases.empty() ? 0 : result.phases.back().end_s, all, ok));
  return out;
}

namespace {
json ReportValue(const RunResult& result, const RunOptions& o) {
  const auto stats = Summarize(result);
  json phases = json::array();
  for (size_t i = 0; i + 1 < stats.size(); ++i) phases.push_back(StatsJson(stats[i]));
  json profile_phases = json::array();
  for (const auto& p : result.phases) {
    profile_phases.push_back(
        {{"name", p.name}, {"start_s", p.start_s}, {"end_s", p.end_s}, {"rate", p.rate}});
  }
  return {{"phases", phases},
          {"total", StatsJson(stats.back())},
          {"target", result.target},
          {"profile",
           {{"model", result.model},
            {"rate", o.profile.rate},
            {"spike_factor", o.profile.spike_factor},
            {"steady_seconds", o.profile.steady_s},
            {"spike_seconds", o.profile.spike_s},
            {"after_seconds", o.profile.recovery_s},
            {"phases", profile_phases},
            {"repeat_share", o.mix.repeat_share},
            {"long_share", o.mix.long_share},
            {"max_tokens", o.max_tokens},
            {"long_max_tokens", 3 * o.max_tokens},
            {"timeout_s", o.timeout_s},
            {"seed", o.seed},
            {"conversations", o.conversation.enabled},
            {"max_turns", o.conversation.max_turns},
            {"new_conversation_share", o.conversation.new_share},
            {"system_prompt_chars", o.conversation.system.size()}}}};
}
}  // namespace

std::string ReportJson(const RunResult& result, const RunOptions& o) {
  return ReportValue(result, o).dump();
}

std::string ReportTable(const RunResult& result, const RunOptions& o) {
  const auto stats = Summarize(result);
  std::string out = "target " + result.target + "  model " + result.model + "  seed " +
                    std::to_string(o.seed) + "\n";
  auto ms = [](const std::optional<double>& v) {
    return v ? Format("%9.1f", *v) : std::string("        -");
  };
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-9s %6s %6s %8s %6s %8s | %9s %9s %9s | %9s %9s %9s | %5s %5s\n",
                "phase", "secs", "rate", "requests", "errors", "ok rps", "lat p50", "p95", "p99",
                "ttft p50", "p95", "p99", "hit%", "wrong");
  out += buf;
  for (size_t i = 0; i < stats.size(); ++i) {
    const auto& s = stats[i];
    const bool total = i + 1 == stats.size();
    const std::string rate = total ? std::string("") : Format("%.1f", result.phases[i].rate);
    const std::string hit =
        s.cache_hit_rate ? Format("%.1f", 100 * *s.cache_hit_rate) : std::string("-");
    std::snprintf(buf, sizeof buf,
                  "%-9s %6.1f %6s %8lld %6lld %8.2f | %s %s %s | %s %s %s | %5s %5lld\n",
                  s.name.c_str(), s.length_s, rate.c_str(), static_cast<long long>(s.requests),
                  static_cast<long long>(s.errors), s.throughput_rps, ms(s.latency_p50_ms).c_str(),
                  ms(s.latency_p95_ms).c_str(), ms(s.latency_p99_ms).c_str(),
                  ms(s.ttft_p50_ms).c_str(), ms(s.ttft_p95_ms).c_str(), ms(s.ttft_p99_ms).c_str(),
                  hit.c_str(), static_cast<long long>(s.wrong_hits));
    out += buf;
  }
  if (stats.back().wrapped > 0) {
    out += "note: " + std::to_string(stats.back().wrapped) +
           " \"new\" questions re-asked an earlier one because the question file ran out: the "
           "hit rate counts them\n";
  }
  for (const auto& t : stats.back().turns) {
    std::snprintf(buf, sizeof buf,
                  "turn %d%s %8lld %6lld requests/errors | ttft p50 %s p95 %s | "
                  "lat p50 %s\n",
                  t.turn, t.turn == 3 ? "+" : " ", static_cast<long long>(t.requests),
                  static_cast<long long>(t.errors), ms(t.ttft_p50_ms).c_str(),
                  ms(t.ttft_p95_ms).c_str(), ms(t.latency_p50_ms).c_str());
    out += buf;
  }
  out +=
      "latency and ttft in ms over successful requests; ok rps = successful responses / phase "
      "length\n";
  return out;
}

std::string RecordsCsv(const RunResult& result) {
  std::string out =
      "index,phase,send_s,status,error,latency_ms,ttft_ms,completion_tokens,cache_hit,long,repeat,"
      "group,conversation,turn,wrong_hit,wrapped\n";
  for (size_t i = 0; i < result.records.size(); ++i) {
    const auto& r = result.records[i];
    out += std::to_string(i) + "," + result.phases[static_cast<size_t>(r.phase)].name + "," +
           Format("%.4f", r.send_s) + "," + std::to_string(r.status) + "," + CsvField(r.error) +
           "," + Format("%.2f", r.latency_ms) + "," +
           (r.ttft_ms >= 0 ? Format("%.2f", r.ttft_ms) : std::string()) + "," +
           (r.completion_tokens >= 0 ? std::to_string(r.completion_tokens) : std::string()) + "," +
           (r.cache_hit ? "1" : "0") + "," + (r.long_prompt ? "1" : "0") + "," +
           (r.repeat ? "1" : "0") + "," + std::to_string(r.group) + "," +
           (r.turn > 0 ? std::to_string(r.conversation) : std::string()) + "," +
           (r.turn > 0 ? std::to_string(r.turn) : std::string()) + "," + (r.wrong_hit ? "1" : "0") +
           "," + (r.wrapped ? "1" : "0") + "\n";
  }
  return out;
}

}  // namespace frugal::loadgen
