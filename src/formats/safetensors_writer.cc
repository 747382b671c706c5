#include "formats/safetensors_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

namespace frugal {

size_t SafetensorsDtypeSize(const std::string& dtype) {
  static const std::map<std::string, size_t> kSizes = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4},
      {"I16", 2}, {"I8", 1},  {"U8", 1},  {"BOOL", 1}, {"U16", 2}, {"U32", 4}};
  const auto it = kSizes.find(dtype);
  return it == kSizes.end() ? 0 : it->second;
}

Status SafetensorsWriter::Add(std::string name, std::string dtype, std::vector<int64_t> shape,
                              std::vector<uint8_t> data) {
  const size_t size = SafetensorsDtypeSize(dtype);
  if (size == 0) return InvalidArgument("safetensors: unknown dtype '" + dtype + "'");
  size_t n = 1;
  for (const int64_t d : shape) {
    if (d < 0) return InvalidArgument("safetensors: negative dimension in " + name);
    n *= static_cast<size_t>(d);
  }
  if (n * size != data.size()) {
    return InvalidArgument("safetensors: " + name + " has " + std::to_string(data.size()) +
                           " bytes, its shape and dtype need " + std::to_string(n * size));
  }
  for (const Tensor& t : tensors_) {
    if (t.name == name) return InvalidArgument("safetensors: tensor " + name + " added twice");
  }
  if (name == "__metadata__") return InvalidArgument("safetensors: reserved name __metadata__");
  tensors_.push_back({std::move(name), std::move(dtype), std::move(shape), std::move(data)});
  return Status::Ok();
}

namespace {
size_t Padded8(size_t n) { return (n + 7) / 8 * 8; }
}  // namespace

Status SafetensorsWriter::Write(const std::string& path) const {
  std::vector<const Tensor*> order;
  for (const Tensor& t : tensors_) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [](const Tensor* a, const Tensor* b) {
    return SafetensorsDtypeSize(a->dtype) > SafetensorsDtypeSize(b->dtype);
  });
  nlohmann::ordered_json header;
  header["__metadata__"] = metadata_;
  size_t offset = 0;
  for (const Tensor* t : order) {
    header[t->name] = {{"dtype", t->dtype},
                       {"shape", t->shape},
                       {"data_offsets", {offset, offset + t->data.size()}}};
    offset += t->data.size();
  }
  std::string text = header.dump();
  text.resize(Padded8(text.size()), ' ');
  const std::string tmp = path + ".tmp";
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(tmp.c_str(), "wb"), &std::fclose);
  if (!f) return IoError("cannot write " + tmp + ": " + std::strerror(errno));
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(text.size() >> (8 * i));
  bool ok = std::fwrite(len, 1, 8, f.get()) == 8 &&
            std::fwrite(text.data(), 1, text.size(), f.get()) == text.size();
  for (const Tensor* t : order) {
    if (!ok) break;
    ok = std::fwrite(t->data.data(), 1, t->data.size(), f.get()) == t->data.size();
  }
  ok = std::fflush(f.get()) == 0 && ok;
  if (std::fclose(f.release()) != 0) ok = false;
  if (!ok) {
    std::remove(tmp.c_str());
    return IoError("cannot write " + tmp + ": " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return IoError("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace frugal
