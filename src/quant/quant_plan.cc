// EstimatePlan: what a `frugal quantize` run will need, said before the long part. Memory is
// counted from the shapes by the same rules the layer loop follows (quantizer.cc: every Hessian
// during the calibration pass; then matrix by matrix, with finished matrices and inputs freed);
// time from three short probes of this machine on the run's own kernels and threads.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <string>

#include "kernels/kernels.h"
#include "quant/dense.h"
#include "quant/quant_method.h"

namespace frugal::quant_internal {
namespace {

constexpr const char* kMatrices[] = {"attn_q",   "attn_k", "attn_v",  "attn_output",
                                     "ffn_gate", "ffn_up", "ffn_down"};

// The input each matrix reads, as an index into the layer's four inputs.
int InputIndex(std::string_view m) {
  if (m == "attn_output") return 1;
  if (m == "ffn_gate" || m == "ffn_up") return 2;
  if (m == "ffn_down") return 3;
  return 0;
}

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The bytes tensor `name` is written with.
size_t OutputBytes(const TensorChoice& choice, const TensorView& t) {
  if (choice.keep) return t.nbytes;
  if (t.n_dims < 2) return static_cast<size_t>(t.elements()) * 4;  // norms, biases: F32
  if (choice.quantize) {
    auto rb = RowBytes(choice.type, t.ne[0]);
    if (rb.ok()) return *rb * static_cast<size_t>(t.rows());
  }
  return static_cast<size_t>(t.elements()) * (choice.type == TensorType::kF32 ? 4 : 2);
}

// GFLOPS of sgemm on the dense threads: a 768-cube product, best of three.
double ProbeBlas() {
  constexpr int64_t n = 768;
  std::vector<float> a(static_cast<size_t>(n * n), 0.5f), b(a), c(a.size());
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    dense::GemmNN(n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    best = std::min(best, Seconds(t0));
  }
  return 2.0 * n * n * n / std::max(best, 1e-9) / 1e9;
}

// GFLOPS of the engine's matrix kernel on (up to) 256 rows of matrix w, 128 tokens, on the pool.
double ProbeMatMul(const TensorView& w, ThreadPool& pool) {
  const int64_t rows = std::min<int64_t>(w.rows(), 256), cols = w.ne[0], tokens = 128;
  auto rb = RowBytes(w.type, cols);
  if (!rb.ok() || rows % 8 != 0) return 0;
  const TensorView v = TensorView::Matrix(w.type, cols, rows, w.data, *rb * rows);
  std::vector<float> x(static_cast<size_t>(tokens * cols)), y(static_cast<size_t>(tokens * rows));
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0, 1);
  for (float& f : x) f = nd(rng);
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    MatMul(v, x.data(), tokens, y.data(), pool);
    best = std::min(best, Seconds(t0));
  }
  return 2.0 * static_cast<double>(rows * cols * tokens) / std::max(best, 1e-9) / 1e9;
}

// Nanoseconds per weight of the group-scale fit (RTN in format f with the run's fit), on the pool.
double ProbeFit(const QuantizeOptions& o, TensorType type, int64_t cols, ThreadPool& pool) {
  auto f = FormatFor(o, type, cols);
  if (!f.ok()) return 0;
  const int64_t rows = 64;
  std::vector<float> w(static_cast<size_t>(rows * cols));
  std::mt19937 rng(2);
  std::normal_distribution<float> nd(0, 0.02f);
  for (float& v : w) v = nd(rng);
  const auto t0 = std::chrono::steady_clock::now();
  (void)QuantizeRtn(*f, w.data(), rows, cols, o.fit, nullptr, &pool);
  return Seconds(t0) * 1e9 / static_cast<double>(rows * cols);
}

}  // namespace

size_t MemAvailableBytes() {
  if (const char* env = std::getenv("FRUGAL_MEM_AVAILABLE")) return std::strtoull(env, nullptr, 10);
  std::ifstream in("/proc/meminfo");
  std::string key;
  size_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

QuantPlan EstimatePlan(const LayerContext& c, const QuantMethodImpl& method, int64_t calib_tokens,
                       int64_t windows) {
  const LlamaHParams& hp = c.source.hp();
  const bool calibrated = method.calibrated(), hessian = method.needs_hessian();
  const bool awq = c.o.method == QuantMethod::kAwq || c.o.method == QuantMethod::kAwqGptq;
  QuantPlan p;
  p.layers = hp.n_layer;
  p.windows = windows;
  p.calib_tokens = calibrated ? calib_tokens : 0;
  // Resident source: the tensors outside the layers (embeddings, output head, final norm) and
  // the largest layer's; each finished layer's pages go back to the kernel (ReleaseLayerSource).
  std::map<std::string, size_t> layer_source;  // "blk.N." -> bytes
  size_t outside_layers = 0;
  for (const NamedTensor& nt : c.source.tensors) {
    p.mapped_bytes += nt.tensor->nbytes;
    if (nt.name.starts_with("blk.")) {
      layer_source[nt.name.substr(0, nt.name.find('.', 4) + 1)] += nt.tensor->nbytes;
    } else {
      outside_layers += nt.tensor->nbytes;
    }
    if (auto it = c.plan.find(nt.name); it != c.plan.end())
      p.output_bytes += OutputBytes(it->second, *nt.tensor);
  }
  size_t largest_layer = 0;
  for (const auto& [prefix, bytes] : layer_source) largest_layer = std::max(largest_layer, bytes);
  p.source_bytes = outside_layers + largest_layer;
  const auto f4 = [](double n) { return static_cast<size_t>(n) * 4; };
  const int64_t sampled = std::min(p.calib_tokens, c.o.sample_tokens);
  if (calibrated) p.activation_bytes = f4(static_cast<double>(p.calib_tokens * hp.n_embd));

  const int64_t in_cols[4] = {hp.n_embd, hp.n_head * hp.head_dim, hp.n_embd, hp.n_ff};
  double layer_flops_blas = 0, layer_flops_mm = 0, layer_fit_weights = 0;
  for (int64_t li = 0; li < hp.n_layer; ++li) {
    const std::string prefix = "blk." + std::to_string(li) + ".";
    int64_t rows[7], cols[7];
    double floats = 0;
    int64_t params = 0;
    for (int i = 0; i < 7; ++i) {
      const TensorView* t = c.source.model->FindMatrix(prefix + kMatrices[i] + ".weight");
      rows[i] = t ? t->rows() : 0;
      cols[i] = t ? t->ne[0] : 0;
      params += rows[i] * cols[i];
      floats += static_cast<double>(rows[i] * cols[i]);
    }
    // The calibration pass: every float matrix, every input's Hessian and samples.
    double h_all = 0, samples_all = 0;
    for (int64_t n : in_cols) {
      if (hessian) h_all += static_cast<double>(n * n);
      if (calibrated) samples_all += static_cast<double>(sampled * n);
    }
    double worst = floats + h_all + samples_all;
    // Then matrix by matrix: the floats of this and later matrices, the statistics of inputs
    // still to be read, this input's GPTQ factor, and the matrix's working copy (GPTQ's
    // permuted weights, or the dequantized values of the error measure) and its integers.
    for (int i = 0; i < 7; ++i) {
      double live = 0;
      bool input_live[4] = {false, false, false, false};
      for (int k = i; k < 7; ++k) {
        live += static_cast<double>(rows[k] * cols[k]);
        input_live[InputIndex(kMatrices[k])] = true;
      }
      for (int q = 0; q < 4; ++q) {
        if (!input_live[q]) continue;
        if (hessian) live += static_cast<double>(in_cols[q] * in_cols[q]);
        if (calibrated) live += static_cast<double>(sampled * in_cols[q]);
      }
      const int64_t n = in_cols[InputIndex(kMatrices[i])];
      if (hessian) live += static_cast<double>(n * n);        // the factor
      live += 1.25 * static_cast<double>(rows[i] * cols[i]);  // working copy + int8 codes
      worst = std::max(worst, live);
    }
    p.layer_work_bytes = std::max(p.layer_work_bytes, f4(worst));
    if (params > p.layer_params) {
      p.layer_params = params;
      // Flops: two float passes over the calibration tokens (the engine's kernel); on BLAS the
      // Hessians (a Gram product: n^2 per token), per input one factorisation (2/3 n^3), per
      // matrix the block updates (rows x cols^2) and the error measure (two products over the
      // sampled inputs), and AWQ's grid (one product per point).
      const double tok = static_cast<double>(p.calib_tokens);
      layer_flops_mm = calibrated ? 2.0 * 2.0 * static_cast<double>(params) * tok : 0;
      layer_flops_blas = 0;
      if (hessian) {
        for (int64_t n : in_cols) {
          const double d = static_cast<double>(n);
          layer_flops_blas += tok * d * d + 2.0 / 3.0 * d * d * d;
        }
        for (int i = 0; i < 7; ++i) {
          layer_flops_blas += static_cast<double>(rows[i]) * static_cast<double>(cols[i]) *
                              static_cast<double>(cols[i]);
        }
      }
      if (calibrated) layer_flops_blas += 2.0 * 2.0 * static_cast<double>(params * sampled);
      // AWQ's grid: each point quantizes the group's matrices and measures their output error.
      const double grid = awq ? static_cast<double>(c.o.awq.grid) : 0;
      layer_fit_weights = static_cast<double>(params) * (1 + grid);
      if (awq) layer_flops_blas += grid * 2.0 * static_cast<double>(params * sampled);
    }
  }
  p.layer_peak_bytes = p.source_bytes + p.activation_bytes + p.layer_work_bytes;
  // The output is held once, until it is written (the layers' buffers move into the model that
  // is written; the writers stream it, one tensor's conversion at a time): at worst the last
  // layer's work beside everything quantized before it.
  p.end_peak_bytes = p.layer_peak_bytes + p.output_bytes;
  p.mem_available = MemAvailableBytes();

  // The probes, on layer 0's ffn_up (the widest kind of matrix) and its planned type.
  const std::string up = "blk.0.ffn_up.weight";
  const TensorView* w = c.source.model->FindMatrix(up);
  p.blas_gflops = calibrated ? ProbeBlas() : 0;
  p.matmul_gflops = w != nullptr && calibrated ? ProbeMatMul(*w, c.pool) : 0;
  const auto choice = c.plan.find(up);
  if (w != nullptr && choice != c.plan.end() && choice->second.quantize)
    p.fit_ns_per_weight = ProbeFit(c.o, choice->second.type, w->ne[0], c.pool);
  const auto secs = [](double flops, double gflops) {
    return gflops > 0 ? flops / (gflops * 1e9) : 0;
  };
  p.layer_seconds = secs(layer_flops_blas, p.blas_gflops) + secs(layer_flops_mm, p.matmul_gflops) +
                    layer_fit_weights * p.fit_ns_per_weight * 1e-9;
  p.total_seconds = p.layer_seconds * static_cast<double>(hp.n_layer);
  return p;
}

}  // namespace frugal::quant_internal
