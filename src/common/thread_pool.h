// A persistent pool of worker threads for data-parallel kernels.
//
// ParallelFor(n, fn) splits [0, n) into one contiguous chunk per thread, runs fn(begin, end) on
// the workers and the calling thread, and returns when all chunks are done. Threads are created
// once, in the constructor. A decode step issues hundreds of short ParallelFor calls, so workers
// spin for a while (about 50-100 us) on an atomic generation counter before sleeping on a
// condition variable: a wake-up through the kernel would cost more than the work. Calls from
// several threads at once are serialised by an internal mutex.
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

  // fn(begin, end) over [0, n); chunks are at least `grain` long.
  void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain = 1);

  // The number of online CPUs.
  static int DefaultThreads();

 private:
  void WorkerLoop(int index);

  const int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex call_mu_;  // serialises ParallelFor callers

  // Published by the caller before bumping generation_ (release), read by workers after
  // observing it (acquire).
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int64_t chunk_ = 0;

  alignas(64) std::atomic<uint64_t> generation_{0};
  alignas(64) std::atomic<int> pending_{0};  // workers still running this generation
  alignas(64) std::mutex mu_;                // for sleeping only
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::atomic<bool> stop_{false};  // set before the final generation bump
};

}  // namespace frugal
