#include "cache/vector_index.h"

#include "common/thread_annotations.h"
#include "kernels/kernels.h"

// The distance is Frugal's dispatched dot product, so hnswlib's own SIMD only adds its SSE
// prefetches of the next neighbours' vectors. Those read one id past a neighbour list (hnswlib
// 0.6.2), which ASan reports, so sanitizer builds go without them.
#if defined(__SANITIZE_ADDRESS__)
#define NO_MANUAL_VECTORIZATION
#endif
#include <hnswlib/hnswlib.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <mutex>

namespace frugal::cache {

float Similarity(std::span<const float> a, std::span<const float> b) {
  return DotF32(a.data(), b.data(), static_cast<int64_t>(a.size()));
}

void Normalize(std::span<float> v) {
  double ss = 0;
  for (float x : v) ss += static_cast<double>(x) * x;
  if (ss <= 0) return;
  const auto inv = static_cast<float>(1.0 / std::sqrt(ss));
  for (float& x : v) x *= inv;
}

namespace {

class ExactIndex : public VectorIndex {
 public:
  explicit ExactIndex(int dim) : dim_(dim) {}

  Status Add(uint64_t label, std::span<const float> v) override {
    if (static_cast<int>(v.size()) != dim_) return InvalidArgument("vector of the wrong dimension");
    WriterLock lock(mu_);
    auto it = where_.find(label);
    if (it != where_.end()) {
      std::copy(v.begin(), v.end(), data_.begin() + static_cast<std::ptrdiff_t>(it->second * dim_));
      return Status::Ok();
    }
    where_[label] = labels_.size();
    labels_.push_back(label);
    data_.insert(data_.end(), v.begin(), v.end());
    return Status::Ok();
  }

  void Remove(uint64_t label) override {
    WriterLock lock(mu_);
    auto it = where_.find(label);
    if (it == where_.end()) return;
    // Swap with the last row, keep the arrays dense.
    const size_t i = it->second, last = labels_.size() - 1;
    if (i != last) {
      std::copy_n(data_.begin() + static_cast<std::ptrdiff_t>(last * dim_), dim_,
                  data_.begin() + static_cast<std::ptrdiff_t>(i * dim_));
      labels_[i] = labels_[last];
      where_[labels_[i]] = i;
    }
    labels_.pop_back();
    data_.resize(labels_.size() * static_cast<size_t>(dim_));
    where_.erase(it);
  }

  std::vector<Neighbor> Search(std::span<const float> q, size_t k) const override {
    ReaderLock lock(mu_);
    std::vector<Neighbor> all(labels_.size());
    for (size_t i = 0; i < labels_.size(); ++i) {
      all[i] = {labels_[i],
                Similarity(q, std::span<const float>(data_.data() + i * static_cast<size_t>(dim_),
                                                     static_cast<size_t>(dim_)))};
    }
    k = std::min(k, all.size());
    std::partial_sort(
        all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k), all.end(),
        [](const Neighbor& a, const Neighbor& b) { return a.similarity > b.similarity; });
    all.resize(k);
    return all;
  }

  bool Get(uint64_t label, std::vector<float>* out) const override {
    ReaderLock lock(mu_);
    auto it = where_.find(label);
    if (it == where_.end()) return false;
    const float* row = data_.data() + it->second * static_cast<size_t>(dim_);
    out->assign(row, row + dim_);
    return true;
  }

  size_t size() const override {
    ReaderLock lock(mu_);
    return labels_.size();
  }
  int dim() const override { return dim_; }
  const char* kind() const override { return "exact"; }

 private:
  const int dim_;
  mutable SharedMutex mu_;
  std::vector<uint64_t> labels_ FRUGAL_GUARDED_BY(mu_);
  std::vector<float> data_ FRUGAL_GUARDED_BY(mu_);  // [row][dim]
  std::unordered_map<uint64_t, size_t> where_ FRUGAL_GUARDED_BY(mu_);
};

// Inner-product space whose distance runs Frugal's run-time-dispatched dot product (AVX2 where
// the CPU has it): hnswlib picks its own SIMD only at compile time, and the build targets any
// x86-64.
class DotSpace : public hnswlib::SpaceInterface<float> {
 public:
  explicit DotSpace(size_t dim) : dim_(dim) {}
  size_t get_data_size() override { return dim_ * sizeof(float); }
  hnswlib::DISTFUNC<float> get_dist_func() override { return &Distance; }
  void* get_dist_func_param() override { return &dim_; }

 private:
  static float Distance(const void* a, const void* b, const void* dim) {
    return 1.0f - DotF32(static_cast<const float*>(a), static_cast<const float*>(b),
                         static_cast<int64_t>(*static_cast<const size_t*>(dim)));
  }
  size_t dim_;
};

class HnswIndex : public VectorIndex {
 public:
  HnswIndex(int dim, const HnswParams& p, size_t capacity)
      : dim_(dim),
        space_(static_cast<size_t>(dim)),
        index_(std::make_unique<hnswlib::HierarchicalNSW<float>>(
            &space_, std::max<size_t>(capacity, 16), p.m, p.ef_construction)) {
    index_->setEf(p.ef_search);
  }

  Status Add(uint64_t label, std::span<const float> v) override {
    if (static_cast<int>(v.size()) != dim_) return InvalidArgument("vector of the wrong dimension");
    {
      ReaderLock lock(mu_);
      // hnswlib's own locks make concurrent adds and searches safe; only a resize is exclusive.
      if (index_->cur_element_count < index_->max_elements_) {
        try {
          index_->addPoint(v.data(), label);
          return Status::Ok();
        } catch (const std::exception&) {
          // Full after all (another add took the last slot): resize below.
        }
      }
    }
    try {
      WriterLock lock(mu_);
      if (index_->cur_element_count >= index_->max_elements_)
        index_->resizeIndex(index_->max_elements_ * 2);
      index_->addPoint(v.data(), label);
      return Status::Ok();
    } catch (const std::exception& e) {
      return ResourceExhausted(std::string("HNSW index: ") + e.what());
    }
  }

  void Remove(uint64_t label) override {
    ReaderLock lock(mu_);
    try {
      index_->markDelete(label);
      deleted_.fetch_add(1);
    } catch (const std::exception&) {
      // Not present (or already deleted): nothing to do.
    }
  }

  std::vector<Neighbor> Search(std::span<const float> q, size_t k) const override {
    ReaderLock lock(mu_);
    std::vector<Neighbor> out;
    if (index_->cur_element_count == 0) return out;
    auto pq = index_->searchKnn(q.data(), k);
    out.resize(pq.size());
    for (size_t i = pq.size(); i-- > 0;) {  // the queue pops the farthest first
      out[i] = {pq.top().second, 1.0f - pq.top().first};
      pq.pop();
    }
    return out;
  }

  bool Get(uint64_t label, std::vector<float>* out) const override {
    ReaderLock lock(mu_);
    try {
      *out = index_->getDataByLabel<float>(label);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }

  size_t size() const override {
    ReaderLock lock(mu_);
    return index_->cur_element_count - std::min<size_t>(index_->cur_element_count, deleted_.load());
  }
  int dim() const override { return dim_; }
  const char* kind() const override { return "hnsw"; }
  void SetEfSearch(size_t ef) override {
    WriterLock lock(mu_);  // searches read it under the shared lock
    index_->setEf(ef);
  }

 private:
  const int dim_;
  DotSpace space_;  // distance = 1 - inner product
  // Shared by adds, removes and searches (hnswlib locks its graph itself); exclusive for a resize
  // and for setEf.
  mutable SharedMutex mu_;
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> index_;
  std::atomic<size_t> deleted_{0};
};

}  // namespace

std::unique_ptr<VectorIndex> NewExactIndex(int dim) { return std::make_unique<ExactIndex>(dim); }

std::unique_ptr<VectorIndex> NewHnswIndex(int dim, const HnswParams& params,
                                          size_t initial_capacity) {
  return std::make_unique<HnswIndex>(dim, params, initial_capacity);
}

}  // namespace frugal::cache
