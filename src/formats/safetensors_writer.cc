#include "formats/safetensors_writer.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "common/durable.h"

namespace frugal {

size_t SafetensorsDtypeSize(const std::string& dtype) {
  static const std::map<std::string, size_t> kSizes = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4},
      {"I16", 2}, {"I8", 1},  {"U8", 1},  {"BOOL", 1}, {"U16", 2}, {"U32", 4}};
  const auto it = kSizes.find(dtype);
  return it == kSizes.end() ? 0 : it->second;
}

Status CheckSafetensorsEntry(const SafetensorsEntry& e) {
  const size_t size = SafetensorsDtypeSize(e.dtype);
  if (size == 0) return InvalidArgument("safetensors: unknown dtype '" + e.dtype + "'");
  if (e.name == "__metadata__") return InvalidArgument("safetensors: reserved name __metadata__");
  size_t n = 1;
  for (const int64_t d : e.shape) {
    if (d < 0) return InvalidArgument("safetensors: negative dimension in " + e.name);
    n *= static_cast<size_t>(d);
  }
  if (n * size != e.bytes) {
    return InvalidArgument("safetensors: " + e.name + " has " + std::to_string(e.bytes) +
                           " bytes, its shape and dtype need " + std::to_string(n * size));
  }
  return Status::Ok();
}

std::vector<size_t> SafetensorsLayoutOrder(const std::vector<SafetensorsEntry>& entries,
                                           const std::vector<size_t>& which) {
  std::vector<size_t> all = which;
  if (all.empty()) {
    for (size_t i = 0; i < entries.size(); ++i) all.push_back(i);
  }
  // Tensors of a multiple of 8 bytes keep every offset a multiple of 8: they go first, as
  // given (a quantized Linear's four tensors stay together). The rest by element size, so
  // that each still starts aligned to its own.
  std::vector<size_t> order, rest;
  for (const size_t i : all) (entries[i].bytes % 8 == 0 ? order : rest).push_back(i);
  std::stable_sort(rest.begin(), rest.end(), [&](size_t a, size_t b) {
    return SafetensorsDtypeSize(entries[a].dtype) > SafetensorsDtypeSize(entries[b].dtype);
  });
  order.insert(order.end(), rest.begin(), rest.end());
  return order;
}

namespace {
size_t Padded8(size_t n) { return (n + 7) / 8 * 8; }
}  // namespace

Status WriteSafetensorsStreamed(const std::string& path,
                                const std::vector<SafetensorsEntry>& entries,
                                const std::vector<size_t>& which, const SafetensorsBytes& bytes,
                                const std::map<std::string, std::string>& metadata) {
  const std::vector<size_t> order = SafetensorsLayoutOrder(entries, which);
  std::set<std::string_view> names;
  nlohmann::ordered_json header;
  header["__metadata__"] = metadata;
  size_t offset = 0;
  for (const size_t i : order) {
    const SafetensorsEntry& e = entries[i];
    FRUGAL_RETURN_IF_ERROR(CheckSafetensorsEntry(e));
    if (!names.insert(e.name).second)
      return InvalidArgument("safetensors: tensor " + e.name + " added twice");
    header[e.name] = {
        {"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {offset, offset + e.bytes}}};
    offset += e.bytes;
  }
  std::string text = header.dump();
  text.resize(Padded8(text.size()), ' ');
  // PATH.tmp, synced, renamed, the directory synced (common/durable.h): an output that took
  // hours is on disk before the quantizer's checkpoint is removed.
  return WriteFileAtomically(path, [&](std::FILE* f) -> Status {
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(text.size() >> (8 * i));
    std::fwrite(len, 1, 8, f);
    std::fwrite(text.data(), 1, text.size(), f);
    for (const size_t i : order) {
      if (std::ferror(f) != 0) break;
      StatusOr<std::span<const uint8_t>> data = bytes(i);
      if (!data.ok()) return data.status();
      if (data->size() != entries[i].bytes) {
        return Internal("safetensors: " + entries[i].name + " came with " +
                        std::to_string(data->size()) + " bytes, its header says " +
                        std::to_string(entries[i].bytes));
      }
      std::fwrite(data->data(), 1, data->size(), f);
    }
    return Status::Ok();
  });
}

std::vector<std::vector<size_t>> PlanShards(const std::vector<SafetensorsEntry>& entries,
                                            size_t max_shard_bytes) {
  std::vector<std::vector<size_t>> shards;
  size_t in_current = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const size_t b = entries[i].bytes;
    if (shards.empty() || (!shards.back().empty() && in_current + b > max_shard_bytes)) {
      shards.emplace_back();
      in_current = 0;
    }
    shards.back().push_back(i);
    in_current += b;
    if (in_current > max_shard_bytes) {  // a tensor over the size alone: nothing joins it
      shards.emplace_back();
      in_current = 0;
    }
  }
  if (!shards.empty() && shards.back().empty()) shards.pop_back();
  return shards;
}

std::string ShardFileName(size_t index, size_t count) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", index + 1, count);
  return buf;
}

std::string ShardIndexJson(const std::vector<SafetensorsEntry>& entries,
                           const std::vector<std::vector<size_t>>& shards) {
  nlohmann::json index;  // std::map keys: sorted, as transformers' json.dumps(sort_keys=True)
  size_t total = 0;
  index["weight_map"] = nlohmann::json::object();
  for (size_t s = 0; s < shards.size(); ++s) {
    for (const size_t i : shards[s]) {
      total += entries[i].bytes;
      index["weight_map"][entries[i].name] = ShardFileName(s, shards.size());
    }
  }
  index["metadata"] = {{"total_size", total}};
  return index.dump(2) + "\n";
}

Status SafetensorsWriter::Add(std::string name, std::string dtype, std::vector<int64_t> shape,
                              std::vector<uint8_t> data) {
  SafetensorsEntry e{std::move(name), std::move(dtype), std::move(shape), data.size()};
  FRUGAL_RETURN_IF_ERROR(CheckSafetensorsEntry(e));
  for (const SafetensorsEntry& t : entries_) {
    if (t.name == e.name) return InvalidArgument("safetensors: tensor " + e.name + " added twice");
  }
  entries_.push_back(std::move(e));
  data_.push_back(std::move(data));
  return Status::Ok();
}

Status SafetensorsWriter::Write(const std::string& path) const {
  return WriteSafetensorsStreamed(
      path, entries_, {},
      [this](size_t i) -> StatusOr<std::span<const uint8_t>> {
        return std::span<const uint8_t>(data_[i]);
      },
      metadata_);
}

}  // namespace frugal
