// ThreadPool: every index once in grain-aligned chunks, a held-up worker holds up only its own
// chunk, MatMul gives the same bits whatever the thread count and chunking, concurrent callers.
#include "common/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "common/fp16.h"
#include "kernels/kernels.h"
#include "kernels/quantize.h"

namespace frugal {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The longest chunk ParallelFor(n, fn, grain) may cut for a pool of `threads` (one thread runs
// the whole range in one call).
int64_t MaxChunk(int64_t n, int64_t grain, int threads) {
  if (threads == 1) return n;
  const int64_t pieces = CeilDiv(n, grain);
  const int64_t chunks = std::min<int64_t>(pieces, int64_t{threads} * ThreadPool::kChunksPerThread);
  return CeilDiv(pieces, chunks) * grain;
}

TEST(ThreadPoolTest, EveryIndexOnceInGrainAlignedChunks) {
  for (int threads : {1, 2, 3, 4, 7}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 3, 7, 8, 33, 1000, 4097}) {
      for (int64_t grain : {1, 2, 3, 8, 64}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::mutex mu;
        std::vector<std::pair<int64_t, int64_t>> chunks;
        pool.ParallelFor(
            n,
            [&](int64_t a, int64_t b) {
              for (int64_t i = a; i < b; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
              std::lock_guard<std::mutex> lock(mu);
              chunks.emplace_back(a, b);
            },
            grain);
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1)
              << "threads " << threads << " n " << n << " grain " << grain << " index " << i;
        }
        EXPECT_LE(static_cast<int64_t>(chunks.size()),
                  int64_t{threads} * ThreadPool::kChunksPerThread);
        for (auto [a, b] : chunks) {
          EXPECT_LT(a, b);
          EXPECT_EQ(a % grain, 0) << a;
          EXPECT_TRUE(b == n || b % grain == 0) << b;
          EXPECT_LE(b - a, MaxChunk(n, grain, threads));
        }
      }
    }
  }
}

// Back-to-back calls whose chunk counts differ, with nothing in between: a thread still
// finishing one call must never claim a chunk of the next (each call's indices are covered
// exactly once, and every call returns).
TEST(ThreadPoolTest, BackToBackCallsOfDifferentSizesRunEachIndexOnce) {
  constexpr int kCalls = 50000;
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    std::vector<std::atomic<int64_t>> covered(kCalls);
    for (int call = 0; call < kCalls; ++call) {
      const int64_t n = call % 2 == 0 ? 2 + call % 3 : 64;  // few chunks, then many
      std::atomic<int64_t>& c = covered[static_cast<size_t>(call)];
      pool.ParallelFor(n, [&c](int64_t a, int64_t b) { c.fetch_add(b - a); });
    }
    for (int call = 0; call < kCalls; ++call) {
      const int64_t n = call % 2 == 0 ? 2 + call % 3 : 64;
      ASSERT_EQ(covered[static_cast<size_t>(call)].load(), n) << "call " << call;
    }
  }
}

TEST(ThreadPoolTest, EmptyRangeCallsNothing) {
  ThreadPool pool(3);
  int calls = 0;
  pool.ParallelFor(0, [&](int64_t, int64_t) { ++calls; });
  pool.ParallelFor(-5, [&](int64_t, int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

// Workers that went to sleep between calls are woken for the next one, and a pool destroyed
// before its workers ever ran shuts down.
TEST(ThreadPoolTest, WorkersAsleepBetweenCallsAndPoolsDestroyedAtOnce) {
  ThreadPool pool(3);
  for (int call = 0; call < 5; ++call) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // beyond any idle spin
    std::atomic<int64_t> sum{0};
    pool.ParallelFor(100, [&](int64_t a, int64_t b) {
      for (int64_t i = a; i < b; ++i) sum.fetch_add(i);
    });
    EXPECT_EQ(sum.load(), 4950);
  }
  for (int i = 0; i < 50; ++i) ThreadPool shortlived(4);
}

// A worker held up in its chunk (as if descheduled in the middle of it) holds up that chunk
// only: the calling thread and the other workers run every other chunk meanwhile. With one
// chunk per thread decided in advance, the held worker would hold n / threads indices.
TEST(ThreadPoolTest, AHeldUpWorkerHoldsUpOnlyItsOwnChunk) {
  for (int threads : {2, 4}) {
    ThreadPool pool(threads);
    const int64_t n = 1000;
    const std::thread::id caller = std::this_thread::get_id();
    std::mutex mu;
    std::condition_variable cv;
    bool holding = false;
    int64_t held = 0, finished = 0;
    pool.ParallelFor(n, [&](int64_t a, int64_t b) {
      std::unique_lock<std::mutex> lock(mu);
      if (std::this_thread::get_id() != caller && !holding) {
        // The first chunk a worker claims: held until everything else has been run.
        holding = true;
        held = b - a;
        cv.notify_all();
        cv.wait(lock, [&] { return finished + held == n; });
      } else if (std::this_thread::get_id() == caller) {
        // The caller's first chunk lets a worker in before going on, so that one is held.
        cv.wait(lock, [&] { return holding; });
      }
      finished += b - a;
      cv.notify_all();
    });
    EXPECT_EQ(finished, n);
    EXPECT_GT(held, 0);
    EXPECT_LE(held, MaxChunk(n, 1, threads)) << threads << " threads";
  }
}

// Several threads calling one pool at once each get their own call's results.
TEST(ThreadPoolTest, ConcurrentCallersEachGetTheirOwnResults) {
  ThreadPool pool(3);
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&pool, &wrong, c] {
      for (int call = 0; call < 200; ++call) {
        const int64_t n = 1 + (call * 37 + c * 11) % 300;
        std::vector<int64_t> out(static_cast<size_t>(n), -1);
        pool.ParallelFor(
            n,
            [&](int64_t a, int64_t b) {
              for (int64_t i = a; i < b; ++i) out[static_cast<size_t>(i)] = i * c + call;
            },
            1 + call % 5);
        for (int64_t i = 0; i < n; ++i) {
          if (out[static_cast<size_t>(i)] != i * c + call) wrong.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

// MatMul's rows go to whichever thread claims them, cut differently from call to call; its
// results must not change by a bit, for one-row and tiled types (whose batch kernels take two
// tiles at a time, so a chunk's start matters), both activation precisions, any batch.
TEST(ThreadPoolTest, MatMulIsBitIdenticalWhateverTheThreadsAndChunks) {
  std::mt19937 rng(26);
  std::normal_distribution<float> nd(0, 0.1f);
  const int64_t k = 128, rows = 8 * 37;
  std::vector<float> w(static_cast<size_t>(rows * k));
  for (auto& v : w) v = nd(rng);
  struct M {
    std::vector<uint8_t> bytes;
    TensorView view;
  };
  std::vector<M> ms;
  for (TensorType type : {TensorType::kI4S_G64, TensorType::kI8_C}) {
    auto q = QuantizeRowsRtn(type, w.data(), rows, k);
    ASSERT_TRUE(q.ok()) << TypeName(type);
    ms.push_back({std::move(*q), {}});
    ms.back().view =
        TensorView::Matrix(type, k, rows, ms.back().bytes.data(), ms.back().bytes.size());
  }
  {  // Q8_0, as a GGUF file has it, and repacked into tiles as the loader does.
    std::vector<uint8_t> q8(*RowBytes(TensorType::kQ8_0, k) * static_cast<size_t>(rows));
    auto* b = reinterpret_cast<BlockQ8_0*>(q8.data());
    for (size_t i = 0; i < w.size() / kQK; ++i) {
      b[i].d = Fp32ToFp16(0.01f);
      for (int j = 0; j < kQK; ++j) b[i].qs[j] = static_cast<int8_t>(rng() % 255 - 127);
    }
    const TensorView gguf = TensorView::Matrix(TensorType::kQ8_0, k, rows, q8.data(), q8.size());
    const std::optional<TensorType> tiled = RepackedType(gguf);
    ASSERT_TRUE(tiled.has_value());
    std::vector<uint8_t> packed(q8.size());
    RepackRows(gguf, packed.data());
    ms.push_back({std::move(q8), {}});
    ms.back().view = TensorView::Matrix(TensorType::kQ8_0, k, rows, ms.back().bytes.data(),
                                        ms.back().bytes.size());
    ms.push_back({std::move(packed), {}});
    ms.back().view =
        TensorView::Matrix(*tiled, k, rows, ms.back().bytes.data(), ms.back().bytes.size());
  }
  const int64_t max_batch = 9;
  std::vector<float> x(static_cast<size_t>(max_batch * k));
  for (auto& v : x) v = nd(rng);
  ThreadPool one(1);
  std::vector<ThreadPool*> pools;
  std::vector<std::unique_ptr<ThreadPool>> owned;
  for (int threads : {2, 3, 4, 7}) {
    owned.push_back(std::make_unique<ThreadPool>(threads));
    pools.push_back(owned.back().get());
  }
  for (const M& m : ms) {
    for (ActivationPrecision p : {ActivationPrecision::kF32, ActivationPrecision::kInt8}) {
      for (int64_t batch : {int64_t{1}, int64_t{2}, int64_t{5}, max_batch}) {
        std::vector<float> ref(static_cast<size_t>(batch * rows)), y(ref.size());
        MatMul(m.view, x.data(), batch, ref.data(), one, p);
        for (ThreadPool* pool : pools) {
          for (int rep = 0; rep < 3; ++rep) {
            std::fill(y.begin(), y.end(), NAN);
            MatMul(m.view, x.data(), batch, y.data(), *pool, p);
            ASSERT_EQ(0, std::memcmp(ref.data(), y.data(), ref.size() * sizeof(float)))
                << TypeName(m.view.type) << " batch " << batch << " threads " << pool->size();
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace frugal
