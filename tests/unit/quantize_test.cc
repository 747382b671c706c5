// The quantizer's parts (src/quant, src/formats/gguf_writer, src/common/sha256): the GGUF writer
// read back by the reader, recipes and type choice, RTN equal to the format's own RTN oracle,
// GPTQ and AWQ lowering the output error that RTN leaves on correlated / uneven inputs, the
// scale search lowering the error of every method.
#include "kernels/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include "common/sha256.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "kernels/kernels.h"
#include "quant/awq.h"
#include "quant/gptq.h"
#include "quant/recipe.h"

namespace frugal {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("frugal_qt_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  // Fed in pieces that straddle block boundaries: the same digest.
  const std::string msg(1000, 'x');
  Sha256 s;
  for (size_t i = 0; i < msg.size(); i += 37) s.Update(std::string_view(msg).substr(i, 37));
  EXPECT_EQ(s.HexDigest(), Sha256Hex(msg));
}

TEST(GgufWriter, RoundTripsMetadataAndTensors) {
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  w.SetUint32("llama.block_count", 3);
  w.SetInt32("some.int", -7);
  w.SetUint64("some.u64", uint64_t{1} << 40);
  w.SetFloat32("some.float", 0.25f);
  w.SetBool("some.bool", true);
  w.SetStringArray("tokenizer.ggml.tokens", {"a", "bc", ""});
  w.SetUint32("llama.block_count", 4);  // a second set replaces, keeping the place
  std::vector<float> f32 = {1, 2, 3, 4, 5, 6};
  std::vector<uint8_t> bytes(f32.size() * 4);
  std::memcpy(bytes.data(), f32.data(), bytes.size());
  ASSERT_TRUE(w.AddTensor("a", TensorType::kF32, {3, 2}, bytes).ok());
  std::vector<float> m(16 * 64);
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  for (float& v : m) v = nd(rng);
  auto packed = QuantizeRowsRtn(TensorType::kI4A_G64, m.data(), 16, 64);
  ASSERT_TRUE(packed.ok());
  w.SetUint32(kFrugalFormatVersionKey, kFrugalFormatVersion);
  ASSERT_TRUE(w.AddTensor("b", TensorType::kI4A_G64, {64, 16}, *packed).ok());
  EXPECT_FALSE(w.AddTensor("b", TensorType::kF32, {3, 2}, bytes).ok()) << "duplicate name";
  EXPECT_FALSE(w.AddTensor("c", TensorType::kF32, {4, 2}, bytes).ok()) << "wrong byte count";

  const std::string path = TempPath("rt.gguf");
  ASSERT_TRUE(w.Write(path).ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  auto g = GgufFile::Open(path);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ((*g)->GetStringOr("general.architecture", ""), "llama");
  EXPECT_EQ((*g)->GetIntOr("llama.block_count", 0), 4);
  EXPECT_EQ((*g)->GetIntOr("some.int", 0), -7);
  EXPECT_EQ((*g)->GetIntOr("some.u64", 0), int64_t{1} << 40);
  EXPECT_EQ((*g)->GetFloatOr("some.float", 0), 0.25);
  EXPECT_TRUE((*g)->GetBoolOr("some.bool", false));
  const GgufValue* toks = (*g)->Find("tokenizer.ggml.tokens");
  ASSERT_NE(toks, nullptr);
  ASSERT_EQ(toks->strings.size(), 3u);
  EXPECT_EQ(toks->strings[1], "bc");
  EXPECT_EQ((*g)->metadata().begin()->first.size() > 0, true);
  const TensorView* a = (*g)->FindTensor("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(std::memcmp(a->data, bytes.data(), bytes.size()), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data) % 32, 0u);
  const TensorView* b = (*g)->FindTensor("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->type, TensorType::kI4A_G64);
  EXPECT_EQ(std::memcmp(b->data, packed->data(), packed->size()), 0);

  // Copying the metadata of the file just read reproduces it.
  GgufWriter copy;
  ASSERT_TRUE(copy.CopyMetadata(**g, {"some.bool"}).ok());
  EXPECT_TRUE(copy.Has("tokenizer.ggml.tokens"));
  EXPECT_FALSE(copy.Has("some.bool"));
  std::remove(path.c_str());
}

TEST(GgufWriter, UnwritablePathIsAnErrorAndLeavesNothing) {
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  const Status st = w.Write("/nonexistent-dir/x.gguf");
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIoError);
}

TEST(Recipe, PresetsAndTypeChoice) {
  auto r = PresetRecipe("mixed-int4-int8");
  ASSERT_TRUE(r.ok());
  // SmolLM2-135M's shapes: 576-wide rows cannot take g128, so g64 is used and said.
  TensorChoice q = ChooseType(*r, "blk.0.attn_q.weight", 2, 576, 576, TensorType::kQ4_1);
  EXPECT_EQ(q.type, TensorType::kI8_G64);
  EXPECT_TRUE(q.quantize);
  EXPECT_NE(q.note.find("g128 -> g64"), std::string::npos);
  EXPECT_EQ(ChooseType(*r, "blk.0.ffn_down.weight", 2, 1536, 576, TensorType::kQ4_1).type,
            TensorType::kI4A_G128);
  EXPECT_EQ(ChooseType(*r, "blk.0.ffn_up.weight", 2, 576, 1536, TensorType::kQ4_1).type,
            TensorType::kI4A_G64);
  EXPECT_EQ(ChooseType(*r, "token_embd.weight", 2, 576, 49152, TensorType::kQ4_1).type,
            TensorType::kI8_G64);
  // Norms stay F32 whatever the rules say.
  TensorChoice n = ChooseType(*r, "blk.0.attn_norm.weight", 1, 576, 1, TensorType::kF32);
  EXPECT_EQ(n.type, TensorType::kF32);
  EXPECT_FALSE(n.quantize);
  // Rows that cannot be tiled fall back to F16, with the reason.
  TensorChoice odd = ChooseType(*r, "blk.0.ffn_up.weight", 2, 128, 12, TensorType::kF32);
  EXPECT_EQ(odd.type, TensorType::kF16);
  EXPECT_NE(odd.note.find("multiple of 8"), std::string::npos);
  // Unmatched tensors follow the default: keep.
  TensorChoice other = ChooseType(*r, "rope_freqs.weight", 2, 64, 8, TensorType::kF32);
  EXPECT_TRUE(other.keep);

  OverrideGroupSize(*r, 32);
  EXPECT_EQ(ChooseType(*r, "blk.0.ffn_down.weight", 2, 1536, 576, TensorType::kQ4_1).type,
            TensorType::kI4A_G32);
  for (const std::string& name : PresetNames()) EXPECT_TRUE(PresetRecipe(name).ok()) << name;
  EXPECT_FALSE(PresetRecipe("int3").ok());
}

TEST(Recipe, ParsesFilesAndRefusesMistakes) {
  auto r = ParseRecipe(R"(name: mine
rules:
  - match: "blk.*.ffn_down.weight"
    type: int8
    group_size: 0
  - {match: "blk.*", type: int4_sym, group_size: 32}
default: f16
)");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->name, "mine");
  // First match wins.
  EXPECT_EQ(ChooseType(*r, "blk.1.ffn_down.weight", 2, 1536, 576, TensorType::kF32).type,
            TensorType::kI8_C);
  EXPECT_EQ(ChooseType(*r, "blk.1.ffn_up.weight", 2, 576, 1536, TensorType::kF32).type,
            TensorType::kI4S_G32);
  EXPECT_EQ(ChooseType(*r, "token_embd.weight", 2, 576, 64, TensorType::kF32).type,
            TensorType::kF16);
  // What ToYaml writes parses back to the same choices.
  auto again = ParseRecipe(r->ToYaml());
  ASSERT_TRUE(again.ok()) << r->ToYaml();
  EXPECT_EQ(again->ToYaml(), r->ToYaml());

  const char* bad[] = {
      "rules: []",                                                // no rules
      "name: x",                                                  // no rules key
      "rules:\n  - {match: \"*\", type: int5}",                   // unknown type
      "rules:\n  - {match: \"*\", type: int4, group_size: 0}",    // INT4 per channel
      "rules:\n  - {match: \"*\", type: int8, group_size: 100}",  // odd group
      "rules:\n  - {match: \"*\", type: int8, grup_size: 64}",    // misspelt key
      "rules:\n  - {match: \"*\", type: int8}\ncolour: blue",     // unknown top-level key
      "rules:\n  - {type: int8}",                                 // no match
      "rules:\n  - {match: \"*\", type: int8}\ndefault: int4",    // INT default
      "[1, 2",                                                    // not YAML
  };
  for (const char* b : bad) {
    auto p = ParseRecipe(b);
    EXPECT_FALSE(p.ok()) << b;
    if (!p.ok()) {
      EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument) << b;
    }
  }
}

// RTN here and the format's RTN oracle (kernels/quantize.h) write the same bytes.
TEST(QuantFormat, RtnMatchesTheFormatOracle) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0, 0.05f);
  const TensorType types[] = {TensorType::kI8_C,    TensorType::kI8_G32,  TensorType::kI8_G128,
                              TensorType::kI4S_G64, TensorType::kI4A_G32, TensorType::kI4A_G128};
  for (TensorType t : types) {
    const int64_t rows = 16, cols = 256;
    std::vector<float> w(static_cast<size_t>(rows * cols));
    for (float& v : w) v = nd(rng);
    auto f = QuantFormat::Of(t, cols);
    ASSERT_TRUE(f.ok());
    auto mine = QuantizeRtn(*f, w.data(), rows, cols).Pack();
    auto oracle = QuantizeRowsRtn(t, w.data(), rows, cols);
    ASSERT_TRUE(mine.ok() && oracle.ok());
    EXPECT_EQ(*mine, *oracle) << TypeName(t);
  }
  EXPECT_FALSE(QuantFormat::Of(TensorType::kI4A_G128, 576).ok());
  EXPECT_FALSE(QuantFormat::Of(TensorType::kQ4_1, 64).ok());
}

// RTN with the scale search, as `frugal quantize --method rtn` runs it, pinned for every Frugal
// type (min-max RTN is pinned in frugal_formats_test.cc). Weights from a fixed integer
// recurrence, so the bytes do not depend on the platform's <random>.
TEST(QuantFormat, SearchedRtnBytesArePinned) {
  const int64_t rows = 16, cols = 256;
  std::vector<float> w(static_cast<size_t>(rows * cols)), imp(static_cast<size_t>(cols));
  uint32_t s = 777;
  auto next = [&s] {
    s = s * 1664525u + 1013904223u;
    return static_cast<float>(s >> 8) * (1.0f / 16777216.0f);
  };
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = (next() + next() + next() - 1.5f) * (i % 61 == 0 ? 0.3f : 0.03f);
  for (float& v : imp) v = 0.25f + 4 * next();
  struct Pin {
    TensorType type;
    const char* plain;     // the first 16 hex digits of the packed bytes' SHA-256
    const char* weighted;  // the same with per-column importance
  };
  const Pin pinned[] = {
      {TensorType::kI8_C, "6219a0ccf6f0ee74", "6219a0ccf6f0ee74"},
      {TensorType::kI8_G32, "c03a74784bd9dbd0", "c03a74784bd9dbd0"},
      {TensorType::kI8_G128, "08eaca84c8316b93", "08eaca84c8316b93"},
      {TensorType::kI4S_G32, "f59b074a732a877c", "40f066926a4600b5"},
      {TensorType::kI4S_G64, "803d87b4e18e52a4", "bed8d66388a5e584"},
      {TensorType::kI4S_G128, "eaf516c398031efe", "44dc6cadcaa51ce9"},
      {TensorType::kI4A_G32, "d7adb5d12dbd53c4", "328bb15f0dae313c"},
      {TensorType::kI4A_G64, "0707645d098add1c", "463a9c04e0e8da72"},
      {TensorType::kI4A_G128, "385318749d4ec4c2", "498567f3ae7b5a32"},
  };
  for (const Pin& pin : pinned) {
    const QuantFormat f = *QuantFormat::Of(pin.type, cols);
    for (const bool weighted : {false, true}) {
      auto bytes =
          QuantizeRtn(f, w.data(), rows, cols, ScaleFit::kSearch, weighted ? imp.data() : nullptr)
              .Pack();
      ASSERT_TRUE(bytes.ok());
      EXPECT_EQ(
          Sha256Hex(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()))
              .substr(0, 16),
          weighted ? pin.weighted : pin.plain)
          << TypeName(pin.type) << (weighted ? " weighted" : "");
    }
  }
}

// Inputs with strongly correlated channels of uneven scale, as real activations are.
std::vector<float> CorrelatedInputs(int64_t n, int64_t cols, std::mt19937& rng) {
  std::normal_distribution<float> nd;
  const int64_t k = 8;  // latent factors
  std::vector<float> mix(static_cast<size_t>(k * cols));
  for (float& v : mix) v = nd(rng);
  std::vector<float> x(static_cast<size_t>(n * cols));
  for (int64_t i = 0; i < n; ++i) {
    float z[k];
    for (float& v : z) v = nd(rng);
    for (int64_t c = 0; c < cols; ++c) {
      float s = 0.1f * nd(rng);
      for (int64_t j = 0; j < k; ++j) s += z[j] * mix[static_cast<size_t>(j * cols + c)];
      x[static_cast<size_t>(i * cols + c)] = s * (c % 16 == 0 ? 8.0f : 1.0f);
    }
  }
  return x;
}

std::vector<float> Gram(const std::vector<float>& x, int64_t n, int64_t cols) {
  std::vector<float> h(static_cast<size_t>(cols * cols), 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t a = 0; a < cols; ++a) {
      for (int64_t b = 0; b < cols; ++b)
        h[static_cast<size_t>(a * cols + b)] +=
            x[static_cast<size_t>(i * cols + a)] * x[static_cast<size_t>(i * cols + b)];
    }
  }
  return h;
}

// A 32 x 256 Gaussian weight matrix and the Hessian of 2048 correlated inputs.
struct GptqProblem {
  static constexpr int64_t rows = 32, cols = 256;
  std::vector<float> w, h;
  explicit GptqProblem(unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0, 0.02f);
    w.resize(static_cast<size_t>(rows * cols));
    for (float& v : w) v = nd(rng);
    h = Gram(CorrelatedInputs(2048, cols, rng), 2048, cols);
  }
};

TEST(Gptq, LowersTheOutputErrorOfRtn) {
  const GptqProblem pr(3);
  const int64_t rows = pr.rows, cols = pr.cols;
  const std::vector<float>& w = pr.w;
  const std::vector<float>& h = pr.h;
  for (TensorType t : {TensorType::kI4A_G128, TensorType::kI4S_G64, TensorType::kI8_G64}) {
    const QuantFormat f = *QuantFormat::Of(t, cols);
    const OutputError rtn = MeasureOutputError(
        w.data(), QuantizeRtn(f, w.data(), rows, cols).Dequantize().data(), rows, cols, h.data());
    for (bool act_order : {true, false}) {
      GptqOptions o;
      o.act_order = act_order;
      o.block = 64;  // several lazy blocks
      auto g = QuantizeGptq(f, w.data(), rows, cols, h.data(), o);
      ASSERT_TRUE(g.ok()) << g.status().message();
      const OutputError e =
          MeasureOutputError(w.data(), g->matrix.Dequantize().data(), rows, cols, h.data());
      EXPECT_LT(e.error, 0.7 * rtn.error) << TypeName(t) << " act_order " << act_order;
      // Every stored integer is in range and the file layout packs.
      EXPECT_TRUE(g->matrix.Pack().ok());
    }
  }
}

TEST(ScaleSearch, RoundSmallIsNearbyint) {
  for (float v = -300.0f; v <= 300.0f; v += 0.125f)
    ASSERT_EQ(RoundSmall(v), std::nearbyint(v)) << v;
  for (float v : {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 7.4999995f, 1e6f + 0.5f, -4194303.5f}) {
    EXPECT_EQ(RoundSmall(v), std::nearbyint(v)) << v;
  }
}

// Weighted squared error of one group as stored.
double GroupSse(const QuantFormat& f, const GroupParams& p, const float* w, const float* a,
                int64_t n) {
  double e = 0;
  for (int64_t j = 0; j < n; ++j) {
    const double d = DequantizeValue(f, p, QuantizeValue(f, p, w[j])) - static_cast<double>(w[j]);
    e += (a != nullptr ? a[j] : 1.0) * d * d;
  }
  return e;
}

TEST(ScaleSearch, NeverWorseThanMinMaxAndBetterOnAverage) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0, 0.02f);
  std::student_t_distribution<float> heavy(3.0f);  // outliers, as real weight rows have
  std::uniform_real_distribution<float> imp(0.0f, 4.0f);
  for (TensorType t :
       {TensorType::kI4A_G32, TensorType::kI4A_G128, TensorType::kI4S_G32, TensorType::kI4S_G128}) {
    const QuantFormat f = *QuantFormat::Of(t, 128);
    for (bool weighted : {false, true}) {
      double minmax = 0, search = 0;
      for (int trial = 0; trial < 400; ++trial) {
        std::vector<float> w(static_cast<size_t>(f.group)), a(static_cast<size_t>(f.group));
        for (float& v : w) v = trial % 2 ? nd(rng) : 0.01f * heavy(rng) + 0.003f;
        for (float& v : a) v = imp(rng) * imp(rng);
        const float* ap = weighted ? a.data() : nullptr;
        const double e0 = GroupSse(f, FitGroup(f, w.data(), f.group), w.data(), ap, f.group);
        const GroupParams p = FitGroup(f, w.data(), f.group, ScaleFit::kSearch, ap);
        const double e1 = GroupSse(f, p, w.data(), ap, f.group);
        ASSERT_LE(e1, e0 * (1 + 1e-5)) << TypeName(t) << " trial " << trial;
        // What is returned is what is stored.
        EXPECT_EQ(p.d, RoundScale(t, p.d));
        EXPECT_EQ(p.m, RoundScale(t, p.m));
        minmax += e0, search += e1;
      }
      // Measured 0.66-0.85 on this data; a search that found nothing would give 1.
      EXPECT_LT(search, 0.9 * minmax) << TypeName(t) << (weighted ? " weighted" : "");
    }
  }
  // INT8 keeps min-max, and a constant group is exact either way.
  const QuantFormat f8 = *QuantFormat::Of(TensorType::kI8_G32, 32);
  std::vector<float> w(32);
  for (float& v : w) v = nd(rng);
  const GroupParams a = FitGroup(f8, w.data(), 32),
                    b = FitGroup(f8, w.data(), 32, ScaleFit::kSearch);
  EXPECT_EQ(a.d, b.d);
  const QuantFormat f4 = *QuantFormat::Of(TensorType::kI4A_G32, 32);
  std::vector<float> c(32, 0.25f);
  EXPECT_EQ(GroupSse(f4, FitGroup(f4, c.data(), 32, ScaleFit::kSearch), c.data(), nullptr, 32), 0);
}

TEST(ScaleSearch, ImportanceSteersTheErrorToUnimportantWeights) {
  std::mt19937 rng(12);
  std::normal_distribution<float> nd(0, 0.02f);
  const QuantFormat f = *QuantFormat::Of(TensorType::kI4A_G64, 64);
  double plain = 0, steered = 0;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> w(64), a(64, 0.01f);
    for (float& v : w) v = nd(rng);
    for (int k = 0; k < 8; ++k)
      a[static_cast<size_t>((trial + 7 * k) % 64)] = 100.0f;  // 8 loud inputs
    plain += GroupSse(f, FitGroup(f, w.data(), 64, ScaleFit::kSearch), w.data(), a.data(), 64);
    steered +=
        GroupSse(f, FitGroup(f, w.data(), 64, ScaleFit::kSearch, a.data()), w.data(), a.data(), 64);
  }
  EXPECT_LT(steered, 0.8 * plain);
}

TEST(ScaleSearch, RtnOnAPoolEqualsRtnOnOneThread) {
  std::mt19937 rng(13);
  std::normal_distribution<float> nd(0, 0.02f);
  const int64_t rows = 40, cols = 256;
  std::vector<float> w(static_cast<size_t>(rows * cols)), imp(static_cast<size_t>(cols));
  for (float& v : w) v = nd(rng);
  for (float& v : imp) v = 1.0f + std::fabs(nd(rng)) * 100;
  ThreadPool pool(2);
  for (TensorType t : {TensorType::kI4A_G64, TensorType::kI4S_G128, TensorType::kI8_C}) {
    const QuantFormat f = *QuantFormat::Of(t, cols);
    const QuantizedMatrix a = QuantizeRtn(f, w.data(), rows, cols, ScaleFit::kSearch, imp.data());
    const QuantizedMatrix b =
        QuantizeRtn(f, w.data(), rows, cols, ScaleFit::kSearch, imp.data(), &pool);
    EXPECT_EQ(a.q, b.q) << TypeName(t);
    EXPECT_EQ(*a.Pack(), *b.Pack()) << TypeName(t);
  }
}

TEST(Gptq, ScaleSearchLowersItsOutputErrorFurther) {
  const GptqProblem pr(14);
  const int64_t rows = pr.rows, cols = pr.cols;
  const std::vector<float>& w = pr.w;
  const std::vector<float>& h = pr.h;
  for (TensorType t : {TensorType::kI4A_G128, TensorType::kI4S_G64}) {
    const QuantFormat f = *QuantFormat::Of(t, cols);
    GptqOptions o;
    auto plain = QuantizeGptq(f, w.data(), rows, cols, h.data(), o);
    o.fit = ScaleFit::kSearch;
    auto searched = QuantizeGptq(f, w.data(), rows, cols, h.data(), o);
    ASSERT_TRUE(plain.ok() && searched.ok());
    const double e0 =
        MeasureOutputError(w.data(), plain->matrix.Dequantize().data(), rows, cols, h.data()).error;
    const double e1 =
        MeasureOutputError(w.data(), searched->matrix.Dequantize().data(), rows, cols, h.data())
            .error;
    EXPECT_LT(e1, 0.95 * e0) << TypeName(t);
  }
}

TEST(Gptq, SurvivesDeadInputsAndASingularHessian) {
  const int64_t rows = 8, cols = 64;
  std::vector<float> w(static_cast<size_t>(rows * cols), 0.01f);
  std::vector<float> h(static_cast<size_t>(cols * cols), 1.0f);  // rank 1
  for (int64_t c = 0; c < 8; ++c) {
    for (int64_t b = 0; b < cols; ++b)
      h[static_cast<size_t>(c * cols + b)] = h[static_cast<size_t>(b * cols + c)] =
          0;  // never fired
  }
  GptqOptions o;
  o.damp = 0;  // forces the damping to be raised
  auto g =
      QuantizeGptq(*QuantFormat::Of(TensorType::kI4A_G32, cols), w.data(), rows, cols, h.data(), o);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_GT(g->damp_used, 0);
  for (float v : g->matrix.Dequantize()) EXPECT_TRUE(std::isfinite(v));
}

TEST(Awq, ProtectsTheChannelsWithLargeActivations) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0, 0.02f);
  const int64_t rows = 64, cols = 256, n = 256;
  std::vector<float> w(static_cast<size_t>(rows * cols));
  for (float& v : w) v = nd(rng);
  std::vector<float> x(static_cast<size_t>(n * cols));
  std::normal_distribution<float> xn;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < cols; ++c)
      x[static_cast<size_t>(i * cols + c)] = xn(rng) * (c % 32 == 5 ? 30.0f : 1.0f);
  }
  std::vector<double> mean_abs(static_cast<size_t>(cols), 0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < cols; ++c)
      mean_abs[static_cast<size_t>(c)] += std::fabs(x[static_cast<size_t>(i * cols + c)]) / n;
  }
  ThreadPool pool(2);
  const AwqMatrix m{w.data(), rows, *QuantFormat::Of(TensorType::kI4A_G128, cols)};
  const AwqResult r = SearchAwqScale({&m, 1}, cols, x.data(), n, mean_abs, AwqOptions{}, pool);
  EXPECT_GT(r.alpha, 0);
  EXPECT_LT(r.error, 0.8 * r.error_unscaled);
  EXPECT_GT(r.scale[5], r.scale[6]) << "the loud channel is scaled up";
  EXPECT_NEAR(ScaledQuantError(m, cols, r.scale.data(), x.data(), n, pool), r.error,
              1e-6 * r.error);
  EXPECT_NEAR(ScaledQuantError(m, cols, nullptr, x.data(), n, pool), r.error_unscaled,
              1e-6 * r.error_unscaled);
}

}  // namespace
}  // namespace frugal
