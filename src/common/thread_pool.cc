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

// ThreadPool::job_: (job generation << 32) | its chunk count.
uint32_t GenOf(uint64_t job) { return static_cast<uint32_t>(job >> 32); }
int64_t ChunksOf(uint64_t job) { return static_cast<int64_t>(job & 0xffffffffu); }
uint64_t Job(uint32_t gen, int64_t chunks) {
  return (static_cast<uint64_t>(gen) << 32) | static_cast<uint64_t>(chunks);
}

}  // namespace

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(std::max(1, n_threads)),
      claims_(static_cast<size_t>(n_threads_) * kChunksPerThread) {
  workers_.reserve(n_threads_ - 1);
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true, std::memory_order_relaxed);  // published by the release store below
    job_.store(Job(++gen_, 0), std::memory_order_release);
  }
  work_cv_.notify_all();
  for (auto& t : workers_) t.join();
}

int ThreadPool::DefaultThreads() {
  const unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : static_cast<int>(hc);
}

void ThreadPool::RunChunks(uint64_t job, int thread) {
  const uint32_t gen = GenOf(job);
  const int64_t chunks = ChunksOf(job);
  // Thread t starts at its own share of the chunks and goes on round the ring, so that with
  // every thread running each claims its own chunks on its own cache lines, and the chunks of a
  // thread that is off its core are taken by the others.
  const int64_t first = chunks * thread / n_threads_;
  for (int64_t k = 0; k < chunks; ++k) {
    int64_t i = first + k;
    if (i >= chunks) i -= chunks;
    std::atomic<uint32_t>& claim = claims_[static_cast<size_t>(i)].gen;
    uint32_t prev = claim.load(std::memory_order_relaxed);
    // A claim stamped with an older job's generation is free; generations only grow (compared
    // modulo 2^32). A thread still in an older job finds every chunk stamped with its job or a
    // newer one, and claims nothing.
    if (static_cast<int32_t>(gen - prev) <= 0 ||
        !claim.compare_exchange_strong(prev, gen, std::memory_order_acq_rel))
      continue;
    // Chunk i of this job is ours: the job cannot change before we report it done.
    const int64_t n = n_.load(std::memory_order_relaxed);
    const int64_t chunk = chunk_.load(std::memory_order_relaxed);
    const int64_t begin = i * chunk, end = std::min(n, begin + chunk);
    (*fn_.load(std::memory_order_relaxed))(begin, end);
    if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) {
      std::lock_guard<std::mutex> lock(mu_);  // pairs with the caller's predicate check
      if (caller_sleeping_) done_cv_.notify_one();
    }
  }
}

void ThreadPool::ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                             int64_t grain) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t max_chunks = (n + grain - 1) / grain;
  const int64_t want =
      std::min<int64_t>(max_chunks, int64_t{n_threads_} * ThreadPool::kChunksPerThread);
  if (n_threads_ <= 1 || want <= 1) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> call_lock(call_mu_);
  // Chunks of whole grains, as equal as that allows.
  const int64_t chunk = (max_chunks + want - 1) / want * grain;
  const int64_t chunks = (n + chunk - 1) / chunk;
  fn_.store(&fn, std::memory_order_relaxed);
  n_.store(n, std::memory_order_relaxed);
  chunk_.store(chunk, std::memory_order_relaxed);
  done_.store(0, std::memory_order_relaxed);
  const uint32_t gen = ++gen_;
  bool wake = false;
  {
    // Publishing under the mutex means a worker about to sleep either sees the new job in its
    // wait predicate or is already asleep and counted.
    std::lock_guard<std::mutex> lock(mu_);
    job_.store(Job(gen, chunks), std::memory_order_release);
    wake = sleeping_workers_ > 0;
  }
  if (wake) work_cv_.notify_all();
  RunChunks(Job(gen, chunks), 0);
  for (int i = 0; i < kSpinIterations; ++i) {
    if (done_.load(std::memory_order_acquire) == chunks) return;
    FRUGAL_CPU_RELAX();
  }
  // A worker holds a chunk and is slow, most likely off its core: sleep, so that the kernel can
  // run it here.
  std::unique_lock<std::mutex> lock(mu_);
  caller_sleeping_ = true;
  done_cv_.wait(lock, [&] { return done_.load(std::memory_order_acquire) == chunks; });
  caller_sleeping_ = false;
}

void ThreadPool::WorkerLoop(int thread) {
  uint32_t seen = 0;
  for (;;) {
    bool woke = false;
    for (int i = 0; i < kSpinIterations; ++i) {
      if (GenOf(job_.load(std::memory_order_acquire)) != seen) {
        woke = true;
        break;
      }
      FRUGAL_CPU_RELAX();
    }
    if (!woke) {
      std::unique_lock<std::mutex> lock(mu_);
      ++sleeping_workers_;
      work_cv_.wait(lock, [&] { return GenOf(job_.load(std::memory_order_acquire)) != seen; });
      --sleeping_workers_;
    }
    const uint64_t job = job_.load(std::memory_order_acquire);
    seen = GenOf(job);
    if (stop_.load(std::memory_order_relaxed)) return;  // ordered by the acquire above
    RunChunks(job, thread);
  }
}

}  // namespace frugal
