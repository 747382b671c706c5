#include "formats/gguf_writer.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "common/durable.h"

namespace frugal {
namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" little-endian
constexpr uint32_t kGgufVersion = 3;

class Out {
 public:
  template <typename T>
  void Put(T v) {
    const size_t at = buf.size();
    buf.resize(at + sizeof(T));
    std::memcpy(buf.data() + at, &v, sizeof(T));
  }
  void PutString(std::string_view s) {
    Put<uint64_t>(s.size());
    buf.insert(buf.end(), s.begin(), s.end());
  }
  std::vector<uint8_t> buf;
};

void PutNumber(Out& o, GgufValueType t, double number, int64_t integer) {
  switch (t) {
    case GgufValueType::kUint8:
      o.Put<uint8_t>(static_cast<uint8_t>(integer));
      break;
    case GgufValueType::kInt8:
      o.Put<int8_t>(static_cast<int8_t>(integer));
      break;
    case GgufValueType::kBool:
      o.Put<uint8_t>(integer != 0 ? 1 : 0);
      break;
    case GgufValueType::kUint16:
      o.Put<uint16_t>(static_cast<uint16_t>(integer));
      break;
    case GgufValueType::kInt16:
      o.Put<int16_t>(static_cast<int16_t>(integer));
      break;
    case GgufValueType::kUint32:
      o.Put<uint32_t>(static_cast<uint32_t>(integer));
      break;
    case GgufValueType::kInt32:
      o.Put<int32_t>(static_cast<int32_t>(integer));
      break;
    case GgufValueType::kUint64:
      o.Put<uint64_t>(static_cast<uint64_t>(integer));
      break;
    case GgufValueType::kInt64:
      o.Put<int64_t>(integer);
      break;
    case GgufValueType::kFloat32:
      o.Put<float>(static_cast<float>(number));
      break;
    case GgufValueType::kFloat64:
      o.Put<double>(number);
      break;
    case GgufValueType::kString:
    case GgufValueType::kArray:
      break;
  }
}

bool IsFloat(GgufValueType t) {
  return t == GgufValueType::kFloat32 || t == GgufValueType::kFloat64;
}

}  // namespace

GgufWriter::Value& GgufWriter::Slot(std::string_view key) {
  for (auto& [k, v] : kv_) {
    if (k == key) {
      v = Value{};
      return v;
    }
  }
  return kv_.emplace_back(std::string(key), Value{}).second;
}

void GgufWriter::SetString(std::string_view key, std::string value) {
  Value& v = Slot(key);
  v.type = GgufValueType::kString;
  v.str = std::move(value);
}

#define FRUGAL_GGUF_SETTER(fn, ctype, enum_name)           \
  void GgufWriter::fn(std::string_view key, ctype value) { \
    Value& v = Slot(key);                                  \
    v.type = GgufValueType::enum_name;                     \
    v.numbers = {static_cast<double>(value)};              \
    v.integers = {static_cast<int64_t>(value)};            \
  }
FRUGAL_GGUF_SETTER(SetUint32, uint32_t, kUint32)
FRUGAL_GGUF_SETTER(SetInt32, int32_t, kInt32)
FRUGAL_GGUF_SETTER(SetUint64, uint64_t, kUint64)
FRUGAL_GGUF_SETTER(SetFloat32, float, kFloat32)
FRUGAL_GGUF_SETTER(SetBool, bool, kBool)
#undef FRUGAL_GGUF_SETTER

void GgufWriter::SetStringArray(std::string_view key, std::vector<std::string> values) {
  Value& v = Slot(key);
  v.type = GgufValueType::kArray;
  v.elem_type = GgufValueType::kString;
  v.strings = std::move(values);
}

void GgufWriter::SetInt32Array(std::string_view key, const std::vector<int32_t>& values) {
  Value& v = Slot(key);
  v.type = GgufValueType::kArray;
  v.elem_type = GgufValueType::kInt32;
  v.numbers.assign(values.begin(), values.end());
  v.integers.assign(values.begin(), values.end());
}

Status GgufWriter::CopyValue(std::string_view key, const GgufValue& src) {
  if (src.type == GgufValueType::kArray && src.elem_type == GgufValueType::kArray) {
    return InvalidArgument("metadata '" + std::string(key) +
                           "' is a nested array, which cannot be copied");
  }
  Value& v = Slot(key);
  v.type = src.type;
  v.elem_type = src.elem_type;
  if (src.type == GgufValueType::kString) {
    v.str = std::string(src.str);
  } else if (src.type == GgufValueType::kArray) {
    if (src.elem_type == GgufValueType::kString) {
      v.strings.assign(src.strings.begin(), src.strings.end());
    } else {
      v.numbers = src.numbers;
      v.integers.reserve(src.numbers.size());
      for (double d : src.numbers) v.integers.push_back(static_cast<int64_t>(d));
    }
  } else {
    v.numbers = {src.number};
    v.integers = {src.integer};
  }
  return Status::Ok();
}

Status GgufWriter::CopyMetadata(const GgufFile& src, const std::vector<std::string>& except) {
  for (const auto& [key, value] : src.metadata()) {
    bool skip = false;
    for (const std::string& e : except) skip = skip || e == key;
    if (!skip) FRUGAL_RETURN_IF_ERROR(CopyValue(key, value));
  }
  return Status::Ok();
}

void GgufWriter::Remove(std::string_view key) {
  std::erase_if(kv_, [&](const auto& kv) { return kv.first == key; });
}

bool GgufWriter::Has(std::string_view key) const {
  for (const auto& kv : kv_) {
    if (kv.first == key) return true;
  }
  return false;
}

StatusOr<size_t> GgufWriter::CheckTensor(const std::string& name, TensorType type,
                                         const std::vector<int64_t>& ne) const {
  if (ne.empty() || ne.size() > 4)
    return InvalidArgument("tensor '" + name + "' needs 1 to 4 dimensions");
  int64_t rows = 1;
  for (size_t i = 1; i < ne.size(); ++i) rows *= ne[i];
  FRUGAL_ASSIGN_OR_RETURN(const size_t row_bytes, RowBytes(type, ne[0]));
  for (const Tensor& t : tensors_) {
    if (t.name == name) return InvalidArgument("tensor '" + name + "' added twice");
  }
  return row_bytes * static_cast<size_t>(rows);
}

Status GgufWriter::AddTensor(std::string name, TensorType type, std::vector<int64_t> ne,
                             std::vector<uint8_t> data) {
  FRUGAL_ASSIGN_OR_RETURN(const size_t nbytes, CheckTensor(name, type, ne));
  if (data.size() != nbytes) {
    return InvalidArgument("tensor '" + name + "' has " + std::to_string(data.size()) +
                           " bytes, its type and shape need " + std::to_string(nbytes));
  }
  tensors_.push_back({std::move(name), type, std::move(ne), nbytes, std::move(data)});
  return Status::Ok();
}

Status GgufWriter::AddTensorInfo(std::string name, TensorType type, std::vector<int64_t> ne) {
  FRUGAL_ASSIGN_OR_RETURN(const size_t nbytes, CheckTensor(name, type, ne));
  tensors_.push_back({std::move(name), type, std::move(ne), nbytes, {}});
  return Status::Ok();
}

size_t GgufWriter::data_bytes() const {
  size_t n = 0;
  for (const Tensor& t : tensors_) n += t.nbytes;
  return n;
}

Status GgufWriter::Write(const std::string& path) const {
  return WriteStreamed(path, [this](size_t i) -> StatusOr<std::span<const uint8_t>> {
    if (tensors_[i].data.size() != tensors_[i].nbytes)
      return InvalidArgument("tensor '" + tensors_[i].name + "' was added without its bytes");
    return std::span<const uint8_t>(tensors_[i].data);
  });
}

Status GgufWriter::WriteStreamed(const std::string& path, const TensorBytes& bytes) const {
  uint64_t alignment = 32;
  for (const auto& [k, v] : kv_) {
    if (k == "general.alignment" && !v.integers.empty() && v.integers[0] > 0) {
      alignment = static_cast<uint64_t>(v.integers[0]);
    }
  }
  Out h;
  h.Put<uint32_t>(kGgufMagic);
  h.Put<uint32_t>(kGgufVersion);
  h.Put<uint64_t>(tensors_.size());
  h.Put<uint64_t>(kv_.size());
  for (const auto& [key, v] : kv_) {
    h.PutString(key);
    h.Put<uint32_t>(static_cast<uint32_t>(v.type));
    if (v.type == GgufValueType::kString) {
      h.PutString(v.str);
    } else if (v.type == GgufValueType::kArray) {
      h.Put<uint32_t>(static_cast<uint32_t>(v.elem_type));
      if (v.elem_type == GgufValueType::kString) {
        h.Put<uint64_t>(v.strings.size());
        for (const std::string& s : v.strings) h.PutString(s);
      } else {
        h.Put<uint64_t>(v.numbers.size());
        for (size_t i = 0; i < v.numbers.size(); ++i) {
          PutNumber(h, v.elem_type, v.numbers[i], IsFloat(v.elem_type) ? 0 : v.integers[i]);
        }
      }
    } else {
      PutNumber(h, v.type, v.numbers[0], v.integers[0]);
    }
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    h.PutString(t.name);
    h.Put<uint32_t>(static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) h.Put<uint64_t>(static_cast<uint64_t>(d));
    h.Put<uint32_t>(static_cast<uint32_t>(t.type));
    h.Put<uint64_t>(offset);
    offset += (t.nbytes + alignment - 1) / alignment * alignment;
  }
  h.buf.resize((h.buf.size() + alignment - 1) / alignment * alignment, 0);

  // PATH.tmp, synced, renamed, the directory synced (common/durable.h): an output that took
  // hours is on disk before the quantizer's checkpoint is removed.
  return WriteFileAtomically(path, [&](std::FILE* f) -> Status {
    static const uint8_t kZeros[256] = {};
    std::fwrite(h.buf.data(), 1, h.buf.size(), f);
    for (size_t i = 0; i < tensors_.size() && std::ferror(f) == 0; ++i) {
      const Tensor& t = tensors_[i];
      StatusOr<std::span<const uint8_t>> data = bytes(i);
      if (!data.ok()) return data.status();
      if (data->size() != t.nbytes) {
        return Internal("tensor '" + t.name + "' came with " + std::to_string(data->size()) +
                        " bytes, its type and shape need " + std::to_string(t.nbytes));
      }
      std::fwrite(data->data(), 1, data->size(), f);
      for (size_t pad = (alignment - t.nbytes % alignment) % alignment; pad > 0;) {
        const size_t n = std::min(pad, sizeof kZeros);
        std::fwrite(kZeros, 1, n, f);
        pad -= n;
      }
    }
    return Status::Ok();
  });
}

}  // namespace frugal
