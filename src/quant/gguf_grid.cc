#include "quant/gguf_grid.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/fp16.h"
#include "formats/tensor_types.h"

namespace frugal {
namespace {

constexpr int kSubScaleMax = 63;  // Q4_K / Q5_K sub-block scales and minimums: 6 bits
constexpr int kSteps = 10;        // candidates per direction, +- kSteps / 10 levels

float Fp16Round(float v) { return Fp16ToFp32(Fp32ToFp16(v)); }

// An unrounded scale d >= 0 and minimum mn >= 0 (value d * q - mn, q in [0, top]) for the n
// weights w, by the least weighted error over candidate mappings of the range onto slightly
// fewer or more levels, each refitted by least squares. The range always includes 0, as a
// K-quant minimum cannot be negative (the offset -mn is at most 0).
void FitSubAsym(const float* w, const float* a, int64_t n, float top, float* d_out, float* mn_out) {
  float lo = 0, hi = w[0];
  for (int64_t j = 0; j < n; ++j) lo = std::min(lo, w[j]), hi = std::max(hi, w[j]);
  *d_out = 0;
  *mn_out = -lo;
  if (!(hi > lo)) return;
  const IntKind kind = top == 15 ? IntKind::kInt4Asym : IntKind::kInt5Asym;
  GroupParams best{(hi - lo) / top, lo};
  float best_e = GroupError(kind, best, w, a, n);
  ForEachAsymCandidate(w, a, n, lo, hi, top, [&](const AsymSums& s) {
    double d, m;
    if (!SolveAsym(s, &d, &m)) return;
    if (m > 0) m = 0, d = s.l2 > 0 ? s.xl / s.l2 : 0;  // no positive offset: refit d alone
    if (!(d > 0)) return;
    const GroupParams p{static_cast<float>(d), static_cast<float>(m)};
    const float e = GroupError(kind, p, w, a, n);
    if (e < best_e) best_e = e, best = p;
  });
  *d_out = best.d;
  *mn_out = -best.m;
}

// An unrounded signed scale d (value d * q, q in [-32, 31]) for the n weights w: the weight of
// largest magnitude onto -32 or +31 and their neighbours, each refitted by least squares.
float FitSubSym6(const float* w, const float* a, int64_t n) {
  float xm = 0;
  for (int64_t j = 0; j < n; ++j) {
    if (std::fabs(w[j]) > std::fabs(xm)) xm = w[j];
  }
  if (xm == 0) return 0;
  GroupParams best{xm / -32.0f, 0};
  float best_e = GroupError(IntKind::kInt6Sym, best, w, a, n);
  for (const float levels : {-32.0f, 31.0f}) {
    for (int k = -kSteps; k <= kSteps; ++k) {
      const float iscale = (levels + (levels < 0 ? -0.1f : 0.1f) * static_cast<float>(k)) / xm;
      double sxl = 0, sl2 = 0;
      for (int64_t j = 0; j < n; ++j) {
        const double l = RoundSmall(std::clamp(iscale * w[j], -32.0f, 31.0f));
        sxl += a[j] * w[j] * l, sl2 += a[j] * l * l;
      }
      if (!(sl2 > 0)) continue;
      const GroupParams p{static_cast<float>(sxl / sl2), 0};
      if (p.d == 0) continue;
      const float e = GroupError(IntKind::kInt6Sym, p, w, a, n);
      if (e < best_e) best_e = e, best = p;
    }
  }
  return best.d;
}

int RoundClamp(float v, int lo, int hi) {
  return std::clamp(static_cast<int>(std::lround(v)), lo, hi);
}

// Q4_K / Q5_K: 8 sub-blocks of 32 inputs, value (d * sc) * q - dmin * m.
void FitAsymSuper(const QuantFormat& f, const float* w, const float* a, GroupParams* params,
                  SuperParams* sp) {
  const int subs = static_cast<int>(f.super / f.group);
  const float top = LevelsOf(f.kind).hi;
  float s[8], mn[8], s_max = 0, mn_max = 0;
  for (int j = 0; j < subs; ++j) {
    FitSubAsym(w + j * f.group, a + j * f.group, f.group, top, &s[j], &mn[j]);
    s_max = std::max(s_max, s[j]);
    mn_max = std::max(mn_max, mn[j]);
  }
  const float d = Fp16Round(s_max / kSubScaleMax), dmin = Fp16Round(mn_max / kSubScaleMax);
  sp->d = Fp32ToFp16(d);
  sp->dmin = Fp32ToFp16(dmin);
  for (int j = 0; j < subs; ++j) {
    const int sc0 = d > 0 ? RoundClamp(s[j] / d, 0, kSubScaleMax) : 0;
    const int m0 = dmin > 0 ? RoundClamp(mn[j] / dmin, 0, kSubScaleMax) : 0;
    float best_e = INFINITY;
    for (int sc = std::max(0, sc0 - 1); sc <= std::min(kSubScaleMax, sc0 + 1); ++sc) {
      for (int m = std::max(0, m0 - 1); m <= std::min(kSubScaleMax, m0 + 1); ++m) {
        // As llama.cpp reads them: d1 = d * sc, m1 = dmin * m, value d1 * q - m1.
        const GroupParams p{d * static_cast<float>(sc), -(dmin * static_cast<float>(m))};
        const float e = GroupError(f.kind, p, w + j * f.group, a + j * f.group, f.group);
        if (e < best_e) {
          best_e = e;
          params[j] = p;
          sp->sc[j] = static_cast<int8_t>(sc);
          sp->mn[j] = static_cast<uint8_t>(m);
        }
      }
    }
  }
}

// Q6_K: 16 sub-blocks of 16 inputs, value (d * sc) * q with signed 8-bit sc.
void FitSymSuper(const QuantFormat& f, const float* w, const float* a, GroupParams* params,
                 SuperParams* sp) {
  const int subs = static_cast<int>(f.super / f.group);
  float s[16], s_max = 0;
  for (int j = 0; j < subs; ++j) {
    s[j] = FitSubSym6(w + j * f.group, a + j * f.group, f.group);
    s_max = std::max(s_max, std::fabs(s[j]));
  }
  const float d = Fp16Round(s_max / 127.0f);
  sp->d = Fp32ToFp16(d);
  for (int j = 0; j < subs; ++j) {
    const int sc0 = d > 0 ? RoundClamp(s[j] / d, -128, 127) : 0;
    float best_e = INFINITY;
    for (int sc = std::max(-128, sc0 - 1); sc <= std::min(127, sc0 + 1); ++sc) {
      const GroupParams p{d * static_cast<float>(sc), 0};
      const float e = GroupError(f.kind, p, w + j * f.group, a + j * f.group, f.group);
      if (e < best_e) {
        best_e = e;
        params[j] = p;
        sp->sc[j] = static_cast<int8_t>(sc);
      }
    }
  }
}

// The 6-bit (scale, minimum) pairs into a Q4_K / Q5_K super-block's 12 bytes (the inverse of
// kernels/ref/gguf_blocks.h Q4KScaleMin).
void PackScaleMin(const SuperParams& sp, uint8_t* q) {
  for (int j = 0; j < 4; ++j) {
    const auto sc = static_cast<uint8_t>(sp.sc[j]), sc_hi = static_cast<uint8_t>(sp.sc[j + 4]);
    q[j] = static_cast<uint8_t>(sc | ((sc_hi >> 4) << 6));
    q[j + 4] = static_cast<uint8_t>(sp.mn[j] | ((sp.mn[j + 4] >> 4) << 6));
    q[j + 8] = static_cast<uint8_t>((sc_hi & 0x0f) | ((sp.mn[j + 4] & 0x0f) << 4));
  }
}

// Element e (0..255) of a K-quant super-block into its nibbles (and fifth bit).
void PutQ4K(uint8_t* qs, int e, int q) {
  qs[32 * (e / 64) + e % 32] |= static_cast<uint8_t>((q & 0x0f) << ((e / 32) % 2 == 0 ? 0 : 4));
}

}  // namespace

bool IsGgufGrid(TensorType type) {
  switch (type) {
    case TensorType::kQ4_K:
    case TensorType::kQ5_K:
    case TensorType::kQ6_K:
    case TensorType::kQ5_0:
    case TensorType::kQ5_1:
      return true;
    default:
      return false;
  }
}

StatusOr<QuantFormat> GgufGridFormat(TensorType type, int64_t cols) {
  QuantFormat f;
  f.type = type;
  switch (type) {
    case TensorType::kQ4_K:
      f.kind = IntKind::kInt4Asym, f.group = 32, f.super = kQKK;
      break;
    case TensorType::kQ5_K:
      f.kind = IntKind::kInt5Asym, f.group = 32, f.super = kQKK;
      break;
    case TensorType::kQ6_K:
      f.kind = IntKind::kInt6Sym, f.group = 16, f.super = kQKK;
      break;
    case TensorType::kQ5_0:
      f.kind = IntKind::kInt5Sym, f.group = kQK;
      break;
    case TensorType::kQ5_1:
      f.kind = IntKind::kInt5Asym, f.group = kQK;
      break;
    default:
      return InvalidArgument(TypeName(type) + " is not a GGUF type frugal quantize writes");
  }
  if (cols <= 0 || cols % f.span() != 0) {
    return InvalidArgument(TypeName(type) + " needs a row length that is a multiple of " +
                           std::to_string(f.span()) + ", not " + std::to_string(cols));
  }
  return f;
}

GroupParams MinMaxGgufBlock(const QuantFormat& f, const float* w, int64_t n) {
  if (f.kind == IntKind::kInt5Sym) {
    float xm = 0;
    for (int64_t j = 0; j < n; ++j) {
      if (std::fabs(w[j]) > std::fabs(xm)) xm = w[j];
    }
    return {Fp16Round(xm / -16.0f), 0};
  }
  float lo = w[0], hi = w[0];
  for (int64_t j = 1; j < n; ++j) lo = std::min(lo, w[j]), hi = std::max(hi, w[j]);
  return {Fp16Round((hi - lo) / 31.0f), Fp16Round(lo)};
}

void FitSuperBlock(const QuantFormat& f, const float* w, const float* a, GroupParams* params,
                   SuperParams* super) {
  std::vector<float> ones;
  if (a == nullptr) {
    ones.assign(static_cast<size_t>(f.super), 1.0f);
    a = ones.data();
  }
  *super = SuperParams{};
  if (LevelsOf(f.kind).asym) {
    FitAsymSuper(f, w, a, params, super);
  } else {
    FitSymSuper(f, w, a, params, super);
  }
}

StatusOr<std::vector<uint8_t>> PackGgufBlocks(const QuantizedMatrix& m) {
  const QuantFormat& f = m.format;
  FRUGAL_ASSIGN_OR_RETURN(const size_t row_bytes, RowBytes(f.type, m.cols));
  std::vector<uint8_t> out(static_cast<size_t>(m.rows) * row_bytes, 0);
  const int64_t groups = f.groups(m.cols), block = f.span(), blocks = m.cols / block;
  if (f.super > 0 && m.supers.size() != static_cast<size_t>(m.rows * blocks))
    return Internal("PackGgufBlocks: the super-block scales are missing");
  for (int64_t r = 0; r < m.rows; ++r) {
    uint8_t* dst = out.data() + static_cast<size_t>(r) * row_bytes;
    for (int64_t b = 0; b < blocks; ++b) {
      const int8_t* q = m.q.data() + r * m.cols + b * block;
      const GroupParams& p = m.params[static_cast<size_t>(r * groups + b * block / f.group)];
      const SuperParams* sp =
          f.super > 0 ? &m.supers[static_cast<size_t>(r * blocks + b)] : nullptr;
      switch (f.type) {
        case TensorType::kQ5_0:
        case TensorType::kQ5_1: {
          uint32_t qh = 0;
          uint8_t qs[kQK / 2] = {};
          for (int j = 0; j < kQK; ++j) {
            qs[j % 16] |= static_cast<uint8_t>((q[j] & 0x0f) << (j < 16 ? 0 : 4));
            qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
          }
          if (f.type == TensorType::kQ5_0) {
            auto* o = reinterpret_cast<BlockQ5_0*>(dst) + b;
            o->d = Fp32ToFp16(p.d);
            std::memcpy(o->qh, &qh, sizeof(qh));
            std::memcpy(o->qs, qs, sizeof(qs));
          } else {
            auto* o = reinterpret_cast<BlockQ5_1*>(dst) + b;
            o->d = Fp32ToFp16(p.d);
            o->m = Fp32ToFp16(p.m);
            std::memcpy(o->qh, &qh, sizeof(qh));
            std::memcpy(o->qs, qs, sizeof(qs));
          }
          break;
        }
        case TensorType::kQ4_K: {
          auto* o = reinterpret_cast<BlockQ4_K*>(dst) + b;
          o->d = sp->d;
          o->dmin = sp->dmin;
          PackScaleMin(*sp, o->scales);
          for (int e = 0; e < kQKK; ++e) PutQ4K(o->qs, e, q[e]);
          break;
        }
        case TensorType::kQ5_K: {
          auto* o = reinterpret_cast<BlockQ5_K*>(dst) + b;
          o->d = sp->d;
          o->dmin = sp->dmin;
          PackScaleMin(*sp, o->scales);
          for (int e = 0; e < kQKK; ++e) {
            PutQ4K(o->qs, e, q[e]);
            o->qh[e % 32] |= static_cast<uint8_t>(((q[e] >> 4) & 1) << (e / 32));
          }
          break;
        }
        case TensorType::kQ6_K: {
          auto* o = reinterpret_cast<BlockQ6_K*>(dst) + b;
          o->d = sp->d;
          std::memcpy(o->scales, sp->sc, sizeof(o->scales));
          for (int e = 0; e < kQKK; ++e) {
            const int u = q[e] + 32, half = e / 128, g = (e % 128) / 32, l = e % 32;
            o->ql[64 * half + 32 * (g % 2) + l] |=
                static_cast<uint8_t>((u & 0x0f) << (g < 2 ? 0 : 4));
            o->qh[32 * half + l] |= static_cast<uint8_t>(((u >> 4) & 3) << (2 * g));
          }
          break;
        }
        default:
          return Internal("PackGgufBlocks: " + TypeName(f.type));
      }
    }
  }
  return out;
}

}  // namespace frugal
