#include "formats/e5_file.h"

#include <cstring>
#include <fstream>

namespace frugal {
namespace {

// Limits well above multilingual-e5-small (384 / 12 / 12 / 1536 / 250037 / 512 / 2) that keep a
// corrupt header from asking for absurd allocations.
constexpr int64_t kMaxDim = 1 << 16;
constexpr int64_t kMaxVocab = 1 << 22;
constexpr int64_t kMaxLayers = 256;

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  size_t pos() const { return pos_; }
  const uint8_t* here() const { return data_ + pos_; }

  Status Need(uint64_t n, const char* what) const {
    if (n > size_ - pos_) {
      return DataLoss("file truncated: need " + std::to_string(n) + " bytes for " + what +
                      " at offset " + std::to_string(pos_) + ", " + std::to_string(size_ - pos_) +
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
  Status Skip(uint64_t n, const char* what) {
    FRUGAL_RETURN_IF_ERROR(Need(n, what));
    pos_ += n;
    return Status::Ok();
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace

bool E5File::Sniff(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[4] = {};
  return f.read(magic, 4) && std::memcmp(magic, kMagic, 4) == 0;
}

StatusOr<std::unique_ptr<E5File>> E5File::Open(const std::string& path) {
  auto f = std::unique_ptr<E5File>(new E5File());
  FRUGAL_ASSIGN_OR_RETURN(f->file_, MappedFile::Open(path));
  Status st = f->Parse();
  if (!st.ok()) return st.WithContext(path);
  return f;
}

StatusOr<std::unique_ptr<E5File>> E5File::FromBuffer(const void* data, size_t size,
                                                     std::string name) {
  auto f = std::unique_ptr<E5File>(new E5File());
  f->file_ = MappedFile::FromBuffer(data, size, std::move(name));
  FRUGAL_RETURN_IF_ERROR(f->Parse());
  return f;
}

const TensorView* E5File::FindTensor(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

Status E5File::Parse() {
  Reader r(file_->data(), file_->size());
  char magic[4];
  FRUGAL_RETURN_IF_ERROR(r.Read(&magic, "the magic"));
  if (std::memcmp(magic, kMagic, 4) != 0) return DataLoss("not an E5S1 file (bad magic)");
  uint32_t version = 0;
  FRUGAL_RETURN_IF_ERROR(r.Read(&version, "the version"));
  if (version != 1)
    return Unimplemented("E5S1 version " + std::to_string(version) +
                         " (this build reads version 1)");
  int32_t h[7];
  FRUGAL_RETURN_IF_ERROR(r.Read(&h, "the header"));
  float eps = 0;
  int32_t block = 0;
  FRUGAL_RETURN_IF_ERROR(r.Read(&eps, "the header"));
  FRUGAL_RETURN_IF_ERROR(r.Read(&block, "the header"));
  hp_ = {h[0], h[1], h[2], h[3], h[4], h[5], h[6], eps};
  if (hp_.n_embd <= 0 || hp_.n_embd > kMaxDim || hp_.n_layer <= 0 || hp_.n_layer > kMaxLayers ||
      hp_.n_head <= 0 || hp_.n_embd % hp_.n_head != 0 || hp_.n_ff <= 0 || hp_.n_ff > kMaxDim ||
      hp_.n_vocab <= 0 || hp_.n_vocab > kMaxVocab || hp_.n_pos <= 2 || hp_.n_pos > kMaxDim ||
      hp_.n_types <= 0 || hp_.n_types > 16 || !(eps > 0 && eps < 1)) {
    return DataLoss("E5S1 header has inconsistent dimensions");
  }
  if (block != kQK || hp_.n_embd % kQK != 0 || hp_.n_ff % kQK != 0) {
    return DataLoss("E5S1 header: block size " + std::to_string(block) +
                    " (expected 32, dividing every dimension)");
  }

  // Tokenizer.
  int32_t n_pieces = 0;
  FRUGAL_RETURN_IF_ERROR(r.Read(&n_pieces, "the piece count"));
  FRUGAL_RETURN_IF_ERROR(r.Read(&vocab_.bos, "the special ids"));
  FRUGAL_RETURN_IF_ERROR(r.Read(&vocab_.eos, "the special ids"));
  FRUGAL_RETURN_IF_ERROR(r.Read(&vocab_.pad, "the special ids"));
  FRUGAL_RETURN_IF_ERROR(r.Read(&vocab_.unk, "the special ids"));
  if (n_pieces <= 0 || n_pieces > hp_.n_vocab)
    return DataLoss("E5S1: piece count outside the vocabulary");
  for (int32_t id : {vocab_.bos, vocab_.eos, vocab_.pad, vocab_.unk}) {
    if (id < 0 || id >= n_pieces) return DataLoss("E5S1: a special token id is outside the pieces");
  }
  uint64_t blob_bytes = 0;
  FRUGAL_RETURN_IF_ERROR(r.Read(&blob_bytes, "the piece bytes"));
  const size_t n = static_cast<size_t>(n_pieces);
  FRUGAL_RETURN_IF_ERROR(r.Need((n + 1) * 4 + n * 4, "the piece offsets and scores"));
  std::vector<uint32_t> offs(n + 1);
  std::memcpy(offs.data(), r.here(), (n + 1) * 4);
  FRUGAL_RETURN_IF_ERROR(r.Skip((n + 1) * 4, "the piece offsets"));
  vocab_.scores.resize(n);
  std::memcpy(vocab_.scores.data(), r.here(), n * 4);
  FRUGAL_RETURN_IF_ERROR(r.Skip(n * 4, "the piece scores"));
  FRUGAL_RETURN_IF_ERROR(r.Need(blob_bytes, "the piece bytes"));
  const auto* blob = reinterpret_cast<const char*>(r.here());
  if (offs[0] != 0 || offs[n] != blob_bytes)
    return DataLoss("E5S1: piece offsets do not span the piece bytes");
  vocab_.pieces.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (offs[i + 1] < offs[i] || offs[i + 1] > blob_bytes)
      return DataLoss("E5S1: piece offsets are not increasing within the piece bytes");
    vocab_.pieces[i].assign(blob + offs[i], offs[i + 1] - offs[i]);
    if (!(vocab_.scores[i] <= 0 && vocab_.scores[i] > -1e6f))
      return DataLoss("E5S1: a piece score is not a log-probability");
  }
  FRUGAL_RETURN_IF_ERROR(r.Skip(blob_bytes, "the piece bytes"));

  int32_t n_norm = 0;
  uint32_t norm_bytes = 0;
  FRUGAL_RETURN_IF_ERROR(r.Read(&n_norm, "the normalisation map"));
  FRUGAL_RETURN_IF_ERROR(r.Read(&norm_bytes, "the normalisation map"));
  FRUGAL_RETURN_IF_ERROR(r.Need(norm_bytes, "the normalisation map"));
  if (n_norm < 0) return DataLoss("E5S1: negative normalisation entry count");
  {
    Reader m(r.here(), norm_bytes);
    for (int32_t i = 0; i < n_norm; ++i) {
      uint32_t cp = 0;
      uint8_t k = 0;
      FRUGAL_RETURN_IF_ERROR(m.Read(&cp, "a normalisation entry"));
      FRUGAL_RETURN_IF_ERROR(m.Read(&k, "a normalisation entry"));
      std::u32string out;
      for (uint8_t j = 0; j < k; ++j) {
        uint32_t o = 0;
        FRUGAL_RETURN_IF_ERROR(m.Read(&o, "a normalisation entry"));
        if (o > 0x10FFFF || (o >= 0xD800 && o <= 0xDFFF))
          return DataLoss("E5S1: a normalisation maps to an invalid code point");
        out.push_back(static_cast<char32_t>(o));
      }
      if (cp > 0x10FFFF) return DataLoss("E5S1: a normalisation entry for an invalid code point");
      vocab_.normalization[cp] = std::move(out);
    }
    if (m.pos() != norm_bytes) return DataLoss("E5S1: the normalisation map has trailing bytes");
  }
  FRUGAL_RETURN_IF_ERROR(r.Skip(norm_bytes, "the normalisation map"));

  // Tensors: shapes follow from the names and the header.
  const int64_t d = hp_.n_embd, ff = hp_.n_ff;
  auto shape_of = [&](const std::string& name, int64_t* cols, int64_t* rows) -> bool {
    *cols = d;
    *rows = 1;
    if (name == "emb.word") {
      *rows = hp_.n_vocab;
    } else if (name == "emb.pos") {
      *rows = hp_.n_pos;
    } else if (name == "emb.type") {
      *rows = hp_.n_types;
    } else if (name == "emb.ln.w" || name == "emb.ln.b") {
    } else if (name.size() > 1 && name[0] == 'l') {
      const size_t dot = name.find('.');
      if (dot == std::string::npos || dot == 1 || dot > 4) return false;  // l0 .. l999
      for (size_t i = 1; i < dot; ++i) {
        if (name[i] < '0' || name[i] > '9') return false;
      }
      if (std::stoll(name.substr(1, dot - 1)) >= hp_.n_layer) return false;
      const std::string s = name.substr(dot + 1);
      if (s == "q.w" || s == "k.w" || s == "v.w" || s == "ao.w") {
        *rows = d;
      } else if (s == "fi.w") {
        *rows = ff;
      } else if (s == "fo.w") {
        *cols = ff;
        *rows = d;
      } else if (s == "fi.b") {
        *cols = ff;
      } else if (!(s == "q.b" || s == "k.b" || s == "v.b" || s == "ao.b" || s == "aln.w" ||
                   s == "aln.b" || s == "oln.w" || s == "oln.b" || s == "fo.b")) {
        return false;
      }
    } else {
      return false;
    }
    return true;
  };
  int32_t n_tensors = 0;
  FRUGAL_RETURN_IF_ERROR(r.Read(&n_tensors, "the tensor count"));
  if (n_tensors <= 0 || n_tensors > 100000) return DataLoss("E5S1: bad tensor count");
  tensors_.reserve(static_cast<size_t>(n_tensors));
  for (int32_t i = 0; i < n_tensors; ++i) {
    uint16_t name_len = 0;
    FRUGAL_RETURN_IF_ERROR(r.Read(&name_len, "a tensor name"));
    FRUGAL_RETURN_IF_ERROR(r.Need(name_len, "a tensor name"));
    std::string name(reinterpret_cast<const char*>(r.here()), name_len);
    FRUGAL_RETURN_IF_ERROR(r.Skip(name_len, "a tensor name"));
    uint8_t dtype = 0;
    uint32_t elements = 0;
    uint64_t offset = 0, bytes = 0;
    FRUGAL_RETURN_IF_ERROR(r.Read(&dtype, "a tensor entry"));
    FRUGAL_RETURN_IF_ERROR(r.Read(&elements, "a tensor entry"));
    FRUGAL_RETURN_IF_ERROR(r.Read(&offset, "a tensor entry"));
    FRUGAL_RETURN_IF_ERROR(r.Read(&bytes, "a tensor entry"));
    int64_t cols = 0, rows = 0;
    if (!shape_of(name, &cols, &rows)) return DataLoss("E5S1: unknown tensor '" + name + "'");
    if (static_cast<int64_t>(elements) != cols * rows) {
      return DataLoss("E5S1: tensor '" + name + "' has " + std::to_string(elements) +
                      " elements, expected " + std::to_string(cols * rows));
    }
    TensorType type;
    if (dtype == 0) {
      type = TensorType::kF32;
    } else if (dtype == 1) {
      type = TensorType::kQ4_0;
    } else {
      return DataLoss("E5S1: tensor '" + name + "' has unknown dtype " + std::to_string(dtype));
    }
    FRUGAL_ASSIGN_OR_RETURN(size_t row_bytes, RowBytes(type, cols));
    const uint64_t want = static_cast<uint64_t>(row_bytes) * static_cast<uint64_t>(rows);
    // The directory's byte count may be what the writer padded to; the data must cover the rows.
    if (bytes < want || offset > file_->size() || want > file_->size() - offset) {
      return DataLoss("E5S1: tensor '" + name + "' lies outside the file");
    }
    if (by_name_.count(name) != 0) return DataLoss("E5S1: tensor '" + name + "' appears twice");
    TensorView t =
        TensorView::Matrix(type, cols, rows, file_->data() + offset, static_cast<size_t>(want));
    t.name = name;
    if (rows == 1) t.n_dims = 1;
    by_name_[name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }
  return Status::Ok();
}

}  // namespace frugal
