// Kernel micro-benchmarks: weight bytes/s for dequantization and matrix x vector (decode),
// FLOP/s for the batch kernels (4 activation rows per call), matrix x matrix (prefill) and float
// dot products, at every CPU level.
//
//   build/bench/kernels_bench --benchmark_filter=BM_MatMul        # y = W x, all threads
//   build/bench/kernels_bench --benchmark_filter=BM_DotQ8Relaid   # GGUF tiles, 1/4/8/16 rows
//
// Counters: "bytes_per_second" is weight bytes streamed; "FLOPS" counts 2 per multiply-add.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/fp16.h"
#include "common/thread_pool.h"
#include "kernels/kernels.h"
#include "kernels/quantize.h"

namespace frugal {
namespace {

// rows x k weights of `type`; Frugal types are RTN-quantized from random floats (random bytes
// would make denormal or NaN scales, which time differently).
std::vector<uint8_t> RandomWeights(TensorType type, int64_t k, int64_t rows) {
  std::mt19937 rng(1);
  if (IsFrugalType(type)) {
    std::normal_distribution<float> nd(0, 0.05f);
    std::vector<float> w(static_cast<size_t>(k * rows));
    for (auto& v : w) v = nd(rng);
    return *QuantizeRowsRtn(type, w.data(), rows, k);
  }
  std::vector<uint8_t> bytes(*RowBytes(type, k) * static_cast<size_t>(rows));
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  if (type == TensorType::kF32) {
    for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
      const float v = static_cast<float>(rng() % 1000) / 1000.0f;
      std::memcpy(&bytes[i], &v, 4);
    }
  } else if (type == TensorType::kF16 || type == TensorType::kBF16) {
    for (size_t i = 0; i + 2 <= bytes.size(); i += 2) {
      const uint16_t h = type == TensorType::kF16
                             ? Fp32ToFp16(0.01f * static_cast<float>(rng() % 100))
                             : Fp32ToBf16(0.5f);
      std::memcpy(&bytes[i], &h, 2);
    }
  }
  return bytes;
}

// Frugal's types at group size 64 (SmolLM2's 576-wide rows are not a multiple of 128).
const TensorType kTypes[] = {TensorType::kF32,    TensorType::kF16,     TensorType::kBF16,
                             TensorType::kQ8_0,   TensorType::kQ4_0,    TensorType::kQ4_1,
                             TensorType::kQ4_K,   TensorType::kQ6_K,    TensorType::kI8_C,
                             TensorType::kI8_G64, TensorType::kI4S_G64, TensorType::kI4A_G64};
const TensorType kInt8Types[] = {TensorType::kQ4_0,   TensorType::kQ4_1,    TensorType::kQ8_0,
                                 TensorType::kQ4_K,   TensorType::kQ6_K,    TensorType::kI8_C,
                                 TensorType::kI8_G64, TensorType::kI4S_G64, TensorType::kI4A_G64};

// Dequantize one 1536 x 576 matrix row by row (the FFN shape of SmolLM2).
void BM_Dequantize(benchmark::State& state) {
  const auto type = static_cast<TensorType>(state.range(0));
  const auto level = static_cast<CpuLevel>(state.range(1));
  const KernelTraits* traits = GetKernelTraits(type, level);
  if (traits == nullptr) {
    state.SkipWithError("level not supported here");
    return;
  }
  const int64_t k = 1536, rows = 576;
  const auto w = RandomWeights(type, k, rows);
  std::vector<float> out(static_cast<size_t>(kTileRows * k));
  const size_t row_bytes = w.size() / static_cast<size_t>(rows);
  const int tile = traits->tile_rows();
  for (auto _ : state) {
    for (int64_t r = 0; r < rows; r += tile) {
      if (tile == 1) {
        traits->dequantize_row(w.data() + r * row_bytes, out.data(), k);
      } else {
        traits->dequantize_tile(w.data() + r * row_bytes, out.data(), k);
      }
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(w.size()));
  state.SetLabel(std::string(TypeName(type)) + "/" + CpuLevelName(level));
}

void BM_DotF32(benchmark::State& state) {
  const auto level = static_cast<CpuLevel>(state.range(1));
  const int64_t n = state.range(0);
  const F32Kernels& k = GetF32Kernels(level);
  std::vector<float> a(static_cast<size_t>(n), 0.5f), b(static_cast<size_t>(n), 0.25f);
  for (auto _ : state) benchmark::DoNotOptimize(k.dot(a.data(), b.data(), n));
  state.counters["FLOPS"] =
      benchmark::Counter(static_cast<double>(2 * n) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.SetLabel(CpuLevelName(level));
}

// y = W x with the active level and all threads: the decode (batch 1) and prefill (batch 64)
// shapes of SmolLM2's FFN down-projection (576 x 1536), with float or INT8 activations.
void BM_MatMul(benchmark::State& state) {
  const auto type = static_cast<TensorType>(state.range(0));
  const int64_t batch = state.range(1);
  const auto precision = static_cast<ActivationPrecision>(state.range(2));
  const int64_t k = 1536, rows = 576;
  const auto w = RandomWeights(type, k, rows);
  const TensorView t = TensorView::Matrix(type, k, rows, w.data(), w.size());
  std::vector<float> x(static_cast<size_t>(batch * k), 0.1f), y(static_cast<size_t>(batch * rows));
  static ThreadPool pool(ThreadPool::DefaultThreads());
  for (auto _ : state) {
    MatMul(t, x.data(), batch, y.data(), pool, precision);
    benchmark::DoNotOptimize(y.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(w.size()));
  state.counters["FLOPS"] = benchmark::Counter(
      2.0 * static_cast<double>(k * rows * batch) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
  state.SetLabel(std::string(TypeName(type)) + "/batch " + std::to_string(batch) +
                 (precision == ActivationPrecision::kInt8 ? "/int8/" : "/f32/") +
                 CpuLevelName(ActiveCpuLevel()));
}

// Integer dot products against INT8 activations over one 576 x 1536 matrix (weight bytes/s).
void BM_DotQ8(benchmark::State& state) {
  const auto type = static_cast<TensorType>(state.range(0));
  const auto level = static_cast<CpuLevel>(state.range(1));
  const KernelTraits* traits = GetKernelTraits(type, level);
  if (traits == nullptr || (traits->dot_q8 == nullptr && traits->dot_q8_tile == nullptr)) {
    state.SkipWithError("no integer kernel for this type/level");
    return;
  }
  const int64_t k = 1536, rows = 576;
  const auto w = RandomWeights(type, k, rows);
  std::vector<float> x(static_cast<size_t>(k));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 17) - 8.0f;
  std::vector<BlockQ8Act> xq(static_cast<size_t>(k / kQK));
  QuantizeRowQ8Act(x.data(), xq.data(), k);
  const size_t row_bytes = w.size() / static_cast<size_t>(rows);
  float sink = 0;
  float out[kTileRows];
  for (auto _ : state) {
    if (traits->dot_q8_tile != nullptr) {
      for (int64_t r = 0; r < rows; r += kTileRows) {
        traits->dot_q8_tile(w.data() + r * row_bytes, xq.data(), k, out);
        sink += out[0];
      }
    } else {
      for (int64_t r = 0; r < rows; ++r)
        sink += traits->dot_q8(w.data() + r * row_bytes, xq.data(), k);
    }
    benchmark::DoNotOptimize(sink);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(w.size()));
  state.SetLabel(std::string(TypeName(type)) + "/" + CpuLevelName(level));
}

// m INT8 activation rows of k inputs (a fixed pattern per row), k / 32 blocks apart.
std::vector<BlockQ8Act> PatternActivations(int m, int64_t k) {
  const int64_t blocks = k / kQK;
  std::vector<float> x(static_cast<size_t>(k));
  std::vector<BlockQ8Act> xq(static_cast<size_t>(m * blocks));
  for (int i = 0; i < m; ++i) {
    for (size_t j = 0; j < x.size(); ++j) x[j] = static_cast<float>((j * (i + 3)) % 17) - 8.0f;
    QuantizeRowQ8Act(x.data(), &xq[static_cast<size_t>(i * blocks)], k);
  }
  return xq;
}

// Times the tile kernels of t over the tiled matrix w (rows x k, on one thread) against m
// activation rows: two tiles a call (dot_q8_tile_pair), or a tile a call (dot_q8_tile for one
// row, dot_q8_tiles for several). Weight bytes/s and FLOP/s (2 per multiply-add, all rows).
void TimeTiles(benchmark::State& state, const KernelTraits& t, const std::vector<uint8_t>& w,
               int64_t rows, int64_t k, int m, bool pairs) {
  const int64_t blocks = k / kQK;
  const std::vector<BlockQ8Act> xq = PatternActivations(m, k);
  const size_t tile_bytes = w.size() / static_cast<size_t>(rows / kTileRows);
  float sink = 0;
  float out[kMaxPairRows * 2 * kTileRows];
  for (auto _ : state) {
    for (int64_t r = 0; r < rows / kTileRows; r += pairs ? 2 : 1) {
      const uint8_t* tile = w.data() + r * tile_bytes;
      if (pairs) {
        t.dot_q8_tile_pair(tile, tile_bytes, xq.data(), blocks, m, k, out);
      } else if (m == 1) {
        t.dot_q8_tile(tile, xq.data(), k, out);
      } else {
        t.dot_q8_tiles(tile, xq.data(), blocks, m, k, out);
      }
      sink += out[0];
    }
    benchmark::DoNotOptimize(sink);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(w.size()));
  state.counters["FLOPS"] = benchmark::Counter(
      2.0 * static_cast<double>(k * rows * m) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}

// The batch kernels: 4 INT8 activation rows against one 576 x 1536 matrix of a tiled type on one
// thread, a tile at a time (dot_q8_tiles) or, at the AVX-512 levels, two tiles at a time
// (dot_q8_tile_pair). FLOP/s (2 per multiply-add, all 4 rows) and weight bytes/s.
void BM_DotQ8Rows(benchmark::State& state) {
  const auto type = static_cast<TensorType>(state.range(0));
  const auto level = static_cast<CpuLevel>(state.range(1));
  const bool pairs = state.range(2) != 0;
  const KernelTraits* traits = GetKernelTraits(type, level);
  if (traits == nullptr || traits->dot_q8_tiles == nullptr ||
      (pairs && traits->dot_q8_tile_pair == nullptr)) {
    state.SkipWithError("no such kernel at this level");
    return;
  }
  const int64_t k = 1536, rows = 576;
  TimeTiles(state, *traits, RandomWeights(type, k, rows), rows, k, /*m=*/4, pairs);
  state.SetLabel(std::string(TypeName(type)) + "/4 rows/" + (pairs ? "tile pairs/" : "tiles/") +
                 CpuLevelName(level));
}

// The kernels of GGUF block types re-laid into tiles at load (Q4_K ... re-laid as Q4_K_X8 ...):
// one INT8 activation row (decode), 4, 8 or 16 (a batch; as far as tiles_rows / pair_rows allow)
// against one 576 x 1536 matrix on one thread (it stays in L2, so this is the kernel's own rate,
// not memory's), a tile at a time (dot_q8_tile, dot_q8_tiles) or, at the AVX-512 levels, two at a
// time (dot_q8_tile_pair: what batches run).
// Weight bytes/s of the re-laid matrix and FLOP/s (2 per multiply-add, all rows).
void BM_DotQ8Relaid(benchmark::State& state) {
  const auto source = static_cast<TensorType>(state.range(0));
  const auto level = static_cast<CpuLevel>(state.range(1));
  const bool pairs = state.range(2) != 0;
  const int m = static_cast<int>(state.range(3));
  const int64_t k = 1536, rows = 576;
  std::vector<uint8_t> raw = RandomWeights(source, k, rows);
  // Sane fp16 scales (random bytes make NaN and denormal ones): d, and dmin / m where the block
  // has one, at the start of every block; Q6_K keeps d last.
  const TypeInfo* info = GetTypeInfo(source);
  const size_t d_at = source == TensorType::kQ6_K ? offsetof(BlockQ6_K, d) : 0;
  const bool has_min = source == TensorType::kQ4_1 || source == TensorType::kQ5_1 ||
                       source == TensorType::kQ4_K || source == TensorType::kQ5_K;
  for (size_t o = 0; o < raw.size(); o += info->block_bytes) {
    const uint16_t d = Fp32ToFp16(0.01f),
                   m = Fp32ToFp16(source == TensorType::kQ4_K || source == TensorType::kQ5_K
                                      ? 0.005f
                                      : -0.08f);
    std::memcpy(&raw[o + d_at], &d, 2);
    if (has_min) std::memcpy(&raw[o + 2], &m, 2);
  }
  const TensorView view = TensorView::Matrix(source, k, rows, raw.data(), raw.size());
  const std::optional<TensorType> type = RepackedType(view);
  const KernelTraits* traits = type ? GetKernelTraits(*type, level) : nullptr;
  if (traits == nullptr || traits->dot_q8_tile == nullptr ||
      (pairs && traits->dot_q8_tile_pair == nullptr) ||
      m > (pairs ? traits->pair_rows : traits->tiles_rows)) {
    state.SkipWithError("no such kernel at this level");
    return;
  }
  std::vector<uint8_t> w(RepackedBytes(view));
  RepackRows(view, w.data());
  TimeTiles(state, *traits, w, rows, k, m, pairs);
  state.SetLabel(std::string(TypeName(source)) + "/re-laid/" + std::to_string(m) + " row" +
                 (m > 1 ? "s/" : "/") + (pairs ? "tile pairs/" : "tiles/") + CpuLevelName(level));
}

void DotQ8RelaidArgs(benchmark::internal::Benchmark* b) {
  for (TensorType t :
       {TensorType::kQ4_0, TensorType::kQ4_1, TensorType::kQ8_0, TensorType::kQ5_0,
        TensorType::kQ5_1, TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K}) {
    for (CpuLevel l : SupportedCpuLevels()) {
      if (l == CpuLevel::kScalar) continue;
      const auto ti = static_cast<int64_t>(t), li = static_cast<int64_t>(l);
      b->Args({ti, li, 0, 1});  // decode
      b->Args({ti, li, 0, 4});
      // 8 rows where the one-tile kernels take them (tiles_rows): the GGUF tiles; Q4_0, Q4_1
      // and Q8_0 become Frugal's formats, 4 rows.
      if (t != TensorType::kQ4_0 && t != TensorType::kQ4_1 && t != TensorType::kQ8_0)
        b->Args({ti, li, 0, 8});
      if (l >= CpuLevel::kAvx512Bw) b->Args({ti, li, 1, 4});  // batches at the AVX-512 levels
      if (l >= CpuLevel::kAvx512Bw) b->Args({ti, li, 1, 8});
      if (l >= CpuLevel::kAvx512Bw &&
          (t == TensorType::kQ4_K || t == TensorType::kQ5_K || t == TensorType::kQ6_K))
        b->Args({ti, li, 1, 16});  // pair_rows of the K-quant tiles
    }
  }
}

void DotQ8RowsArgs(benchmark::internal::Benchmark* b) {
  for (TensorType t :
       {TensorType::kI8_C, TensorType::kI8_G64, TensorType::kI4S_G64, TensorType::kI4A_G64}) {
    for (CpuLevel l : SupportedCpuLevels()) {
      if (l == CpuLevel::kScalar) continue;
      b->Args({static_cast<int64_t>(t), static_cast<int64_t>(l), 0});
      if (l >= CpuLevel::kAvx512Bw) b->Args({static_cast<int64_t>(t), static_cast<int64_t>(l), 1});
    }
  }
}

void DotQ8Args(benchmark::internal::Benchmark* b) {
  for (TensorType t : kInt8Types) {
    for (CpuLevel l : SupportedCpuLevels())
      b->Args({static_cast<int64_t>(t), static_cast<int64_t>(l)});
  }
}

void DequantArgs(benchmark::internal::Benchmark* b) {
  for (TensorType t : kTypes) {
    for (CpuLevel l : SupportedCpuLevels())
      b->Args({static_cast<int64_t>(t), static_cast<int64_t>(l)});
  }
}
void DotArgs(benchmark::internal::Benchmark* b) {
  for (int64_t n : {64, 576, 4096}) {
    for (CpuLevel l : SupportedCpuLevels()) b->Args({n, static_cast<int64_t>(l)});
  }
}
void MatMulArgs(benchmark::internal::Benchmark* b) {
  for (TensorType t : kTypes) {
    for (int64_t batch : {1, 8, 64}) b->Args({static_cast<int64_t>(t), batch, 0});
  }
  for (TensorType t : kInt8Types) {
    for (int64_t batch : {1, 8, 64}) b->Args({static_cast<int64_t>(t), batch, 1});
  }
}

BENCHMARK(BM_Dequantize)->Apply(DequantArgs);
BENCHMARK(BM_DotF32)->Apply(DotArgs);
BENCHMARK(BM_DotQ8)->Apply(DotQ8Args);
BENCHMARK(BM_DotQ8Rows)->Apply(DotQ8RowsArgs);
BENCHMARK(BM_DotQ8Relaid)->Apply(DotQ8RelaidArgs);
BENCHMARK(BM_MatMul)->Apply(MatMulArgs)->UseRealTime();

}  // namespace
}  // namespace frugal

BENCHMARK_MAIN();
