#include "common/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#define FRUGAL_CPU_RELAX() _mm_pause()
#else
#define FRUGAL_CPU_RELAX() std::this_thread::yield()
#endif

namespace frugal {
namespace {
constexpr int kSpinIterations = 20000;  // ~50-100 us of _mm_pause before sleeping
}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  workers_.reserve(n_threads_ - 1);
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true, std::memory_order_relaxed);  // published by the release bump below
    generation_.fetch_add(1, std::memory_order_release);
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

int ThreadPool::DefaultThreads() {
  const unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : static_cast<int>(hc);
}

void ThreadPool::ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                             int64_t grain) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t max_chunks = (n + grain - 1) / grain;
  const int used = static_cast<int>(std::min<int64_t>(n_threads_, max_chunks));
  if (used <= 1) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> call_lock(call_mu_);
  const int64_t chunk = (n + used - 1) / used;
  fn_ = &fn;
  n_ = n;
  chunk_ = chunk;
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  {
    // Bumping under the mutex means a worker about to sleep either sees the new generation
    // in its wait predicate or is already waiting and gets the notification.
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  work_cv_.notify_all();
  fn(0, std::min(n, chunk));  // the caller takes chunk 0
  for (int i = 0; i < kSpinIterations; ++i) {
    if (pending_.load(std::memory_order_acquire) == 0) return;
    FRUGAL_CPU_RELAX();
  }
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [this] { return pending_.load(std::memory_order_acquire) == 0; });
}

void ThreadPool::WorkerLoop(int index) {
  uint64_t seen = 0;
  for (;;) {
    bool woke = false;
    for (int i = 0; i < kSpinIterations; ++i) {
      if (generation_.load(std::memory_order_acquire) != seen) {
        woke = true;
        break;
      }
      FRUGAL_CPU_RELAX();
    }
    if (!woke) {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_relaxed)) return;  // ordered by the acquire above
    const int64_t begin = std::min(n_, chunk_ * index);
    const int64_t end = std::min(n_, begin + chunk_);
    if (begin < end) (*fn_)(begin, end);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mu_);  // pairs with the caller's predicate check
      done_cv_.notify_one();
    }
  }
}

}  // namespace frugal
