// Nearest-neighbour search by cosine over unit vectors: exact (a scan, for small partitions)
// or HNSW (hnswlib, for large ones). Labels are the cache's entry ids.
//
// Thread safety: every method may be called from any thread; searches run concurrently with
// each other and with inserts and removals.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "frugal/status.h"

namespace frugal::cache {

struct Neighbor {
  uint64_t label = 0;
  float similarity = 0;  // cosine (inner product of unit vectors)
};

struct HnswParams {
  size_t m = 16;                 // graph degree
  size_t ef_construction = 200;  // build-time beam
  size_t ef_search = 128;        // query-time beam (>= k)
};

class VectorIndex {
 public:
  virtual ~VectorIndex() = default;
  // Adds or replaces the vector of `label` (unit length, dim() floats).
  virtual Status Add(uint64_t label, std::span<const float> v) = 0;
  virtual void Remove(uint64_t label) = 0;
  // Up to k nearest, most similar first.
  virtual std::vector<Neighbor> Search(std::span<const float> q, size_t k) const = 0;
  // Copies the stored vector of `label`; false when absent (or the index cannot give it back).
  virtual bool Get(uint64_t label, std::vector<float>* out) const = 0;
  virtual size_t size() const = 0;  // live vectors
  virtual int dim() const = 0;
  virtual const char* kind() const = 0;
  // HNSW's query-time beam; waits for running searches. Exact search ignores it.
  virtual void SetEfSearch(size_t /*ef*/) {}
};

std::unique_ptr<VectorIndex> NewExactIndex(int dim);
std::unique_ptr<VectorIndex> NewHnswIndex(int dim, const HnswParams& params,
                                          size_t initial_capacity = 1024);

// Cosine of two unit vectors (their inner product), as both indexes compute it.
float Similarity(std::span<const float> a, std::span<const float> b);
// Scales v to unit length (a zero vector stays zero).
void Normalize(std::span<float> v);

}  // namespace frugal::cache
