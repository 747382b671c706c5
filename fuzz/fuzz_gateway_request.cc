// libFuzzer target: what the gateway reads from the network and from its config file. Any byte
// string fed to ParseCompletionRequest (chat and completions, under several request policies),
// ParseWorkerLoad (then given to a worker pool as a poll result) or ParseGatewayConfig must yield
// a value or a Status, never a crash, a sanitizer report or an exception; what is accepted must
// hold the invariants the gateway relies on.
//
// The first byte chooses the parser and the policy; the rest is the input. Some modes splice the
// input into a valid request so that the fuzzer reaches the cache logic without a seed corpus.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "balancer/worker_pool.h"
#include "gateway/config.h"
#include "gateway/request.h"

namespace {

using frugal::gateway::CompletionRequest;
using frugal::gateway::RequestPolicy;

void Check(bool ok) {
  if (!ok) std::abort();
}

void FuzzRequest(std::string_view body, bool chat, const RequestPolicy& policy) {
  auto r = frugal::gateway::ParseCompletionRequest(body, chat, policy);
  if (!r.ok()) {
    Check(r.status().code() == frugal::StatusCode::kInvalidArgument);
    return;
  }
  const CompletionRequest& c = *r;
  Check(c.chat == chat);
  Check(!c.model.empty());
  Check(c.cost.prompt_tokens >= 0);
  Check(c.cost.max_tokens >= 1);
  if (c.cacheable) {
    Check(!c.sampling.empty());
    const auto s = nlohmann::json::parse(c.sampling, nullptr, false);
    Check(s.is_object() && s.contains("route"));
    Check(!s.contains("messages") && !s.contains("prompt") && !s.contains("stream") &&
          !s.contains("user"));
    if (chat) {
      const auto ctx = nlohmann::json::parse(c.context, nullptr, false);
      Check(ctx.is_array());
    }
  } else {
    Check(c.sampling.empty());
  }
}

void FuzzWorkerLoad(std::string_view body, uint8_t knob) {
  auto l = frugal::gateway::ParseWorkerLoad(body);
  if (!l.ok()) {
    Check(l.status().code() == frugal::StatusCode::kInvalidArgument);
    return;
  }
  Check(l->waiting >= 0 && l->running >= 0 && l->backlog_ms >= 0);
  // The load as a poll result: the pool's estimate and every policy must cope with it.
  frugal::gateway::HealthOptions h;
  h.max_queue = 1 + knob;
  frugal::gateway::WorkerPool pool(h);
  Check(pool.Add("a", "http://127.0.0.1:9001").ok());
  Check(pool.Add("b", "http://127.0.0.1:9002", 2).ok());
  pool.ReportCheck("a", l);
  for (const auto& name : frugal::gateway::PolicyNames()) {
    auto policy = frugal::gateway::MakePolicy(name);
    Check(policy.ok());
    auto lease = pool.Pick(**policy, {knob, knob}, {});
    Check(static_cast<bool>(lease));
    for (const auto& w : pool.List()) Check(w.est_queue >= 0 && w.est_backlog_ms >= 0);
  }
  for (const auto& w : pool.List()) Check(w.in_flight == 0);
}

void FuzzConfig(std::string_view text) {
  auto c = frugal::gateway::ParseGatewayConfig(std::string(text));
  if (!c.ok()) {
    Check(c.status().code() == frugal::StatusCode::kInvalidArgument);
    return;
  }
  Check(frugal::gateway::ValidateGatewayConfig(*c).ok());
  Check(frugal::gateway::MakePolicy(c->policy).ok());
  for (const auto& w : c->workers) Check(frugal::gateway::ParseWorkerUrl(w.url).ok());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t sel = data[0];
  const std::string_view in(reinterpret_cast<const char*>(data + 1), size - 1);
  RequestPolicy policy;
  static constexpr int kTurns[] = {-1, 0, 1, 3};
  policy.context_turns = kTurns[(sel >> 3) & 3];
  policy.cache_nondeterministic = (sel >> 5) & 1;
  policy.default_max_tokens = (sel >> 6) & 1 ? 1 : 256;
  switch (sel & 7) {
    case 0:
      FuzzRequest(in, true, policy);
      break;
    case 1:
      FuzzRequest(in, false, policy);
      break;
    case 2: {  // the input as the messages of a deterministic chat request
      std::string body =
          std::string(R"({"model":"m","temperature":0,"messages":)").append(in).append("}");
      FuzzRequest(body, true, policy);
      break;
    }
    case 3: {  // the input as more parameters of a valid chat request
      std::string body =
          std::string(
              R"({"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"q"}],)")
              .append(in)
              .append("}");
      FuzzRequest(body, true, policy);
      break;
    }
    case 4: {  // the same for completions
      std::string body = std::string(R"({"model":"m","prompt":"q",)").append(in).append("}");
      FuzzRequest(body, false, policy);
      break;
    }
    case 5:
      FuzzWorkerLoad(in, static_cast<uint8_t>(sel >> 3));
      break;
    case 6: {  // the input as the fields of a /queue_depth answer
      std::string body = std::string("{").append(in).append("}");
      FuzzWorkerLoad(body, static_cast<uint8_t>(sel >> 3));
      break;
    }
    default:
      FuzzConfig(in);
      break;
  }
  return 0;
}
