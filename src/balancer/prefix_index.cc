#include "balancer/prefix_index.h"

#include <algorithm>

namespace frugal::gateway {

PrefixIndex::PrefixIndex(size_t capacity, size_t workers_per_prefix)
    : capacity_(std::max<size_t>(capacity, 1)),
      workers_per_prefix_(std::max<size_t>(workers_per_prefix, 1)) {}

int64_t PrefixIndex::Matched(std::span<const PrefixKey> keys, std::string_view worker) const {
  for (auto k = keys.rbegin(); k != keys.rend(); ++k) {
    const auto it = map_.find(k->hash);
    if (it == map_.end()) continue;
    const auto& ws = it->second.workers;
    if (it->second.continuations >= kSharedAfter ||
        std::find(ws.begin(), ws.end(), worker) != ws.end()) {
      return k->chars;
    }
  }
  return 0;
}

void PrefixIndex::Record(std::span<const PrefixKey> keys, const std::string& worker) {
  Entry* before = nullptr;  // the entry of the previous (shorter) key
  for (const PrefixKey& k : keys) {
    auto it = map_.find(k.hash);
    if (it == map_.end()) {
      lru_.push_front(k.hash);
      it = map_.emplace(k.hash, Entry{{}, lru_.begin(), 0}).first;
      // A new way to go on from the shorter prefix.
      if (before != nullptr && before->continuations < kSharedAfter) ++before->continuations;
    } else {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
    }
    auto& ws = it->second.workers;
    std::erase(ws, worker);
    ws.insert(ws.begin(), worker);
    if (ws.size() > workers_per_prefix_) ws.resize(workers_per_prefix_);
    before = &it->second;
  }
  while (map_.size() > capacity_) {
    map_.erase(lru_.back());
    lru_.pop_back();
  }
}

void PrefixIndex::Forget(std::string_view worker) {
  for (auto it = map_.begin(); it != map_.end();) {
    auto& ws = it->second.workers;
    std::erase(ws, worker);
    if (ws.empty()) {
      lru_.erase(it->second.lru);
      it = map_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace frugal::gateway
