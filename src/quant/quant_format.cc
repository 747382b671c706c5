#include "quant/quant_format.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "common/fp16.h"
#include "common/thread_pool.h"
#include "kernels/kernels.h"
#include "kernels/quantize.h"
#include "quant/gguf_grid.h"

namespace frugal {

StatusOr<QuantFormat> QuantFormat::Of(TensorType type, int64_t cols) {
  if (IsGgufGrid(type)) return GgufGridFormat(type, cols);
  const TypeInfo* info = GetTypeInfo(type);
  if (!IsFrugalType(type) || info == nullptr)
    return InvalidArgument(TypeName(type) + " is not a Frugal format");
  QuantFormat f;
  f.type = type;
  f.group = info->group_size > 0 ? info->group_size : cols;
  if (cols <= 0 || cols % f.group != 0) {
    return InvalidArgument(TypeName(type) + " needs a row length that is a multiple of " +
                           std::to_string(f.group) + ", not " + std::to_string(cols));
  }
  f.kind = IntKindOf(type);
  return f;
}

namespace {

// The search's inner loops run in lanes of 8 floats (n is a group size, a multiple of 8) so that
// the compiler vectorises them; the arithmetic per weight is QuantizeValue's and
// DequantizeValue's.
constexpr int kLanes = 8;
// Candidates per direction: the range spans 15 (or 8) levels, +- kSteps / 10.
constexpr int kSteps = 10;

float Sum(const float (&v)[kLanes]) {
  float s = 0;
  for (float x : v) s += x;
  return s;
}

}  // namespace

// The scale search's two loops are most of its time (issue 48: a 70B layer's 5.5M INT4 groups):
// compiled for several ISA levels and picked at load time (FRUGAL_MULTIVERSION, kernels.h), with
// bit-identical results at every level.
FRUGAL_MULTIVERSION
float GroupError(IntKind kind, const GroupParams& p, const float* w, const float* a, int64_t n) {
  const GridLevels lv = LevelsOf(kind);
  const float id = p.d != 0 ? 1.0f / p.d : 0.0f, d = p.d, m = p.m;
  float acc[kLanes] = {};
  for (int64_t j = 0; j < n; j += kLanes) {
    for (int k = 0; k < kLanes; ++k) {
      const float x = w[j + k];
      const float e = lv.asym ? RoundSmall(std::clamp((x - m) * id, 0.0f, lv.hi)) * d + m - x
                              : RoundSmall(std::clamp(x * id, lv.lo, lv.hi)) * d - x;
      acc[k] += a[j + k] * e * e;
    }
  }
  return Sum(acc);
}

FRUGAL_MULTIVERSION
void ForEachAsymCandidate(const float* w, const float* a, int64_t n, float lo, float hi, float top,
                          const std::function<void(const AsymSums&)>& take) {
  for (int k = -kSteps; k <= kSteps; ++k) {
    const float iscale = (top + 0.1f * static_cast<float>(k)) / (hi - lo);
    float sw[kLanes] = {}, sl[kLanes] = {}, sl2[kLanes] = {}, sx[kLanes] = {}, sxl[kLanes] = {};
    for (int64_t j = 0; j < n; j += kLanes) {
      for (int i = 0; i < kLanes; ++i) {
        const float x = w[j + i], wt = a[j + i];
        const float l = RoundSmall(std::clamp(iscale * (x - lo), 0.0f, top));
        sw[i] += wt, sl[i] += wt * l, sl2[i] += wt * l * l, sx[i] += wt * x, sxl[i] += wt * x * l;
      }
    }
    take(AsymSums{Sum(sw), Sum(sl), Sum(sl2), Sum(sx), Sum(sxl)});
  }
}

bool SolveAsym(const AsymSums& s, double* d, double* m) {
  const double det = s.w * s.l2 - s.l * s.l;
  if (!(det > 0)) return false;
  *d = (s.w * s.xl - s.x * s.l) / det;
  *m = (s.l2 * s.x - s.l * s.xl) / det;
  return true;
}

namespace {

GroupParams SearchAsym(const QuantFormat& f, const float* w, const float* a, int64_t n,
                       GroupParams best, float best_e) {
  const float top = LevelsOf(f.kind).hi;
  float lo = w[0], hi = w[0];
  for (int64_t j = 1; j < n; ++j) lo = std::min(lo, w[j]), hi = std::max(hi, w[j]);
  if (!(hi > lo)) return best;
  ForEachAsymCandidate(w, a, n, lo, hi, top, [&](const AsymSums& s) {
    double d, m;
    if (!SolveAsym(s, &d, &m) || !(d > 0)) return;
    const GroupParams p{RoundScale(f.type, static_cast<float>(d)),
                        RoundScale(f.type, static_cast<float>(m))};
    const float e = GroupError(f.kind, p, w, a, n);
    if (e < best_e) best_e = e, best = p;
  });
  return best;
}

GroupParams SearchSym(const QuantFormat& f, const float* w, const float* a, int64_t n,
                      GroupParams best, float best_e) {
  // The signed value of largest magnitude may go to -8 (the level the positive side lacks, so
  // the scale's sign follows it) or to +7 (-16 / +15 for 5 bits).
  const GridLevels lv = LevelsOf(f.kind);
  float xm = 0;
  for (int64_t j = 0; j < n; ++j) {
    if (std::fabs(w[j]) > std::fabs(xm)) xm = w[j];
  }
  if (xm == 0) return best;
  for (const float levels : {lv.lo, lv.hi}) {
    for (int k = -kSteps; k <= kSteps; ++k) {
      const float iscale = (levels + (levels < 0 ? -0.1f : 0.1f) * static_cast<float>(k)) / xm;
      float sxl[kLanes] = {},
            sl2[kLanes] = {};  // min sum a (d L - x)^2  =>  d = sum a x L / sum a L^2
      for (int64_t j = 0; j < n; j += kLanes) {
        for (int i = 0; i < kLanes; ++i) {
          const float x = w[j + i], wt = a[j + i];
          const float l = RoundSmall(std::clamp(iscale * x, lv.lo, lv.hi));
          sxl[i] += wt * x * l, sl2[i] += wt * l * l;
        }
      }
      const float L2 = Sum(sl2);
      if (!(L2 > 0)) continue;
      const GroupParams p{RoundScale(f.type, Sum(sxl) / L2), 0.0f};
      if (p.d == 0) continue;
      const float e = GroupError(f.kind, p, w, a, n);
      if (e < best_e) best_e = e, best = p;
    }
  }
  return best;
}

// --- integer zero points (QuantFormat::integer_zero) ---

// GPTQ's v1 checkpoints store z - 1 in the zero's bits, and GPTQModel's v1 -> v2 conversion adds
// 1 to every packed field without carry: z = 0 cannot be stored, z = 16 would overflow.
constexpr int kMinZero = 1, kMaxZero = 15;

bool IsFp16(float v) { return Fp16ToFp32(Fp32ToFp16(v)) == v; }

// The fp16 scale nearest d (> 0) whose product with z is an fp16 too, so that Frugal's fp16
// offset -z * d is exact. Positive fp16 values are ordered as their bit patterns, so the
// neighbours are +-k; a significand that is a multiple of 16 always qualifies (z < 16), so at
// most 8 steps are needed in either direction.
float ScaleForZero(float d, int z) {
  const auto h = static_cast<int32_t>(Fp32ToFp16(d));
  const auto fz = static_cast<float>(z);
  for (int32_t k = 0; k <= 16; ++k) {
    float best = 0;
    for (const int32_t c : {h - k, h + k}) {
      if (c < 1 || c >= 0x7c00) continue;  // zero or negative, or infinity
      const float v = Fp16ToFp32(static_cast<uint16_t>(c));
      if (IsFp16(fz * v) && (best == 0 || std::fabs(v - d) < std::fabs(best - d))) best = v;
    }
    if (best > 0) return best;
  }
  return RoundScale(TensorType::kI4A_G32, d);  // not reached for normal scales
}

// Parameters with the zero point nearest -m / d and the scale moved for it.
GroupParams ZeroPointParams(double d, double m) {
  const int z = static_cast<int>(std::clamp<double>(std::nearbyint(-m / d), kMinZero, kMaxZero));
  const float s = ScaleForZero(static_cast<float>(d), z);
  return {s, -static_cast<float>(z) * s};
}

GroupParams MinMaxIntegerZero(const float* w, int64_t n) {
  float lo = w[0], hi = w[0];
  for (int64_t j = 1; j < n; ++j) lo = std::min(lo, w[j]), hi = std::max(hi, w[j]);
  if (!(hi > lo)) {  // one value c: level z + 1 or z - 1 with d = |c| (or all zero)
    if (lo == 0) return {0, 0};
    return ZeroPointParams(std::fabs(lo), -std::fabs(lo));
  }
  const double d = (static_cast<double>(hi) - lo) / 15.0;
  if (-lo / d < kMinZero - 0.5) return ZeroPointParams(hi / 14.0, -hi / 14.0);  // above zero
  if (-lo / d > kMaxZero + 0.5) return ZeroPointParams(-lo / 15.0, lo);         // below zero
  return ZeroPointParams(d, lo);
}

// SearchAsym's candidates, each one's offset rounded to a zero point, then its scale refitted by
// least squares for that zero point on the levels it gives: min sum a (d (q - z) - x)^2.
GroupParams SearchIntegerZero(const float* w, const float* a, int64_t n, GroupParams best,
                              float best_e) {
  float lo = w[0], hi = w[0];
  for (int64_t j = 1; j < n; ++j) lo = std::min(lo, w[j]), hi = std::max(hi, w[j]);
  if (!(hi > lo)) return best;
  auto consider = [&](const GroupParams& p) {
    const float e = GroupError(IntKind::kInt4Asym, p, w, a, n);
    if (e < best_e) best_e = e, best = p;
  };
  ForEachAsymCandidate(w, a, n, lo, hi, 15.0f, [&](const AsymSums& s) {
    double d, m;
    if (!SolveAsym(s, &d, &m) || !(d > 0)) return;
    const GroupParams p = ZeroPointParams(d, m);
    consider(p);
    const float z = -p.m / p.d, id = 1.0f / p.d;
    float sxv[kLanes] = {}, sv2[kLanes] = {};
    for (int64_t j = 0; j < n; j += kLanes) {
      for (int i = 0; i < kLanes; ++i) {
        const float x = w[j + i], wt = a[j + i];
        const float v = RoundSmall(std::clamp((x - p.m) * id, 0.0f, 15.0f)) - z;
        sxv[i] += wt * x * v, sv2[i] += wt * v * v;
      }
    }
    const double V2 = Sum(sv2), dz = V2 > 0 ? Sum(sxv) / V2 : 0;
    if (dz > 0) consider(ZeroPointParams(dz, -static_cast<double>(z) * dz));
  });
  return best;
}

}  // namespace

std::optional<int> IntegerZeroOf(const GroupParams& p) {
  if (p.d == 0) return p.m == 0 ? std::optional<int>(kMinZero) : std::nullopt;
  const float z = -p.m / p.d;
  if (!(z >= kMinZero && z <= kMaxZero) || z != std::nearbyint(z) || -z * p.d != p.m)
    return std::nullopt;
  return static_cast<int>(z);
}

GroupParams FitGroup(const QuantFormat& f, const float* w, int64_t n, ScaleFit fit,
                     const float* importance) {
  const bool integer_zero = f.integer_zero && f.kind == IntKind::kInt4Asym;
  const GroupParams p = integer_zero           ? MinMaxIntegerZero(w, n)
                        : IsFrugalType(f.type) ? MinMaxParams(f.type, w, n)
                                               : MinMaxGgufBlock(f, w, n);
  if (fit == ScaleFit::kMinMax || f.kind == IntKind::kInt8 || n % kLanes != 0) return p;
  std::vector<float> ones;
  if (importance == nullptr) {
    ones.assign(static_cast<size_t>(n), 1.0f);
    importance = ones.data();
  }
  const float e = GroupError(f.kind, p, w, importance, n);
  if (integer_zero) return SearchIntegerZero(w, importance, n, p, e);
  return LevelsOf(f.kind).asym ? SearchAsym(f, w, importance, n, p, e)
                               : SearchSym(f, w, importance, n, p, e);
}

void FitSpan(const QuantFormat& f, const float* w, ScaleFit fit, const float* importance,
             GroupParams* params, SuperParams* super) {
  if (f.super > 0) {
    FitSuperBlock(f, w, importance, params, super);
  } else {
    params[0] = FitGroup(f, w, f.group, fit, importance);
  }
}

std::vector<float> QuantizedMatrix::Dequantize() const {
  std::vector<float> out(q.size());
  const int64_t groups = format.groups(cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r * cols + c);
      out[i] =
          DequantizeValue(format, params[static_cast<size_t>(r * groups + c / format.group)], q[i]);
    }
  }
  return out;
}

StatusOr<std::vector<uint8_t>> QuantizedMatrix::Pack() const {
  if (IsGgufGrid(format.type)) return PackGgufBlocks(*this);
  FRUGAL_ASSIGN_OR_RETURN(const size_t row_bytes, RowBytes(format.type, cols));
  std::vector<float> scale(params.size()), offset;
  for (size_t i = 0; i < params.size(); ++i) scale[i] = params[i].d;
  if (format.kind == IntKind::kInt4Asym) {
    offset.resize(params.size());
    for (size_t i = 0; i < params.size(); ++i) offset[i] = params[i].m;
  }
  std::vector<uint8_t> out(static_cast<size_t>(rows) * row_bytes);
  FRUGAL_RETURN_IF_ERROR(PackRows(format.type, rows, cols, q.data(), scale.data(),
                                  offset.empty() ? nullptr : offset.data(), out.data()));
  return out;
}

QuantizedMatrix PermuteRows(const QuantizedMatrix& m, const std::vector<int64_t>& from) {
  QuantizedMatrix out = m;
  const size_t cols = static_cast<size_t>(m.cols),
               groups = m.params.size() / static_cast<size_t>(m.rows);
  for (size_t to = 0; to < from.size(); ++to) {
    const auto f = static_cast<size_t>(from[to]);
    std::copy_n(m.q.begin() + static_cast<std::ptrdiff_t>(f * cols), cols,
                out.q.begin() + static_cast<std::ptrdiff_t>(to * cols));
    std::copy_n(m.params.begin() + static_cast<std::ptrdiff_t>(f * groups), groups,
                out.params.begin() + static_cast<std::ptrdiff_t>(to * groups));
    if (!m.supers.empty()) {
      const size_t supers = m.supers.size() / static_cast<size_t>(m.rows);
      std::copy_n(m.supers.begin() + static_cast<std::ptrdiff_t>(f * supers), supers,
                  out.supers.begin() + static_cast<std::ptrdiff_t>(to * supers));
    }
  }
  return out;
}

QuantizedMatrix QuantizeRtn(const QuantFormat& f, const float* w, int64_t rows, int64_t cols,
                            ScaleFit fit, const float* importance, ThreadPool* pool) {
  QuantizedMatrix m;
  m.format = f;
  m.rows = rows;
  m.cols = cols;
  m.q.resize(static_cast<size_t>(rows * cols));
  const int64_t groups = f.groups(cols), span = f.span(), spans = cols / span;
  m.params.resize(static_cast<size_t>(rows * groups));
  if (f.super > 0) m.supers.resize(static_cast<size_t>(rows * spans));
  auto quantize_rows = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t s = 0; s < spans; ++s) {
        const int64_t g0 = s * span / f.group;
        FitSpan(f, w + r * cols + s * span, fit,
                importance != nullptr ? importance + s * span : nullptr,
                &m.params[static_cast<size_t>(r * groups + g0)],
                f.super > 0 ? &m.supers[static_cast<size_t>(r * spans + s)] : nullptr);
      }
      for (int64_t g = 0; g < groups; ++g) {
        QuantizeGroup(f.kind, m.params[static_cast<size_t>(r * groups + g)],
                      w + r * cols + g * f.group, f.group,
                      &m.q[static_cast<size_t>(r * cols + g * f.group)]);
      }
    }
  };
  if (pool != nullptr) {
    pool->ParallelFor(rows, quantize_rows, 8);
  } else {
    quantize_rows(0, rows);
  }
  return m;
}

}  // namespace frugal
