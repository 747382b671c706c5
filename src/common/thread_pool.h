// A persistent pool of worker threads for data-parallel kernels.
//
// ParallelFor(n, fn) cuts [0, n) into a few chunks per thread and runs fn(begin, end) on them,
// on the workers and the calling thread, returning when every chunk is done. Each thread starts
// on its own share of the chunks and then takes whatever the others have not claimed, so a
// thread that the OS has taken off its core (another program, the HTTP threads) delays only the
// chunk it holds, and the caller never waits for a worker that has not started: with one
// competing busy process on 2 cores, SmolLM2 decode went from about 20-30 tok/s (one fixed
// chunk per thread) to about 190 (docs/benchmarks.md). A decode step issues hundreds of short
// ParallelFor calls, so waiting threads first spin on atomics (a wake-up through the kernel would
// cost more than the work), then sleep: a thread that keeps spinning while the one it waits for
// is preempted keeps that thread off the core. Threads are created once, in the constructor.
// Calls from several threads at once are serialised by an internal mutex.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace frugal {

class ThreadPool {
 public:
  // n_threads counts the calling thread: 1 means everything runs inline.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // ParallelFor cuts a range into at most this many chunks per thread.
  static constexpr int kChunksPerThread = 4;

  // fn(begin, end) over [0, n); chunks are at least `grain` long. Which thread runs which chunk
  // is not fixed.
  void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain = 1);

  // The number of online CPUs.
  static int DefaultThreads();

 private:
  void WorkerLoop(int thread);
  // Claims and runs chunks of `job` (job_'s value) until none is left to claim.
  void RunChunks(uint64_t job, int thread);

  const int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex call_mu_;  // serialises ParallelFor callers

  // The current job, written by the caller before it publishes the job in job_ (release); a
  // thread reads them only after claiming one of the job's chunks, which a thread still in the
  // previous job cannot do (it knows that job's chunk count, all of them claimed), and the
  // caller does not start another job before every chunk is done.
  std::atomic<const std::function<void(int64_t, int64_t)>*> fn_{nullptr};
  std::atomic<int64_t> n_{0}, chunk_{0};

  // Chunk i is claimed by stamping claims_[i] with the job's generation (each on its own cache
  // line, so threads claiming their own chunks do not contend).
  struct alignas(64) Claim {
    std::atomic<uint32_t> gen{0};
  };
  std::vector<Claim> claims_;

  // (job generation << 32) | its chunk count.
  alignas(64) std::atomic<uint64_t> job_{0};
  alignas(64) std::atomic<int64_t> done_{0};  // chunks of the current job finished
  alignas(64) std::mutex mu_;                 // for sleeping only
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  int sleeping_workers_ = 0;       // guarded by mu_
  bool caller_sleeping_ = false;   // guarded by mu_
  std::atomic<bool> stop_{false};  // set before the final job is published
  uint32_t gen_ = 0;               // the caller's last job (under call_mu_)
};

}  // namespace frugal
