#include "formats/safetensors.h"

#include <cstring>
#include <nlohmann/json.hpp>
#include <string_view>

#include "common/json_depth.h"

namespace frugal {

StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  FRUGAL_ASSIGN_OR_RETURN(auto file, MappedFile::Open(path));
  auto result = Parse(std::move(file));
  if (!result.ok()) return result.status().WithContext(path);
  return result;
}

StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Parse(
    std::unique_ptr<MappedFile> file) {
  auto st = std::unique_ptr<SafetensorsFile>(new SafetensorsFile());
  st->file_ = std::move(file);
  FRUGAL_RETURN_IF_ERROR(st->ParseAll());
  return st;
}

Status SafetensorsFile::ParseAll() {
  const size_t size = file_->size();
  if (size < 8) return DataLoss("not a safetensors file (shorter than its header length)");
  uint64_t header_len = 0;
  std::memcpy(&header_len, file_->data(), 8);
  if (header_len > size - 8 || header_len > (uint64_t{100} << 20)) {
    return DataLoss("safetensors header length " + std::to_string(header_len) +
                    " exceeds the file (truncated or not safetensors)");
  }
  const uint64_t data_start = 8 + header_len;
  const uint64_t data_size = size - data_start;
  // A header is a flat object of tensors (and __metadata__ of strings): nesting deeper than a
  // few levels is not a safetensors header, and deep enough would exhaust the stack later.
  if (!JsonDepthWithin(
          std::string_view(reinterpret_cast<const char*>(file_->data()) + 8, header_len),
          /*max_depth=*/8))
    return DataLoss("safetensors header nests too deeply (not a safetensors header)");
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(file_->data() + 8, file_->data() + 8 + header_len);
  } catch (const nlohmann::json::exception& e) {
    return DataLoss(std::string("safetensors header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) return DataLoss("safetensors header is not a JSON object");
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& v = it.value();
    if (name == "__metadata__") {
      if (v.is_object()) {
        for (auto m = v.begin(); m != v.end(); ++m) {
          if (m.value().is_string()) metadata_[m.key()] = m.value().get<std::string>();
        }
      }
      continue;
    }
    if (!v.is_object() || !v.contains("dtype") || !v["dtype"].is_string() || !v.contains("shape") ||
        !v["shape"].is_array() || !v.contains("data_offsets") || !v["data_offsets"].is_array() ||
        v["data_offsets"].size() != 2) {
      return DataLoss("tensor '" + name + "' has a malformed header entry");
    }
    const std::string dtype = v["dtype"].get<std::string>();
    TensorView t;
    t.name = name;
    size_t elem_size;
    if (dtype == "F32") {
      t.type = TensorType::kF32;
      elem_size = 4;
    } else if (dtype == "F16") {
      t.type = TensorType::kF16;
      elem_size = 2;
    } else if (dtype == "BF16") {
      t.type = TensorType::kBF16;
      elem_size = 2;
    } else {
      skipped_.push_back(name + " (" + dtype + ")");
      continue;
    }
    const auto& shape = v["shape"];
    if (shape.size() > 4) return DataLoss("tensor '" + name + "' has rank > 4");
    uint64_t total = 1;
    t.n_dims = shape.empty() ? 1 : static_cast<int>(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) {
      if (!shape[d].is_number_unsigned()) return DataLoss("tensor '" + name + "' has a bad shape");
      const uint64_t ne = shape[d].get<uint64_t>();
      if (ne == 0 || ne > (uint64_t{1} << 40) || total > (uint64_t{1} << 40) / ne) {
        return DataLoss("tensor '" + name + "' has an impossible shape");
      }
      total *= ne;
      t.ne[shape.size() - 1 - d] = static_cast<int64_t>(ne);  // reverse into GGUF order
    }
    const auto& offs = v["data_offsets"];
    if (!offs[0].is_number_unsigned() || !offs[1].is_number_unsigned()) {
      return DataLoss("tensor '" + name + "' has bad data offsets");
    }
    const uint64_t begin = offs[0].get<uint64_t>(), end = offs[1].get<uint64_t>();
    if (begin > end || end > data_size) {
      return DataLoss("tensor '" + name + "' data lies past the end of the file (truncated?)");
    }
    if (end - begin != total * elem_size) {
      return DataLoss("tensor '" + name + "' byte size does not match its shape and dtype");
    }
    if ((data_start + begin) % elem_size != 0) {
      return DataLoss("tensor '" + name + "' data is misaligned");
    }
    t.nbytes = end - begin;
    t.data = file_->data() + data_start + begin;
    index_.emplace(name, tensors_.size());
    tensors_.push_back(std::move(t));
  }
  return Status::Ok();
}

const TensorView* SafetensorsFile::FindTensor(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace frugal
