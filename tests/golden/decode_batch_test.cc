// Batched decoding on the real default model: a sequence decoded in a batch with others gets
// exactly the logits it gets alone (label `model`; skipped when models/ has not been fetched).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "common/thread_pool.h"
#include "models/llama.h"

namespace frugal {
namespace {

const char* kModel =
    FRUGAL_SOURCE_DIR "/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf";

TEST(DecodeBatchTest, BatchedEqualsAlone) {
  if (!std::filesystem::exists(kModel)) GTEST_SKIP() << "run scripts/get-models.sh first";
  auto src = ModelSource::Open(kModel);
  ASSERT_TRUE(src.ok()) << src.status().ToString();
  auto model = LlamaModel::Load(**src);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const LlamaModel& m = **model;
  ThreadPool pool(2);
  // The sequences alone run on 4 threads: with SmolLM2's 3 key/value heads, a one-token step then
  // splits attention one query head per task, where the batch takes each group's 3 heads together
  // (AttentionGroup); the logits must not depend on either split.
  ThreadPool pool_alone(4);
  const int64_t vocab = m.hparams().n_vocab;
  // Three sequences with different prompts (so different positions and histories).
  const std::vector<std::vector<int32_t>> prompts = {
      {504, 3458, 282}, {1206, 314}, {28, 905, 17, 216, 33}};
  std::vector<std::unique_ptr<KvCache>> batched, alone;
  std::vector<float> logits;
  for (const auto& p : prompts) {
    batched.push_back(m.NewKvCache(32));
    alone.push_back(m.NewKvCache(32));
    ASSERT_TRUE(m.Forward(p, *batched.back(), pool, &logits, false).ok());
    ASSERT_TRUE(m.Forward(p, *alone.back(), pool_alone, &logits, false).ok());
  }
  std::vector<int32_t> next = {100, 200, 300};
  for (int step = 0; step < 3; ++step) {
    std::vector<KvCache*> caches = {batched[0].get(), batched[1].get(), batched[2].get()};
    std::vector<float> batch_logits;
    ASSERT_TRUE(m.DecodeBatch(next, caches, pool, &batch_logits).ok());
    ASSERT_EQ(batch_logits.size(), static_cast<size_t>(3 * vocab));
    for (size_t s = 0; s < 3; ++s) {
      std::vector<float> one;
      ASSERT_TRUE(
          m.Forward(std::span<const int32_t>(&next[s], 1), *alone[s], pool_alone, &one, false)
              .ok());
      ASSERT_EQ(0, std::memcmp(one.data(), batch_logits.data() + s * static_cast<size_t>(vocab),
                               one.size() * 4))
          << "sequence " << s << " step " << step;
      next[s] = static_cast<int32_t>(std::max_element(one.begin(), one.end()) - one.begin());
    }
  }
  // The same cache twice in one batch is refused.
  std::vector<KvCache*> dup = {batched[0].get(), batched[0].get()};
  std::vector<int32_t> two = {1, 2};
  EXPECT_EQ(m.DecodeBatch(two, dup, pool, &logits).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace frugal
