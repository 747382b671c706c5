// safetensors writer: what `frugal quantize --target vllm` writes (the weights of a Hugging Face
// folder, one file or shards). The format: an 8-byte little-endian header length, a JSON header
// naming each tensor's dtype, shape (outermost first, as torch) and byte range, then the data,
// which the ranges must cover without holes (the reference reader refuses gaps). The header is
// padded with spaces to a multiple of 8 bytes. The data is laid out so that every tensor starts
// aligned to its element size without padding: first the tensors whose byte size is a multiple
// of 8, in the order given (each starts at a multiple of 8), then the others by element size,
// largest first (in the order given within a size). "__metadata__" carries {"format": "pt"},
// which transformers requires. A file appears atomically (PATH.tmp, then renamed).
//
// Two ways to write: SafetensorsWriter holds every tensor's bytes (small files, tests);
// WriteSafetensorsStreamed takes only the tensors' descriptions and asks for each one's bytes
// as it writes them, so a model of any size is written holding one tensor at a time. Sharded
// output follows Hugging Face's convention (PlanShards, ShardFileName, ShardIndexJson).
// Thread-compatible: plain functions, and a writer object used by one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "frugal/status.h"

namespace frugal {

// One tensor of a safetensors file, described without its data.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;           // "F32", "F16", "BF16", "I32", ...
  std::vector<int64_t> shape;  // outermost first
  size_t bytes = 0;            // the product of the shape times the dtype's size
};

// Checks an entry: a known dtype, no negative dimension, bytes equal to what the shape and
// dtype need, not the reserved name "__metadata__". InvalidArgument naming the tensor.
Status CheckSafetensorsEntry(const SafetensorsEntry& e);

// The bytes of entry `index` (an index into the entries given to the writer), valid until the
// next call. Called once per tensor, in the file's order.
using SafetensorsBytes = std::function<StatusOr<std::span<const uint8_t>>(size_t index)>;

// Writes one file holding entries[i] for i in `which` (all of them when empty), laid out as the
// header comment says, asking `bytes` for each tensor's data as it is written; a producer
// that returns the wrong number of bytes fails the write. Written to PATH.tmp and renamed; on
// failure nothing is left. Names must be unique.
Status WriteSafetensorsStreamed(const std::string& path,
                                const std::vector<SafetensorsEntry>& entries,
                                const std::vector<size_t>& which, const SafetensorsBytes& bytes,
                                const std::map<std::string, std::string>& metadata = {
                                    {"format", "pt"}});

// The order in which a file lays out the given entries (indices into `entries`, from `which`).
std::vector<size_t> SafetensorsLayoutOrder(const std::vector<SafetensorsEntry>& entries,
                                           const std::vector<size_t>& which);

// Hugging Face's sharding of a checkpoint: tensors in the order given, a new shard begun when
// the next tensor would take the current one over `max_shard_bytes` (of tensor data); a tensor
// larger than that on its own gets a shard of its own. Returns each shard's entry indices.
// max_shard_bytes must be > 0.
std::vector<std::vector<size_t>> PlanShards(const std::vector<SafetensorsEntry>& entries,
                                            size_t max_shard_bytes);

// "model-00002-of-00005.safetensors" for shard index 1 of 5 (transformers' name; 5 digits).
std::string ShardFileName(size_t index, size_t count);

// model.safetensors.index.json: {"metadata": {"total_size": sum of every tensor's bytes},
// "weight_map": {tensor: its shard's file name}}, keys sorted, as transformers writes it.
std::string ShardIndexJson(const std::vector<SafetensorsEntry>& entries,
                           const std::vector<std::vector<size_t>>& shards);

class SafetensorsWriter {
 public:
  // dtype: a safetensors dtype name ("F32", "F16", "BF16", "I32", ...); shape outermost first;
  // data exactly the product of the shape times the dtype's size. Names must be unique.
  Status Add(std::string name, std::string dtype, std::vector<int64_t> shape,
             std::vector<uint8_t> data);
  void SetMetadata(std::string key, std::string value) { metadata_[key] = std::move(value); }
  size_t tensor_count() const { return entries_.size(); }

  Status Write(const std::string& path) const;

 private:
  std::vector<SafetensorsEntry> entries_;
  std::vector<std::vector<uint8_t>> data_;
  std::map<std::string, std::string> metadata_{{"format", "pt"}};
};

// Bytes per element of a safetensors dtype; 0 for a name it does not know.
size_t SafetensorsDtypeSize(const std::string& dtype);

}  // namespace frugal
