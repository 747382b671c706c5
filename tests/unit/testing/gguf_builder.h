// Builds GGUF v3 images in memory for tests and fuzz seeds.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "formats/gguf.h"

namespace frugal::testing {

class GgufBuilder {
 public:
  void KvString(const std::string& key, const std::string& value) {
    Str(key);
    U32(8);
    Str(value);
    ++n_kv_;
  }
  void KvU32(const std::string& key, uint32_t v) {
    Str(key);
    U32(4);
    U32(v);
    ++n_kv_;
  }
  void KvF32(const std::string& key, float v) {
    Str(key);
    U32(6);
    Raw(&v, 4);
    ++n_kv_;
  }
  void KvStringArray(const std::string& key, const std::vector<std::string>& values) {
    Str(key);
    U32(9);
    U32(8);
    U64(values.size());
    for (const auto& s : values) Str(s);
    ++n_kv_;
  }
  // Adds a tensor; `data` must hold exactly its bytes.
  void Tensor(const std::string& name, std::vector<int64_t> ne, TensorType type,
              const std::vector<uint8_t>& data) {
    tensors_.push_back({name, std::move(ne), type, data});
  }

  std::vector<uint8_t> Build() const {
    std::vector<uint8_t> out;
    auto put = [&out](const void* p, size_t n) {
      const auto* b = static_cast<const uint8_t*>(p);
      out.insert(out.end(), b, b + n);
    };
    const uint32_t magic = 0x46554747, version = 3;
    const uint64_t n_tensors = tensors_.size();
    put(&magic, 4);
    put(&version, 4);
    put(&n_tensors, 8);
    put(&n_kv_, 8);
    out.insert(out.end(), kv_.begin(), kv_.end());
    uint64_t offset = 0;
    std::vector<uint64_t> offsets;
    for (const auto& t : tensors_) {
      const uint64_t len = t.name.size();
      put(&len, 8);
      put(t.name.data(), len);
      const auto nd = static_cast<uint32_t>(t.ne.size());
      put(&nd, 4);
      for (int64_t d : t.ne) put(&d, 8);
      const auto type = static_cast<uint32_t>(t.type);
      put(&type, 4);
      put(&offset, 8);
      offsets.push_back(offset);
      offset += (t.data.size() + 31) / 32 * 32;
    }
    while (out.size() % 32) out.push_back(0);
    for (const auto& t : tensors_) {
      out.insert(out.end(), t.data.begin(), t.data.end());
      while (out.size() % 32) out.push_back(0);
    }
    return out;
  }

 private:
  struct T {
    std::string name;
    std::vector<int64_t> ne;
    TensorType type;
    std::vector<uint8_t> data;
  };
  void Raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    kv_.insert(kv_.end(), b, b + n);
  }
  void U32(uint32_t v) { Raw(&v, 4); }
  void U64(uint64_t v) { Raw(&v, 8); }
  void Str(const std::string& s) {
    U64(s.size());
    Raw(s.data(), s.size());
  }
  std::vector<uint8_t> kv_;
  uint64_t n_kv_ = 0;
  std::vector<T> tensors_;
};

inline std::vector<uint8_t> FloatBytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

}  // namespace frugal::testing
