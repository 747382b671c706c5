#include "formats/gguf.h"

#include <cstring>
#include <limits>

namespace frugal {
namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" little-endian
constexpr uint64_t kMaxDims = 4;

// A bounds-checked little-endian cursor over the file image.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  size_t pos() const { return pos_; }
  size_t remaining() const { return size_ - pos_; }

  Status Need(uint64_t n, const char* what) const {
    if (n > remaining()) {
      return DataLoss("file truncated: need " + std::to_string(n) + " bytes for " + what +
                      " at offset " + std::to_string(pos_) + ", " + std::to_string(remaining()) +
                      " left");
    }
    return Status::Ok();
  }

  template <typename T>
  Status Read(T* out, const char* what) {
    FRUGAL_RETURN_IF_ERROR(Need(sizeof(T), what));
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }

  Status ReadString(std::string_view* out, const char* what) {
    uint64_t len = 0;
    FRUGAL_RETURN_IF_ERROR(Read(&len, what));
    FRUGAL_RETURN_IF_ERROR(Need(len, what));
    *out = std::string_view(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return Status::Ok();
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

size_t ScalarSize(GgufValueType t) {
  switch (t) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
      return 2;
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kFloat32:
      return 4;
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
    case GgufValueType::kFloat64:
      return 8;
    case GgufValueType::kString:
      return 8;  // at least the length prefix
    case GgufValueType::kArray:
      return 12;  // at least type + count
  }
  return 0;
}

bool ValidType(uint32_t t) { return t <= static_cast<uint32_t>(GgufValueType::kFloat64); }

Status ReadNumber(Cursor& c, GgufValueType t, double* number, int64_t* integer) {
  switch (t) {
#define FRUGAL_GGUF_NUM(enum_name, ctype)                 \
  case GgufValueType::enum_name: {                        \
    ctype v{};                                            \
    FRUGAL_RETURN_IF_ERROR(c.Read(&v, "metadata value")); \
    *number = static_cast<double>(v);                     \
    *integer = static_cast<int64_t>(v);                   \
    return Status::Ok();                                  \
  }
    FRUGAL_GGUF_NUM(kUint8, uint8_t)
    // NOLINTNEXTLINE(bugprone-signed-char-misuse): a GGUF int8 is a number, sign-extended
    FRUGAL_GGUF_NUM(kInt8, int8_t)
    FRUGAL_GGUF_NUM(kUint16, uint16_t)
    FRUGAL_GGUF_NUM(kInt16, int16_t)
    FRUGAL_GGUF_NUM(kUint32, uint32_t)
    FRUGAL_GGUF_NUM(kInt32, int32_t)
    FRUGAL_GGUF_NUM(kInt64, int64_t)
#undef FRUGAL_GGUF_NUM
    case GgufValueType::kUint64: {
      uint64_t v = 0;
      FRUGAL_RETURN_IF_ERROR(c.Read(&v, "metadata value"));
      *number = static_cast<double>(v);
      *integer = v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
                     ? std::numeric_limits<int64_t>::max()
                     : static_cast<int64_t>(v);
      return Status::Ok();
    }
    case GgufValueType::kFloat32: {
      float v = 0;
      FRUGAL_RETURN_IF_ERROR(c.Read(&v, "metadata value"));
      *number = v;
      *integer = 0;
      return Status::Ok();
    }
    case GgufValueType::kFloat64: {
      double v = 0;
      FRUGAL_RETURN_IF_ERROR(c.Read(&v, "metadata value"));
      *number = v;
      *integer = 0;
      return Status::Ok();
    }
    case GgufValueType::kBool: {
      uint8_t v = 0;
      FRUGAL_RETURN_IF_ERROR(c.Read(&v, "metadata value"));
      if (v > 1) return DataLoss("bool metadata value is " + std::to_string(v));
      *number = v;
      *integer = v;
      return Status::Ok();
    }
    default:
      return Internal("not a number type");
  }
}

Status ReadValue(Cursor& c, GgufValueType t, GgufValue* out, int depth) {
  out->type = t;
  if (t == GgufValueType::kString) return c.ReadString(&out->str, "metadata string");
  if (t != GgufValueType::kArray) return ReadNumber(c, t, &out->number, &out->integer);

  if (depth > 2) return DataLoss("metadata arrays nested too deeply");
  uint32_t raw_elem = 0;
  FRUGAL_RETURN_IF_ERROR(c.Read(&raw_elem, "array element type"));
  if (!ValidType(raw_elem)) return DataLoss("bad array element type " + std::to_string(raw_elem));
  out->elem_type = static_cast<GgufValueType>(raw_elem);
  FRUGAL_RETURN_IF_ERROR(c.Read(&out->count, "array length"));
  // Every element takes at least ScalarSize bytes: refuse counts the file cannot hold before
  // reserving memory for them.
  const size_t min_elem = ScalarSize(out->elem_type);
  if (out->count > c.remaining() / min_elem) {
    return DataLoss("array of " + std::to_string(out->count) + " elements does not fit in the " +
                    std::to_string(c.remaining()) + " bytes left");
  }
  if (out->elem_type == GgufValueType::kString) {
    out->strings.resize(out->count);
    for (uint64_t i = 0; i < out->count; ++i) {
      FRUGAL_RETURN_IF_ERROR(c.ReadString(&out->strings[i], "array string"));
    }
  } else if (out->elem_type == GgufValueType::kArray) {
    for (uint64_t i = 0; i < out->count; ++i) {
      GgufValue nested;
      FRUGAL_RETURN_IF_ERROR(ReadValue(c, GgufValueType::kArray, &nested, depth + 1));
    }
  } else {
    out->numbers.resize(out->count);
    for (uint64_t i = 0; i < out->count; ++i) {
      int64_t ignored = 0;
      FRUGAL_RETURN_IF_ERROR(ReadNumber(c, out->elem_type, &out->numbers[i], &ignored));
    }
  }
  return Status::Ok();
}

bool IsIntegerType(GgufValueType t) {
  switch (t) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kUint16:
    case GgufValueType::kInt16:
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
      return true;
    default:
      return false;
  }
}

}  // namespace

const char* GgufValueTypeName(GgufValueType type) {
  static const char* kNames[] = {"u8",   "i8",  "u16", "i16", "u32", "i32", "f32",
                                 "bool", "str", "arr", "u64", "i64", "f64"};
  const auto i = static_cast<uint32_t>(type);
  return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "?";
}

std::string TensorView::ShapeString() const {
  std::string s = "[";
  for (int i = 0; i < n_dims; ++i) {
    if (i) s += ", ";
    s += std::to_string(ne[i]);
  }
  return s + "]";
}

StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  FRUGAL_ASSIGN_OR_RETURN(auto file, MappedFile::Open(path));
  auto result = Parse(std::move(file));
  if (!result.ok()) return result.status().WithContext(path);
  return result;
}

StatusOr<std::unique_ptr<GgufFile>> GgufFile::Parse(std::unique_ptr<MappedFile> file) {
  auto gguf = std::unique_ptr<GgufFile>(new GgufFile());
  gguf->file_ = std::move(file);
  FRUGAL_RETURN_IF_ERROR(gguf->ParseAll());
  return gguf;
}

Status GgufFile::ParseAll() {
  Cursor c(file_->data(), file_->size());
  uint32_t magic = 0;
  if (file_->size() < 4) return DataLoss("not a GGUF file (too short for the magic)");
  FRUGAL_RETURN_IF_ERROR(c.Read(&magic, "magic"));
  if (magic != kGgufMagic) return DataLoss("not a GGUF file (bad magic)");
  FRUGAL_RETURN_IF_ERROR(c.Read(&version_, "version"));
  if (version_ != 2 && version_ != 3) {
    return Unimplemented("GGUF version " + std::to_string(version_) + " (supported: 2, 3)");
  }
  uint64_t n_tensors = 0, n_kv = 0;
  FRUGAL_RETURN_IF_ERROR(c.Read(&n_tensors, "tensor count"));
  FRUGAL_RETURN_IF_ERROR(c.Read(&n_kv, "metadata count"));
  // A key-value pair takes >= 12 bytes, a tensor info >= 24: refuse impossible counts up front.
  if (n_kv > c.remaining() / 12)
    return DataLoss("metadata count " + std::to_string(n_kv) + " exceeds the file");
  if (n_tensors > c.remaining() / 24)
    return DataLoss("tensor count " + std::to_string(n_tensors) + " exceeds the file");

  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string_view key;
    FRUGAL_RETURN_IF_ERROR(c.ReadString(&key, "metadata key"));
    uint32_t raw_type = 0;
    FRUGAL_RETURN_IF_ERROR(c.Read(&raw_type, "metadata type"));
    if (!ValidType(raw_type)) {
      return DataLoss("metadata key '" + std::string(key) + "' has bad type " +
                      std::to_string(raw_type));
    }
    GgufValue value;
    Status st = ReadValue(c, static_cast<GgufValueType>(raw_type), &value, 0);
    if (!st.ok()) return st.WithContext("metadata key '" + std::string(key) + "'");
    kv_.insert_or_assign(std::string(key), std::move(value));
  }

  uint64_t alignment = 32;
  if (const GgufValue* a = Find("general.alignment")) {
    if (!IsIntegerType(a->type) || a->integer <= 0 || (a->integer & (a->integer - 1)) != 0 ||
        a->integer > (1 << 20)) {
      return DataLoss("general.alignment must be a power of two");
    }
    alignment = static_cast<uint64_t>(a->integer);
  }

  struct RawInfo {
    uint64_t offset;
  };
  std::vector<RawInfo> raw(n_tensors);
  tensors_.resize(n_tensors);
  bool uses_frugal_types = false;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorView& t = tensors_[i];
    std::string_view name;
    FRUGAL_RETURN_IF_ERROR(c.ReadString(&name, "tensor name"));
    t.name = std::string(name);
    uint32_t n_dims = 0;
    FRUGAL_RETURN_IF_ERROR(c.Read(&n_dims, "tensor rank"));
    if (n_dims == 0 || n_dims > kMaxDims) {
      return DataLoss("tensor '" + t.name + "' has rank " + std::to_string(n_dims));
    }
    t.n_dims = static_cast<int>(n_dims);
    uint64_t total = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t ne = 0;
      FRUGAL_RETURN_IF_ERROR(c.Read(&ne, "tensor dimension"));
      if (ne == 0 || ne > (uint64_t{1} << 40) || total > (uint64_t{1} << 40) / ne) {
        return DataLoss("tensor '" + t.name + "' has an impossible shape");
      }
      total *= ne;
      t.ne[d] = static_cast<int64_t>(ne);
    }
    uint32_t raw_type = 0;
    FRUGAL_RETURN_IF_ERROR(c.Read(&raw_type, "tensor type"));
    const TypeInfo* info = GetTypeInfo(raw_type);
    if (info == nullptr || IsInMemoryType(static_cast<TensorType>(raw_type))) {
      return Unimplemented("tensor '" + t.name + "' has type id " + std::to_string(raw_type) +
                           ", which this build cannot read");
    }
    t.type = static_cast<TensorType>(raw_type);
    if (t.ne[0] % info->block_size != 0) {
      return DataLoss("tensor '" + t.name + "' row of " + std::to_string(t.ne[0]) +
                      " is not a multiple of the " + info->name + " block");
    }
    const uint64_t rows = total / static_cast<uint64_t>(t.ne[0]);
    if (rows % static_cast<uint64_t>(info->tile_rows) != 0) {
      return DataLoss("tensor '" + t.name + "' has " + std::to_string(rows) + " rows; " +
                      info->name + " stores rows in tiles of " + std::to_string(info->tile_rows));
    }
    FRUGAL_ASSIGN_OR_RETURN(const size_t row_bytes, RowBytes(t.type, t.ne[0]));
    t.nbytes = static_cast<size_t>(rows) * row_bytes;
    if (IsFrugalType(t.type)) uses_frugal_types = true;
    FRUGAL_RETURN_IF_ERROR(c.Read(&raw[i].offset, "tensor offset"));
    if (raw[i].offset % alignment != 0) {
      return DataLoss("tensor '" + t.name + "' offset is not aligned");
    }
    if (!tensor_index_.emplace(t.name, i).second) {
      return DataLoss("duplicate tensor name '" + t.name + "'");
    }
  }

  // Frugal's own tensor types mean what this build's version of docs/formats.md says only if
  // the file was written for that version.
  if (const GgufValue* v = Find(kFrugalFormatVersionKey); v != nullptr || uses_frugal_types) {
    if (v == nullptr) {
      return DataLoss("the file has Frugal tensor types but no " +
                      std::string(kFrugalFormatVersionKey) + " metadata");
    }
    if (!IsIntegerType(v->type) || v->integer != kFrugalFormatVersion) {
      return Unimplemented(
          "the file uses Frugal tensor format version " +
          (IsIntegerType(v->type) ? std::to_string(v->integer) : std::string("(not an integer)")) +
          "; this build reads version " + std::to_string(kFrugalFormatVersion));
    }
  }

  const uint64_t data_start = (c.pos() + alignment - 1) / alignment * alignment;
  if (data_start > file_->size() && n_tensors > 0) {
    return DataLoss("file truncated before the tensor data");
  }
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorView& t = tensors_[i];
    const uint64_t begin = data_start + raw[i].offset;
    if (raw[i].offset > file_->size() || begin > file_->size() ||
        t.nbytes > file_->size() - begin) {
      return DataLoss("tensor '" + t.name + "' data (" + std::to_string(t.nbytes) + " bytes at " +
                      std::to_string(begin) + ") lies past the end of the file (" +
                      std::to_string(file_->size()) + " bytes): file truncated?");
    }
    t.data = file_->data() + begin;
  }
  return Status::Ok();
}

const GgufValue* GgufFile::Find(std::string_view key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

const TensorView* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

StatusOr<std::string> GgufFile::GetString(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return NotFound("metadata key '" + std::string(key) + "' is missing");
  if (v->type != GgufValueType::kString) {
    return InvalidArgument("metadata key '" + std::string(key) + "' is not a string");
  }
  return std::string(v->str);
}

StatusOr<int64_t> GgufFile::GetInt(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return NotFound("metadata key '" + std::string(key) + "' is missing");
  if (!IsIntegerType(v->type)) {
    return InvalidArgument("metadata key '" + std::string(key) + "' is not an integer");
  }
  return v->integer;
}

StatusOr<double> GgufFile::GetFloat(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return NotFound("metadata key '" + std::string(key) + "' is missing");
  if (v->type == GgufValueType::kString || v->type == GgufValueType::kArray ||
      v->type == GgufValueType::kBool) {
    return InvalidArgument("metadata key '" + std::string(key) + "' is not a number");
  }
  return v->number;
}

StatusOr<bool> GgufFile::GetBool(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return NotFound("metadata key '" + std::string(key) + "' is missing");
  if (v->type != GgufValueType::kBool) {
    return InvalidArgument("metadata key '" + std::string(key) + "' is not a bool");
  }
  return v->integer != 0;
}

std::string GgufFile::GetStringOr(std::string_view key, const std::string& fallback) const {
  auto v = GetString(key);
  return v.ok() ? *v : fallback;
}
int64_t GgufFile::GetIntOr(std::string_view key, int64_t fallback) const {
  auto v = GetInt(key);
  return v.ok() ? *v : fallback;
}
double GgufFile::GetFloatOr(std::string_view key, double fallback) const {
  auto v = GetFloat(key);
  return v.ok() ? *v : fallback;
}
bool GgufFile::GetBoolOr(std::string_view key, bool fallback) const {
  auto v = GetBool(key);
  return v.ok() ? *v : fallback;
}

}  // namespace frugal
