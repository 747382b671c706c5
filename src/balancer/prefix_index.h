// Which worker was sent which prefix: an approximate index of the gateway's own routing, as
// SGLang's router and llm-d's approximate prefix scorer keep (issue 46). A request's prefixes
// are hashes of its start at message boundaries (the system prompt, then each earlier turn);
// the index remembers, per prefix, the last few workers it went to. A worker that was sent a
// request's longest prefix most likely still holds its KV (a prefix cache: Frugal's worker,
// vLLM, SGLang, llama-server's slots), so routing there prefills only the rest. It knows only what
// the gateway routed, so it works for any engine; it can be wrong (the worker evicted the
// blocks, restarted), which costs only the prefill that routing elsewhere would have cost too.
//
// A prefix that has been continued in several ways (a system prompt every conversation starts
// with) counts as held by every worker: each computes it once and keeps it, so it must not pin
// new conversations to the worker that happened to be sent it first (herding); they are spread
// by load, and only what is particular to a conversation draws it to one worker.
//
// Bounded: at most `capacity` prefixes, the least recently routed forgotten first.
// Not thread-safe: WorkerPool uses it under its lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace frugal::gateway {

// One prefix of a request: the hash of its start up to a boundary, and that start's length in
// characters of text (to weigh how much of the prompt it is).
struct PrefixKey {
  uint64_t hash = 0;
  int64_t chars = 0;
};

class PrefixIndex {
 public:
  explicit PrefixIndex(size_t capacity = 100000, size_t workers_per_prefix = 4);

  // The characters of the longest of `keys` (shortest first) that went to `worker` or is shared
  // (continued in kSharedAfter ways or more); 0 if none.
  int64_t Matched(std::span<const PrefixKey> keys, std::string_view worker) const;
  // `worker` was sent a request with these prefixes.
  void Record(std::span<const PrefixKey> keys, const std::string& worker);
  // A worker removed from the pool: nothing of it is matched any more.
  void Forget(std::string_view worker);
  size_t size() const { return map_.size(); }

 private:
  static constexpr int kSharedAfter = 2;  // continuations that make a prefix shared

  struct Entry {
    std::vector<std::string> workers;  // most recent first, at most workers_per_prefix_
    std::list<uint64_t>::iterator lru;
    int continuations = 0;  // distinct next prefixes seen after it (counted up to kSharedAfter)
  };
  const size_t capacity_, workers_per_prefix_;
  std::unordered_map<uint64_t, Entry> map_;
  std::list<uint64_t> lru_;  // most recently routed first
};

}  // namespace frugal::gateway
