#include "common/thread_pool.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
#define FRUGAL_CPU_RELAX() _mm_pause()
#else
#define FRUGAL_CPU_RELAX() std::this_thread::yield()
#endif

namespace frugal {
namespace {

// claim_ = generation << kIndexBits | next chunk. 40 bits of generation outlast any process; a
// call has at most kMaxChunks chunks, so kClosed is never a chunk index.
constexpr int kIndexBits = 24;
constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
constexpr uint64_t kClosed = kIndexMask;
constexpr int64_t kMaxChunks = kIndexMask - 1;
uint64_t Pack(uint64_t gen, uint64_t index) { return gen << kIndexBits | index; }
uint64_t GenOf(uint64_t claim) { return claim >> kIndexBits; }
uint64_t IndexOf(uint64_t claim) { return claim & kIndexMask; }

// An idle worker spins at most this long for the next call: a sleeping worker costs the caller a
// wake-up (a system call) and starts some 10-50 us late, which is the length of a whole call in
// a decode step.
constexpr int64_t kMaxIdleSpinNs = 100'000;
// A spin step (a load, a pause, a clock read: well under a microsecond) that took longer than
// this means the thread was descheduled: another runnable thread wanted the core.
constexpr int64_t kPreemptedGapNs = 50'000;
// After a sign of preemption, idle workers sleep at once and the caller spins at most
// kContendedWaitNs for chunks in flight, for a while: kContendedForNs, doubled up to
// kMaxContendedForNs each time preemption is seen again within one window of the last one
// running out (spinning again to see whether the other load has gone costs a few preempted
// calls).
constexpr int64_t kContendedForNs = 100'000'000;
constexpr int64_t kMaxContendedForNs = 1'600'000'000;
constexpr int64_t kContendedWaitNs = 5'000;
// The caller spins for chunks in flight about twice as long as its own chunks took, within these.
constexpr int64_t kMinWaitNs = 2'000;
constexpr int64_t kMaxWaitNs = 200'000;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// This thread's involuntary context switches so far (preemptions), or -1 when unknown.
int64_t InvoluntarySwitches() {
#if defined(RUSAGE_THREAD)
  rusage ru{};
  if (getrusage(RUSAGE_THREAD, &ru) == 0) return ru.ru_nivcsw;
#endif
  return -1;
}

}  // namespace

struct ThreadPool::Idle {
  int64_t spin_ns = kMaxIdleSpinNs;          // spin this long for the next call
  int64_t switches = InvoluntarySwitches();  // at the last wake-up
};

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(std::max(1, n_threads)), claim_(Pack(0, kClosed)) {
  workers_.reserve(n_threads_ - 1);
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  uint64_t gen;
  {
    MutexLock call_lock(call_mu_);
    gen = ++gen_;
  }
  stop_.store(true, std::memory_order_relaxed);  // published by the store below
  claim_.store(Pack(gen, kClosed), std::memory_order_seq_cst);
  {
    MutexLock lock(mu_);
    work_cv_.NotifyAll();
  }
  for (auto& t : workers_) t.join();
}

int ThreadPool::DefaultThreads() {
  const unsigned hc = std::thread::hardware_concurrency();
  return hc == 0 ? 1 : static_cast<int>(hc);
}

bool ThreadPool::Contended(int64_t now_ns) const {
  return now_ns < contended_until_ns_.load(std::memory_order_relaxed);
}

void ThreadPool::NoteContended(int64_t now_ns) {
  // Threads may race here; any of their outcomes is a fine window.
  const int64_t until = contended_until_ns_.load(std::memory_order_relaxed);
  int64_t window = contended_for_ns_.load(std::memory_order_relaxed);
  if (now_ns >= until) {
    window = now_ns - until < window ? std::min(2 * window, kMaxContendedForNs) : kContendedForNs;
    contended_for_ns_.store(window, std::memory_order_relaxed);
  }
  contended_until_ns_.store(now_ns + window, std::memory_order_relaxed);
}

void ThreadPool::ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                             int64_t grain) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t pieces = (n + grain - 1) / grain;
  if (n_threads_ == 1 || pieces <= 1) {
    fn(0, n);
    return;
  }
  const int64_t n_chunks =
      std::min({pieces, int64_t{n_threads_} * int64_t{kChunksPerThread}, kMaxChunks});

  MutexLock call_lock(call_mu_);
  // The previous call is done: every chunk claimed and run. Close it before replacing its
  // parameters, so that a late claimer that reads a new parameter cannot then claim an old chunk.
  claim_.store(Pack(gen_, kClosed), std::memory_order_relaxed);
  fn_.store(&fn, std::memory_order_release);
  n_.store(n, std::memory_order_release);
  grain_.store(grain, std::memory_order_release);
  n_chunks_.store(n_chunks, std::memory_order_release);
  done_.store(0, std::memory_order_relaxed);  // published by the store below
  const uint64_t claim = Pack(++gen_, 0);
  // seq_cst, and so is a sleeping worker's sleepers_ increment before it reads claim_: either it
  // sees this call, or this load sees it and wakes it.
  claim_.store(claim, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    MutexLock lock(mu_);
    work_cv_.NotifyAll();
  }

  const int64_t t0 = NowNs();
  const int ran = RunChunks(claim);
  const int64_t own_ns = ran > 0 ? (NowNs() - t0) / ran : kMaxWaitNs;
  WaitForChunks(n_chunks, std::clamp(2 * own_ns, kMinWaitNs, kMaxWaitNs));
}

int ThreadPool::RunChunks(uint64_t claim) {
  const uint64_t gen = GenOf(claim);
  // Possibly a later call's, or a mix: then every claim below fails (see claim_).
  const Fn* fn = fn_.load(std::memory_order_acquire);
  const int64_t n = n_.load(std::memory_order_acquire);
  const int64_t grain = grain_.load(std::memory_order_acquire);
  const int64_t n_chunks = n_chunks_.load(std::memory_order_acquire);
  int ran = 0;
  for (;;) {
    const uint64_t index = IndexOf(claim);
    if (GenOf(claim) != gen || index >= static_cast<uint64_t>(n_chunks)) return ran;
    if (!claim_.compare_exchange_weak(claim, claim + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
      continue;  // claim now holds the current value
    }
    claim += 1;
    // Chunk i is pieces [i * q + min(i, r), (i + 1) * q + min(i + 1, r)) of grain each.
    const int64_t i = static_cast<int64_t>(index);
    const int64_t pieces = (n + grain - 1) / grain;
    const int64_t q = pieces / n_chunks, r = pieces % n_chunks;
    const int64_t begin = (i * q + std::min(i, r)) * grain;
    const int64_t end = std::min(n, ((i + 1) * q + std::min(i + 1, r)) * grain);
    (*fn)(begin, end);
    ++ran;
    // seq_cst, and so is the caller's caller_sleeping_ store before it reads done_: either it
    // sees this chunk done, or this thread sees it asleep and wakes it.
    if (done_.fetch_add(1, std::memory_order_seq_cst) + 1 == n_chunks &&
        caller_sleeping_.load(std::memory_order_seq_cst)) {
      MutexLock lock(mu_);
      done_cv_.NotifyOne();
    }
  }
}

void ThreadPool::WaitForChunks(int64_t n_chunks, int64_t spin_ns) {
  if (done_.load(std::memory_order_acquire) == n_chunks) return;
  const int64_t start = NowNs();
  if (Contended(start)) spin_ns = std::min(spin_ns, kContendedWaitNs);
  for (int64_t prev = start;;) {
    if (done_.load(std::memory_order_acquire) == n_chunks) return;
    const int64_t now = NowNs();
    if (now - prev > kPreemptedGapNs) NoteContended(now);
    if (now - start > spin_ns) break;
    prev = now;
    FRUGAL_CPU_RELAX();
  }
  // Sleeping frees this core for the workers still running chunks, should one have been
  // descheduled.
  caller_sleeping_.store(true, std::memory_order_seq_cst);
  {
    MutexLock lock(mu_);
    while (done_.load(std::memory_order_seq_cst) != n_chunks) done_cv_.Wait(mu_);
  }
  caller_sleeping_.store(false, std::memory_order_relaxed);
}

uint64_t ThreadPool::WaitForCall(uint64_t last_gen, Idle& idle) {
  const int64_t start = NowNs();
  const int64_t budget = Contended(start) ? 0 : idle.spin_ns;
  for (int64_t prev = start;;) {
    const uint64_t claim = claim_.load(std::memory_order_acquire);
    const int64_t now = NowNs();
    if (GenOf(claim) != last_gen) {
      // Spinning paid: keep the budget, grown to twice this gap.
      idle.spin_ns = std::clamp(2 * (now - start), idle.spin_ns, kMaxIdleSpinNs);
      return claim;
    }
    if (now - prev > kPreemptedGapNs) {
      NoteContended(now);
      break;
    }
    if (now - start >= budget) break;
    prev = now;
    FRUGAL_CPU_RELAX();
  }
  {
    MutexLock lock(mu_);
    // seq_cst: see ParallelFor.
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    while (GenOf(claim_.load(std::memory_order_seq_cst)) == last_gen) work_cv_.Wait(mu_);
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }
  const int64_t now = NowNs();
  // Preempted since the last sleep, running chunks: the cores are shared.
  const int64_t s = InvoluntarySwitches();
  if (s > idle.switches) NoteContended(now);
  idle.switches = s;
  // A gap a spin could have covered (it includes the wake-up) grows the budget; a longer one
  // halves it, so that a worker idle between requests stops spinning.
  const int64_t gap = now - start;
  idle.spin_ns = gap <= kMaxIdleSpinNs ? std::min(kMaxIdleSpinNs, std::max(2 * idle.spin_ns, gap))
                                       : idle.spin_ns / 2;
  return claim_.load(std::memory_order_acquire);
}

void ThreadPool::WorkerLoop() {
  uint64_t last_gen = 0;
  Idle idle;
  for (;;) {
    uint64_t claim = claim_.load(std::memory_order_acquire);
    if (GenOf(claim) == last_gen) claim = WaitForCall(last_gen, idle);
    if (stop_.load(std::memory_order_relaxed)) return;  // ordered by the acquire above
    last_gen = GenOf(claim);
    RunChunks(claim);
  }
}

}  // namespace frugal
