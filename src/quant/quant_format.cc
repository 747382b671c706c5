#include "quant/quant_format.h"

#include <algorithm>
#include <cmath>

#include "kernels/quantize.h"

namespace frugal {

StatusOr<QuantFormat> QuantFormat::Of(TensorType type, int64_t cols) {
  const TypeInfo* info = GetTypeInfo(type);
  if (!IsFrugalType(type) || info == nullptr) return InvalidArgument(TypeName(type) + " is not a Frugal format");
  QuantFormat f;
  f.type = type;
  f.group = info->group_size > 0 ? info->group_size : cols;
  if (cols <= 0 || cols % f.group != 0) {
    return InvalidArgument(TypeName(type) + " needs a row length that is a multiple of " +
                           std::to_string(f.group) + ", not " + std::to_string(cols));
  }
  if (info->bits == 8) {
    f.kind = Kind::kInt8;
  } else {
    const bool asym = type == TensorType::kI4A_G32 || type == TensorType::kI4A_G64 || type == TensorType::kI4A_G128;
    f.kind = asym ? Kind::kInt4Asym : Kind::kInt4Sym;
  }
  return f;
}

GroupParams FitGroup(const QuantFormat& f, const float* w, int64_t n, int64_t stride) {
  GroupParams p;
  if (f.kind == QuantFormat::Kind::kInt4Asym) {
    float lo = w[0], hi = w[0];
    for (int64_t j = 1; j < n; ++j) lo = std::min(lo, w[j * stride]), hi = std::max(hi, w[j * stride]);
    p.d = RoundScale(f.type, (hi - lo) / 15.0f);
    p.m = RoundScale(f.type, lo);
    return p;
  }
  float amax = 0;
  for (int64_t j = 0; j < n; ++j) amax = std::max(amax, std::fabs(w[j * stride]));
  p.d = RoundScale(f.type, amax / (f.kind == QuantFormat::Kind::kInt8 ? 127.0f : 7.0f));
  return p;
}

std::vector<float> QuantizedMatrix::Dequantize() const {
  std::vector<float> out(q.size());
  const int64_t groups = format.groups(cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r * cols + c);
      out[i] = DequantizeValue(format, params[static_cast<size_t>(r * groups + c / format.group)], q[i]);
    }
  }
  return out;
}

StatusOr<std::vector<uint8_t>> QuantizedMatrix::Pack() const {
  FRUGAL_ASSIGN_OR_RETURN(const size_t row_bytes, RowBytes(format.type, cols));
  std::vector<float> scale(params.size()), offset;
  for (size_t i = 0; i < params.size(); ++i) scale[i] = params[i].d;
  if (format.kind == QuantFormat::Kind::kInt4Asym) {
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
  const size_t cols = static_cast<size_t>(m.cols), groups = m.params.size() / static_cast<size_t>(m.rows);
  for (size_t to = 0; to < from.size(); ++to) {
    const auto f = static_cast<size_t>(from[to]);
    std::copy_n(m.q.begin() + static_cast<std::ptrdiff_t>(f * cols), cols, out.q.begin() + static_cast<std::ptrdiff_t>(to * cols));
    std::copy_n(m.params.begin() + static_cast<std::ptrdiff_t>(f * groups), groups,
                out.params.begin() + static_cast<std::ptrdiff_t>(to * groups));
  }
  return out;
}

QuantizedMatrix QuantizeRtn(const QuantFormat& f, const float* w, int64_t rows, int64_t cols) {
  QuantizedMatrix m;
  m.format = f;
  m.rows = rows;
  m.cols = cols;
  m.q.resize(static_cast<size_t>(rows * cols));
  const int64_t groups = f.groups(cols);
  m.params.resize(static_cast<size_t>(rows * groups));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      const float* src = w + r * cols + g * f.group;
      const GroupParams p = FitGroup(f, src, f.group);
      m.params[static_cast<size_t>(r * groups + g)] = p;
      int8_t* dst = &m.q[static_cast<size_t>(r * cols + g * f.group)];
      for (int64_t j = 0; j < f.group; ++j) dst[j] = QuantizeValue(f, p, src[j]);
    }
  }
  return m;
}

}  // namespace frugal
