// A persistent pool of worker threads for data-parallel kernels, built to degrade gracefully
// when its cores are shared with other processes.
//
// ParallelFor(n, fn, grain) cuts [0, n) into up to kChunksPerThread chunks per thread, each a
// whole number of `grain`-long pieces (the last may be shorter), and returns when fn(begin, end)
// has run on every chunk. The calling thread and the workers claim chunks one at a time from an
// atomic counter, so which thread runs which chunk, and how [0, n) is cut, changes from call to
// call: fn must compute each index's result the same way whatever range it comes in. Every
// caller in Frugal does (MatMul's rows, attention's (token, head) pairs, quantization's rows),
// so results are bit-identical whatever the thread count.
//
// A decode step issues hundreds of ParallelFor calls of tens of microseconds each, while a
// thread that loses its core to another process is off it for milliseconds. So:
// - the caller never waits for a worker that has not started: it claims chunks too, and a worker
//   that arrives late finds nothing left and goes back to waiting. It waits only for chunks in
//   flight, spinning about twice as long as its own chunks took, then sleeping on a condition
//   variable, which frees its core for a worker descheduled in the middle of a chunk;
// - an idle worker spins for the next call only while that pays: its spin budget follows the
//   recent gaps between calls (at most 100 us), and when the process is seen preempted (a spin
//   step that took over 50 us, or a worker's involuntary context switches, from getrusage) idle
//   workers sleep at once, and the caller spins at most 5 us, for 100 ms, a window that doubles
//   (up to 1.6 s) while preemption keeps coming back: on shared cores a spinning thread takes
//   time from the threads doing the work. Sleeping workers are woken through a condition
//   variable.
//
// Thread safety: ParallelFor may be called from any thread; calls are serialised by an internal
// mutex, so fn must not call ParallelFor on the same pool.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"

namespace frugal {

class ThreadPool {
 public:
  // n_threads counts the calling thread: 1 means everything runs inline.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // A call is cut into at most this many chunks per thread: enough that the threads running make
  // up for one that runs late or slow; few enough that claiming them (one compare-exchange each)
  // costs nothing next to the work.
  static constexpr int kChunksPerThread = 4;

  // fn(begin, end) over [0, n), in chunks that are whole multiples of `grain` (but the last);
  // fn(0, n) on the calling thread when the pool has one thread or n is at most `grain`.
  void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain = 1)
      FRUGAL_EXCLUDES(call_mu_);

  // The number of online CPUs.
  static int DefaultThreads();

 private:
  using Fn = std::function<void(int64_t, int64_t)>;

  void WorkerLoop();
  // Claims and runs chunks of the call whose generation `claim` (a value of claim_) carries until
  // none is left to claim; returns how many it ran.
  int RunChunks(uint64_t claim);
  struct Idle;  // a worker's spin budget and what it last saw of preemption
  // Spins, then sleeps, until claim_ carries a generation other than `last_gen`; returns it.
  uint64_t WaitForCall(uint64_t last_gen, Idle& idle);
  // Spins, then sleeps, until all n_chunks chunks of the current call are done.
  void WaitForChunks(int64_t n_chunks, int64_t spin_ns);
  bool Contended(int64_t now_ns) const;
  void NoteContended(int64_t now_ns);

  const int n_threads_;
  std::vector<std::thread> workers_;
  Mutex call_mu_;                                 // serialises ParallelFor callers
  uint64_t gen_ FRUGAL_GUARDED_BY(call_mu_) = 0;  // of the latest call

  // The current call: its generation (high bits) and the next chunk to claim (low bits), or
  // kClosed once the caller starts replacing the parameters below. Claims are compare-exchanges
  // that expect the generation whose parameters the claimer read, so a claim that succeeds
  // proves them current (a seqlock; the parameters are atomics, written with release, read
  // with acquire).
  alignas(64) std::atomic<uint64_t> claim_;
  std::atomic<const Fn*> fn_{nullptr};
  std::atomic<int64_t> n_{0};
  std::atomic<int64_t> grain_{1};
  std::atomic<int64_t> n_chunks_{1};

  alignas(64) std::atomic<int64_t> done_{0};    // chunks of the current call that have run
  alignas(64) std::atomic<int> sleepers_{0};    // workers asleep, or about to be, on work_cv_
  std::atomic<bool> caller_sleeping_{false};    // the caller is asleep, or about to be, on done_cv_
  std::atomic<int64_t> contended_until_ns_{0};  // steady-clock time; spin little before it
  std::atomic<int64_t> contended_for_ns_{0};    // the length of the latest such window
  std::atomic<bool> stop_{false};               // set before the final generation is published

  Mutex mu_;  // for sleeping only
  CondVar work_cv_;
  CondVar done_cv_;
};

}  // namespace frugal
