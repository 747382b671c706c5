// A persistent pool of worker threads for data-parallel kernels.
//
// ParallelFor(n, fn) splits [0, n) into contiguous chunks, runs fn(begin, end) on the workers
// and the calling thread, and returns when all chunks are done. Threads are created once, in the
// constructor. One ParallelFor at a time per pool (the engine loop is its only caller); calling
// it from two threads at once is serialised by an internal mutex.
#pragma once

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

  // Physical cores are not visible portably; this is the number of online CPUs.
  static int DefaultThreads();

 private:
  void WorkerLoop(int index);

  const int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex call_mu_;  // serialises ParallelFor callers

  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  uint64_t generation_ = 0;       // guarded by mu_; bumped for each ParallelFor
  int pending_ = 0;               // guarded by mu_; workers still running this generation
  bool stop_ = false;             // guarded by mu_
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;  // guarded by mu_
  int64_t n_ = 0;
  int64_t chunk_ = 0;
};

}  // namespace frugal
