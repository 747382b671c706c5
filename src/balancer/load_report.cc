#include "balancer/load_report.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "http/json_limits.h"

namespace frugal::gateway {

StatusOr<WorkerLoad> ParseWorkerLoad(std::string_view json) {
  if (!http::JsonDepthWithin(json)) return InvalidArgument("queue_depth nests too deeply");
  auto j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return InvalidArgument("queue_depth is not a JSON object");
  WorkerLoad l;
  // Counts must be integers (a float out of int64's range cannot be converted); times finite.
  l.source = "frugal /queue_depth";
  auto count = [&](const char* k, int64_t& out, LoadSignal sig) -> Status {
    if (!j.contains(k)) return Status::Ok();
    l.known |= sig;
    if (!j[k].is_number_integer())
      return InvalidArgument(std::string("queue_depth: ") + k + " must be an integer");
    out = j[k].get<int64_t>();
    return out < 0 ? InvalidArgument(std::string("queue_depth: negative ") + k) : Status::Ok();
  };
  auto ms = [&](const char* k, double& out, LoadSignal sig) -> Status {
    if (!j.contains(k)) return Status::Ok();
    l.known |= sig;
    if (!j[k].is_number())
      return InvalidArgument(std::string("queue_depth: ") + k + " must be a number");
    out = j[k].get<double>();
    return std::isfinite(out) && out >= 0 ? Status::Ok()
                                          : InvalidArgument(std::string("queue_depth: bad ") + k);
  };
  FRUGAL_RETURN_IF_ERROR(count("waiting", l.waiting, kSignalWaiting));
  FRUGAL_RETURN_IF_ERROR(count("running", l.running, kSignalRunning));
  FRUGAL_RETURN_IF_ERROR(ms("backlog_ms", l.backlog_ms, kSignalBacklog));
  FRUGAL_RETURN_IF_ERROR(ms("prefill_ms_per_token", l.prefill_ms_per_token, kSignalPrefill));
  FRUGAL_RETURN_IF_ERROR(ms("decode_ms_per_token", l.decode_ms_per_token, kSignalDecode));
  if (j.contains("simulated")) {
    if (!j["simulated"].is_boolean())
      return InvalidArgument("queue_depth: simulated must be a boolean");
    l.simulated = j["simulated"].get<bool>();
  }
  return l;
}

}  // namespace frugal::gateway
