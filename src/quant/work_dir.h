// The work directory of one `frugal quantize` run (issue 48): where each finished layer's quantized
// tensors are spilled, so that the output costs no memory until it is written, and a checkpoint,
// so that an interrupted run continues from the last finished layer.
//
// What it holds (docs/quantization.md, "Resume"):
//   manifest.json      the run's identity (every option that changes the output's bytes), how many
//                      layers are finished and which states file goes with them; rewritten
//                      atomically (write, fsync, rename) after each layer;
//   layer-NNNNN.bin    the layer's tensors as written (and their INT8 / g32 alternatives);
//   layer-NNNNN.json   where each of them is in the .bin, its report, the layer's norms;
//   states-NNNNN.bin   the calibration hidden states after layer NNNNN - 1 (only the latest);
//   tail.bin           the tensors outside the layers, made at the end (not part of a checkpoint).
// A layer counts as finished only once the manifest says so, after its files are on disk: a run
// killed at any moment resumes from the last finished layer. Only files of these names are ever
// written or removed, so a --work-dir that holds anything else is refused.
// Thread-compatible: one quantization run uses it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "frugal/status.h"
#include "quant/quantizer.h"

namespace frugal::quant_internal {

// A run's identity: option -> value, for every option that changes the output's bytes.
using RunManifest = std::map<std::string, std::string>;

class WorkDir {
 public:
  // Opens `dir` (made when absent) for a run of n_layer layers. A directory without a checkpoint
  // starts empty. One with a checkpoint continues with `resume` when its manifest equals `run`
  // (InvalidArgument naming the first option that differs otherwise), and is refused without it
  // (InvalidArgument: an interrupted run is there). A directory holding files that are not a work
  // directory's is refused.
  static StatusOr<std::unique_ptr<WorkDir>> Open(const std::string& dir, const RunManifest& run,
                                                 int64_t n_layer, bool resume);

  const std::string& path() const { return dir_; }
  // Layers finished by an earlier run (0 when starting afresh).
  int64_t layers_done() const { return layers_done_; }

  // Begins layer li's files afresh (an interrupted attempt may have left part of them).
  Status BeginLayer(int64_t li);
  // Appends bytes to the work file `file` ("layer-00003.bin", "tail.bin"); where they went.
  StatusOr<QuantizedModel::Blob> Append(const std::string& file, std::span<const uint8_t> bytes);
  // Layer li is finished: its metadata (layer_json) and the calibration states after it are made
  // durable, then the manifest says li + 1 layers are done, then the previous states go.
  Status CommitLayer(int64_t li, const std::string& layer_json,
                     const std::vector<std::vector<float>>& states);
  // A finished layer's metadata, as CommitLayer got it.
  StatusOr<std::string> LayerJson(int64_t li) const;
  // The states saved with the last finished layer, into `states` (sized as they were saved).
  Status LoadStates(std::vector<std::vector<float>>& states) const;
  // Begins the tail afresh.
  Status BeginTail();

  static std::string LayerFile(int64_t li, const char* ext);

 private:
  WorkDir() = default;
  Status WriteManifest(int64_t layers_done, const std::string& states) const;

  std::string dir_;
  RunManifest run_;
  int64_t n_layer_ = 0;
  int64_t layers_done_ = 0;
  std::string states_;  // the states file of the last finished layer ("" without calibration)
};

}  // namespace frugal::quant_internal
