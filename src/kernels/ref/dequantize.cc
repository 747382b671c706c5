// Reference (scalar) dequantization for every tensor type the engine reads. These define the
// meaning of each block layout; SIMD kernels are tested against them.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/fp16.h"
#include "kernels/kernels.h"
#include "kernels/ref/gguf_blocks.h"

namespace frugal {
namespace {

void DequantF32(const void* __restrict src, float* __restrict dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

FRUGAL_MULTIVERSION void DequantF16(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = Fp16ToFp32(s[i]);
}

FRUGAL_MULTIVERSION void DequantBF16(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = Bf16ToFp32(s[i]);
}

FRUGAL_MULTIVERSION void DequantQ4_0(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = Fp16ToFp32(b[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = static_cast<float>((b[i].qs[j] & 0x0f) - 8) * d;
      dst[j + kQK / 2] = static_cast<float>((b[i].qs[j] >> 4) - 8) * d;
    }
  }
}

FRUGAL_MULTIVERSION void DequantQ4_1(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_1*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = Fp16ToFp32(b[i].d);
    const float m = Fp16ToFp32(b[i].m);
    for (int j = 0; j < kQK / 2; ++j) {
      dst[j] = static_cast<float>(b[i].qs[j] & 0x0f) * d + m;
      dst[j + kQK / 2] = static_cast<float>(b[i].qs[j] >> 4) * d + m;
    }
  }
}

// Q5: bit j of the little-endian qh word is the high bit of element j; the nibbles are
// ordered as in Q4.
FRUGAL_MULTIVERSION void DequantQ5_0(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = Fp16ToFp32(b[i].d);
    uint32_t qh;
    std::memcpy(&qh, b[i].qh, sizeof(qh));
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = (b[i].qs[j] & 0x0f) | (((qh >> j) & 1) << 4);
      const int q1 = (b[i].qs[j] >> 4) | (((qh >> (j + kQK / 2)) & 1) << 4);
      dst[j] = static_cast<float>(q0 - 16) * d;
      dst[j + kQK / 2] = static_cast<float>(q1 - 16) * d;
    }
  }
}

FRUGAL_MULTIVERSION void DequantQ5_1(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_1*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = Fp16ToFp32(b[i].d);
    const float m = Fp16ToFp32(b[i].m);
    uint32_t qh;
    std::memcpy(&qh, b[i].qh, sizeof(qh));
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = (b[i].qs[j] & 0x0f) | (((qh >> j) & 1) << 4);
      const int q1 = (b[i].qs[j] >> 4) | (((qh >> (j + kQK / 2)) & 1) << 4);
      dst[j] = static_cast<float>(q0) * d + m;
      dst[j + kQK / 2] = static_cast<float>(q1) * d + m;
    }
  }
}

FRUGAL_MULTIVERSION void DequantQ8_0(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = Fp16ToFp32(b[i].d);
    for (int j = 0; j < kQK; ++j) dst[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

FRUGAL_MULTIVERSION void DequantQ4_K(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_K*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = Fp16ToFp32(b[i].d);
    const float dmin = Fp16ToFp32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    int is = 0;
    for (int j = 0; j < kQKK; j += 64) {
      uint8_t sc, m;
      Q4KScaleMin(is, b[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      Q4KScaleMin(is + 1, b[i].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *dst++ = d1 * static_cast<float>(q[l] & 0x0f) - m1;
      for (int l = 0; l < 32; ++l) *dst++ = d2 * static_cast<float>(q[l] >> 4) - m2;
      q += 32;
      is += 2;
    }
  }
}

// Q5_K is Q4_K with a fifth bit: bit s of qh[l] belongs to element l of sub-block s.
FRUGAL_MULTIVERSION void DequantQ5_K(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_K*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = Fp16ToFp32(b[i].d);
    const float dmin = Fp16ToFp32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    const uint8_t* qh = b[i].qh;
    for (int is = 0; is < kQKK / 32; is += 2, q += 32) {
      uint8_t sc, m;
      Q4KScaleMin(is, b[i].scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      Q4KScaleMin(is + 1, b[i].scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) {
        *dst++ = d1 * static_cast<float>((q[l] & 0x0f) | (((qh[l] >> is) & 1) << 4)) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        *dst++ = d2 * static_cast<float>((q[l] >> 4) | (((qh[l] >> (is + 1)) & 1) << 4)) - m2;
      }
    }
  }
}

FRUGAL_MULTIVERSION void DequantQ6_K(const void* __restrict src, float* __restrict dst, int64_t n) {
  const auto* b = static_cast<const BlockQ6_K*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = Fp16ToFp32(b[i].d);
    const uint8_t* ql = b[i].ql;
    const uint8_t* qh = b[i].qh;
    const int8_t* sc = b[i].scales;
    for (int half = 0; half < 2; ++half) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = static_cast<int>((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = static_cast<int>((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = static_cast<int>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = static_cast<int>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        dst[l] = d * sc[is] * static_cast<float>(q1);
        dst[l + 32] = d * sc[is + 2] * static_cast<float>(q2);
        dst[l + 64] = d * sc[is + 4] * static_cast<float>(q3);
        dst[l + 96] = d * sc[is + 6] * static_cast<float>(q4);
      }
      dst += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

// Integer dot products with INT8 activations: the oracle for the SIMD versions.
float DotQ8Q4_0(const void* row, const BlockQ8Act* x, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0*>(row);
  float sum = 0;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int32_t isum = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      isum +=
          ((b[i].qs[j] & 0x0f) - 8) * x[i].qs[j] + ((b[i].qs[j] >> 4) - 8) * x[i].qs[j + kQK / 2];
    }
    sum += Fp16ToFp32(b[i].d) * x[i].d * static_cast<float>(isum);
  }
  return sum;
}

float DotQ8Q4_1(const void* row, const BlockQ8Act* x, int64_t n) {
  const auto* b = static_cast<const BlockQ4_1*>(row);
  float sum = 0;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int32_t isum = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      isum += (b[i].qs[j] & 0x0f) * x[i].qs[j] + (b[i].qs[j] >> 4) * x[i].qs[j + kQK / 2];
    }
    sum += Fp16ToFp32(b[i].d) * x[i].d * static_cast<float>(isum) + Fp16ToFp32(b[i].m) * x[i].s;
  }
  return sum;
}

float DotQ8Q8_0(const void* row, const BlockQ8Act* x, int64_t n) {
  const auto* b = static_cast<const BlockQ8_0*>(row);
  float sum = 0;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int32_t isum = 0;
    for (int j = 0; j < kQK; ++j) isum += b[i].qs[j] * x[i].qs[j];
    sum += Fp16ToFp32(b[i].d) * x[i].d * static_cast<float>(isum);
  }
  return sum;
}

// K-quants against INT8 activations (32-blocks): a Q4_K sub-block of 32 meets one activation
// block; a Q6_K activation block spans two 16-element sub-blocks with their own scales.
float DotQ8Q4_K(const void* row, const BlockQ8Act* x, int64_t n) {
  const auto* b = static_cast<const BlockQ4_K*>(row);
  float sum = 0;
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = Fp16ToFp32(b[i].d), dmin = Fp16ToFp32(b[i].dmin);
    const BlockQ8Act* xb = x + i * (kQKK / kQK);
    for (int j = 0; j < 4; ++j) {
      const uint8_t* q = b[i].qs + 32 * j;
      for (int h = 0; h < 2; ++h) {
        uint8_t sc, m;
        Q4KScaleMin(2 * j + h, b[i].scales, &sc, &m);
        const BlockQ8Act& xa = xb[2 * j + h];
        int32_t isum = 0;
        for (int l = 0; l < 32; ++l) isum += (h == 0 ? (q[l] & 0x0f) : (q[l] >> 4)) * xa.qs[l];
        sum += d * static_cast<float>(sc) * xa.d * static_cast<float>(isum) -
               dmin * static_cast<float>(m) * xa.s;
      }
    }
  }
  return sum;
}

float DotQ8Q6_K(const void* row, const BlockQ8Act* x, int64_t n) {
  const auto* b = static_cast<const BlockQ6_K*>(row);
  float sum = 0;
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const float d = Fp16ToFp32(b[i].d);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = b[i].ql + 64 * half;
      const uint8_t* qh = b[i].qh + 32 * half;
      const int8_t* sc = b[i].scales + 8 * half;
      for (int k = 0; k < 4; ++k) {  // elements 32k .. 32k + 31 of this half
        const BlockQ8Act& xa = x[i * (kQKK / kQK) + half * 4 + k];
        int32_t isum[2] = {0, 0};
        for (int l = 0; l < 32; ++l) {
          const int lo4 = (k < 2) ? (ql[l + 32 * k] & 0x0f) : (ql[l + 32 * (k - 2)] >> 4);
          const int q = (lo4 | (((qh[l] >> (2 * k)) & 3) << 4)) - 32;
          isum[l / 16] += q * xa.qs[l];
        }
        sum += d * xa.d * static_cast<float>(sc[2 * k] * isum[0] + sc[2 * k + 1] * isum[1]);
      }
    }
  }
  return sum;
}

}  // namespace

void RefQuantizeRowQ8Act(const float* x, BlockQ8Act* out, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    float amax = 0;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    int32_t half[2] = {0, 0};
    for (int j = 0; j < kQK; ++j) {
      const auto q = static_cast<int32_t>(std::nearbyint(x[j] * id));
      out[i].qs[j] = static_cast<int8_t>(q);
      half[j / (kQK / 2)] += q;
    }
    out[i].d = d;
    out[i].s = d * static_cast<float>(half[0] + half[1]);
    out[i].half_sums[0] = static_cast<int16_t>(half[0]);
    out[i].half_sums[1] = static_cast<int16_t>(half[1]);
  }
}

const KernelTraits* GetScalarFrugalTraits(TensorType type);    // kernels/ref/frugal_types.cc
const KernelTraits* GetScalarGgufTileTraits(TensorType type);  // kernels/ref/gguf_tiles.cc

const KernelTraits* GetScalarKernelTraits(TensorType type) {
  if (IsFrugalType(type)) return GetScalarFrugalTraits(type);
  if (IsInMemoryType(type)) return GetScalarGgufTileTraits(type);
  static const KernelTraits kF32{DequantF32};
  static const KernelTraits kF16{DequantF16};
  static const KernelTraits kBF16{DequantBF16};
  static const KernelTraits kQ4_0{DequantQ4_0, DotQ8Q4_0};
  static const KernelTraits kQ4_1{DequantQ4_1, DotQ8Q4_1};
  // The Q5 types have no integer dot product: they take float activations in both modes.
  static const KernelTraits kQ5_0{DequantQ5_0};
  static const KernelTraits kQ5_1{DequantQ5_1};
  static const KernelTraits kQ8_0{DequantQ8_0, DotQ8Q8_0};
  static const KernelTraits kQ4_K{DequantQ4_K, DotQ8Q4_K};
  static const KernelTraits kQ5_K{DequantQ5_K};
  static const KernelTraits kQ6_K{DequantQ6_K, DotQ8Q6_K};
  switch (type) {
    case TensorType::kF32:
      return &kF32;
    case TensorType::kF16:
      return &kF16;
    case TensorType::kBF16:
      return &kBF16;
    case TensorType::kQ4_0:
      return &kQ4_0;
    case TensorType::kQ4_1:
      return &kQ4_1;
    case TensorType::kQ5_0:
      return &kQ5_0;
    case TensorType::kQ5_1:
      return &kQ5_1;
    case TensorType::kQ8_0:
      return &kQ8_0;
    case TensorType::kQ4_K:
      return &kQ4_K;
    case TensorType::kQ5_K:
      return &kQ5_K;
    case TensorType::kQ6_K:
      return &kQ6_K;
    default:
      break;
  }
  return nullptr;
}

}  // namespace frugal
