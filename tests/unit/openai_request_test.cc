// api/openai.h: the worker's strict reading of completion and embedding requests, and the
// proxy's reading of the same bodies. The fields both read (model, stream, stream_options,
// max_tokens) go through one set of readers: a body one side refuses for such a field, the
// other refuses with the same message.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "api/openai.h"

namespace frugal::api {
namespace {

using json = nlohmann::json;

std::string ChatBody(json extra) {
  json j = {{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  for (auto& [k, v] : extra.items()) j[k] = v;
  return j.dump();
}

TEST(OpenAiRequestTest, WorkerReadsEveryField) {
  auto p = ParseCompletionRequest(ChatBody({{"max_tokens", 7},
                                            {"temperature", 0.5},
                                            {"top_p", 0.9},
                                            {"top_k", 5},
                                            {"seed", 0},
                                            {"stop", {"x", "y"}},
                                            {"stream", true},
                                            {"stream_options", {{"include_usage", true}}},
                                            {"user", "u1"}}),
                                  true);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->model, "m");
  ASSERT_EQ(p->messages.size(), 1u);
  EXPECT_EQ(p->messages[0].role, "user");
  EXPECT_EQ(p->messages[0].content, "hi");
  EXPECT_EQ(p->max_tokens, 7);
  EXPECT_FLOAT_EQ(p->sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(p->sampling.top_p, 0.9f);
  EXPECT_EQ(p->sampling.top_k, 5);
  EXPECT_NE(p->sampling.seed, 0u) << "a client's seed 0 is a fixed seed, not 'random'";
  EXPECT_EQ(p->stop, (std::vector<std::string>{"x", "y"}));
  EXPECT_TRUE(p->stream);
  EXPECT_TRUE(p->include_usage);
  EXPECT_EQ(p->user, "u1");
  // OpenAI's defaults when nothing is given.
  auto d = ParseCompletionRequest(ChatBody(json::object()), true);
  ASSERT_TRUE(d.ok());
  EXPECT_FLOAT_EQ(d->sampling.temperature, 1.0f);
  EXPECT_FALSE(d->max_tokens.has_value());
  // "developer" is a system turn; content parts are joined.
  auto dev = ParseCompletionRequest(
      R"({"messages":[{"role":"developer","content":[{"type":"text","text":"a"},)"
      R"({"type":"text","text":"b"}]},{"role":"user","content":"q"}]})",
      true);
  ASSERT_TRUE(dev.ok()) << dev.status().message();
  EXPECT_EQ(dev->messages[0].role, "system");
  EXPECT_EQ(dev->messages[0].content, "ab");
}

TEST(OpenAiRequestTest, WorkerRefusesWithTheFieldNamed) {
  const std::pair<json, std::string> bad[] = {
      {{{"temperature", 3}}, "'temperature' must be between 0 and 2"},
      {{{"n", 2}}, "'n' must be between 1 and 1"},
      {{{"stop", {"a", "b", "c", "d", "e"}}}, "'stop' must be a string or an array of up to 4"},
      {{{"max_tokens", 0}}, "'max_tokens' must be between 1 and"},
      {{{"messages", json::array()}}, "'messages' must not be empty"},
      {{{"messages", {{{"role", "tool"}, {"content", "x"}}}}}, "'messages[0].role' must be"},
      {{{"continue_final_message", true}}, "'continue_final_message' needs a final message"},
      {{{"continue_final_message", 1}}, "'continue_final_message' must be a boolean"},
      {{{"add_generation_prompt", false}}, "'add_generation_prompt' false needs continue"},
  };
  for (const auto& [extra, message] : bad) {
    auto p = ParseCompletionRequest(ChatBody(extra), true);
    ASSERT_FALSE(p.ok()) << extra.dump();
    EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(p.status().message().rfind(message, 0), 0u)
        << extra.dump() << ": " << p.status().message();
  }
  auto prompt = ParseCompletionRequest(R"({"prompt":["a","b"]})", false);
  EXPECT_FALSE(prompt.ok());
}

TEST(OpenAiRequestTest, WorkerReadsAContinuationOfTheFinalAssistantMessage) {
  const json body = {
      {"messages",
       {{{"role", "user"}, {"content", "Hi"}}, {{"role", "assistant"}, {"content", "Hel"}}}},
      {"continue_final_message", true},
      {"add_generation_prompt", false}};
  auto p = ParseCompletionRequest(body.dump(), true);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_TRUE(p->continue_final_message);
  EXPECT_EQ(p->messages.back().content, "Hel");
  auto plain = ParseCompletionRequest(ChatBody({}), true);
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->continue_final_message);
}

TEST(OpenAiRequestTest, SharedFieldsAreRefusedAlikeByWorkerAndProxy) {
  for (const json& extra :
       {json{{"model", 5}}, json{{"stream", "yes"}}, json{{"stream", 1}},
        json{{"stream_options", "x"}}, json{{"stream_options", {{"include_usage", "yes"}}}}}) {
    auto worker = ParseCompletionRequest(ChatBody(extra), true);
    auto proxy = ParseProxiedCompletion(ChatBody(extra), true, {});
    ASSERT_FALSE(worker.ok()) << extra.dump();
    ASSERT_FALSE(proxy.ok()) << extra.dump();
    EXPECT_EQ(worker.status().message(), proxy.status().message()) << extra.dump();
  }
  for (const char* body : {"{", "[1]", "null"}) {
    auto worker = ParseCompletionRequest(body, true);
    auto proxy = ParseProxiedCompletion(body, true, {});
    ASSERT_FALSE(worker.ok());
    ASSERT_FALSE(proxy.ok());
    EXPECT_EQ(worker.status().message(), proxy.status().message()) << body;
  }
}

TEST(OpenAiRequestTest, MaxTokensWinsOverMaxCompletionTokensOnBothSides) {
  const std::string body = ChatBody({{"max_tokens", 10}, {"max_completion_tokens", 20}});
  auto worker = ParseCompletionRequest(body, true);
  auto proxy = ParseProxiedCompletion(body, true, {});
  ASSERT_TRUE(worker.ok());
  ASSERT_TRUE(proxy.ok());
  EXPECT_EQ(worker->max_tokens, 10);
  EXPECT_EQ(proxy->max_tokens, 10);
  // Out of range: the worker refuses; the proxy leaves it to the engine and has no estimate.
  const std::string huge = ChatBody({{"max_tokens", int64_t{1} << 40}});
  EXPECT_FALSE(ParseCompletionRequest(huge, true).ok());
  auto p = ParseProxiedCompletion(huge, true, {});
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->max_tokens.has_value());
}

TEST(OpenAiRequestTest, ProxyLeavesWhatOnlyTheEngineReadsToTheEngine) {
  // A tool turn, an image part and n = 2 are not Frugal's, but an engine behind the gateway
  // may take them: forwarded (parsed), never cached.
  for (const json& extra :
       {json{{"messages",
              {{{"role", "user"}, {"content", "q"}}, {{"role", "tool"}, {"content", "r"}}}}},
        json{{"messages",
              {{{"role", "user"},
                {"content", {{{"type", "image_url"}, {"image_url", {{"url", "x"}}}}}}}}}},
        json{{"n", 2}, {"temperature", 0}}}) {
    auto p = ParseProxiedCompletion(ChatBody(extra), true, {});
    ASSERT_TRUE(p.ok()) << extra.dump() << ": " << p.status().message();
    EXPECT_FALSE(p->cacheable) << extra.dump();
  }
  // The proxy needs the model to route by.
  auto no_model =
      ParseProxiedCompletion(R"({"messages":[{"role":"user","content":"q"}]})", true, {});
  ASSERT_FALSE(no_model.ok());
  EXPECT_EQ(no_model.status().message(), "'model' is required (a string)");
}

TEST(OpenAiRequestTest, EmbeddingInputs) {
  auto one = ParseEmbeddingRequest(R"({"input":"a"})");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->inputs.size(), 1u);
  auto b64 = ParseEmbeddingRequest(R"({"input":["a","b"],"encoding_format":"base64"})");
  ASSERT_TRUE(b64.ok());
  EXPECT_TRUE(b64->base64);
  EXPECT_EQ(b64->inputs.size(), 2u);
  for (const char* bad : {R"({})", R"({"input":[]})", R"({"input":[""]})", R"({"input":[1]})",
                          R"({"input":"a","encoding_format":"int8"})"}) {
    EXPECT_FALSE(ParseEmbeddingRequest(bad).ok()) << bad;
  }
  EXPECT_EQ(NewCompletionId(true).rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(NewCompletionId(false).rfind("cmpl-", 0), 0u);
  EXPECT_NE(NewCompletionId(true), NewCompletionId(true));
}

TEST(ProxiedCompletionTest, PrefixMarksFollowTheConversation) {
  const json sys = {{"role", "system"}, {"content", "policy text"}};
  const json u1 = {{"role", "user"}, {"content", "How much is shipping?"}};
  const json a1 = {{"role", "assistant"}, {"content", "4.90 EUR."}};
  const json u2 = {{"role", "user"}, {"content", "And to Austria?"}};
  auto parse = [](const json& messages, const std::string& model = "m") {
    auto p =
        ParseProxiedCompletion(json{{"model", model}, {"messages", messages}}.dump(), true, {});
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? p->prefixes : std::vector<ProxiedCompletion::PrefixMark>{};
  };
  const auto turn1 = parse(json::array({sys, u1}));
  const auto turn2 = parse(json::array({sys, u1, a1, u2}));
  ASSERT_EQ(turn1.size(), 2u);
  ASSERT_EQ(turn2.size(), 4u);
  // The follow-up starts with the first turn's marks: what was sent with turn 1 is its prefix.
  EXPECT_EQ(turn2[0].hash, turn1[0].hash);
  EXPECT_EQ(turn2[1].hash, turn1[1].hash);
  EXPECT_EQ(turn2[1].chars, static_cast<int64_t>(11 + 21));
  EXPECT_NE(turn2[2].hash, turn2[1].hash);
  // Another system prompt, another role, or another model: nothing shared.
  EXPECT_NE(parse(json::array({{{"role", "system"}, {"content", "other"}}, u1}))[0].hash,
            turn1[0].hash);
  EXPECT_NE(parse(json::array({{{"role", "user"}, {"content", "policy text"}}}))[0].hash,
            turn1[0].hash);
  EXPECT_NE(parse(json::array({sys, u1}), "other-model")[0].hash, turn1[0].hash);
  // A string prompt: a mark every 512 bytes.
  auto prompt = ParseProxiedCompletion(
      json{{"model", "m"}, {"prompt", std::string(1100, 'x')}}.dump(), false, {});
  ASSERT_TRUE(prompt.ok());
  ASSERT_EQ(prompt->prefixes.size(), 3u);
  EXPECT_EQ(prompt->prefixes[2].chars, 1100);
}

}  // namespace
}  // namespace frugal::api
