#include "gateway/request.h"

#include <utility>

namespace frugal::gateway {

StatusOr<CompletionRequest> ParseCompletionRequest(std::string_view body, bool chat,
                                                   const RequestPolicy& policy) {
  auto parsed = api::ParseProxiedCompletion(body, chat, policy);
  if (!parsed.ok()) return parsed.status();
  CompletionRequest r;
  static_cast<api::ProxiedCompletion&>(r) = std::move(parsed).value();
  r.cost = {r.text_chars / 4 + 8, r.max_tokens.value_or(policy.default_max_tokens)};
  r.prefix.prompt_chars = r.text_chars;
  r.prefix.keys.reserve(r.prefixes.size());
  for (const auto& m : r.prefixes) r.prefix.keys.push_back({m.hash, m.chars});
  return r;
}

}  // namespace frugal::gateway
