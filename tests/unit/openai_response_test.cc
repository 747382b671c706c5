// The OpenAI response codec (api/openai_response.h): what the worker writes, the gateway replays
// from its cache, and reads and rewrites of a relayed or continued stream. Checked against the
// OpenAI API's shapes (parsed, field by field), and the readers against the writers.
#include "api/openai_response.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace frugal::api {
namespace {

using json = nlohmann::json;

ResponseHead Head(bool chat, std::string fingerprint = "fp") {
  return {chat, chat ? "chatcmpl-1" : "cmpl-1", "m", 1700000000, std::move(fingerprint)};
}

// The JSON of each "data:" event of an SSE text; "[DONE]" kept as a string.
std::vector<json> Events(const std::string& sse) {
  std::vector<json> out;
  size_t at = 0;
  while (at < sse.size()) {
    const size_t end = sse.find("\n\n", at);
    EXPECT_NE(end, std::string::npos) << "an event without its blank line";
    if (end == std::string::npos) break;
    const std::string line = sse.substr(at, end - at);
    EXPECT_EQ(line.rfind("data: ", 0), 0u) << line;
    const std::string data = line.substr(6);
    out.push_back(data == "[DONE]" ? json("[DONE]") : json::parse(data));
    at = end + 2;
  }
  return out;
}

TEST(OpenAiResponseTest, AChatStreamHasTheRoleFirstThenPiecesFinishAndUsage) {
  const auto h = Head(true);
  const std::string sse = OpenEvent(h) + PieceEvent(h, "Hello") + PieceEvent(h, " world") +
                          FinishEvent(h, "stop") + UsageEvent(h, UsageJson(10, 2, 8)) +
                          std::string(kDoneEvent);
  const auto ev = Events(sse);
  ASSERT_EQ(ev.size(), 6u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(ev[i]["object"], "chat.completion.chunk");
    EXPECT_EQ(ev[i]["id"], "chatcmpl-1");
    EXPECT_EQ(ev[i]["model"], "m");
    EXPECT_EQ(ev[i]["created"], 1700000000);
    EXPECT_EQ(ev[i]["system_fingerprint"], "fp");
  }
  EXPECT_EQ(ev[0]["choices"][0]["delta"], (json{{"role", "assistant"}, {"content", ""}}));
  EXPECT_EQ(ev[0]["choices"][0]["finish_reason"], nullptr);
  EXPECT_EQ(ev[1]["choices"][0]["delta"], (json{{"content", "Hello"}}));
  EXPECT_EQ(ev[1]["choices"][0]["index"], 0);
  EXPECT_EQ(ev[3]["choices"][0]["delta"], json::object());
  EXPECT_EQ(ev[3]["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(ev[4]["choices"], json::array());
  EXPECT_EQ(ev[4]["usage"]["prompt_tokens"], 10);
  EXPECT_EQ(ev[4]["usage"]["completion_tokens"], 2);
  EXPECT_EQ(ev[4]["usage"]["total_tokens"], 12);
  EXPECT_EQ(ev[4]["usage"]["prompt_tokens_details"]["cached_tokens"], 8);
  EXPECT_EQ(ev[5], "[DONE]");
}

TEST(OpenAiResponseTest, CompletionsUseTextAndNoFingerprintWhenNoneIsGiven) {
  const auto h = Head(false, "");
  const auto ev = Events(OpenEvent(h) + PieceEvent(h, "abc") + FinishEvent(h, "length"));
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0]["object"], "text_completion");
  EXPECT_FALSE(ev[0].contains("system_fingerprint"));
  EXPECT_EQ(ev[0]["choices"][0]["text"], "");
  EXPECT_EQ(ev[1]["choices"][0]["text"], "abc");
  EXPECT_EQ(ev[2]["choices"][0]["text"], "");
  EXPECT_EQ(ev[2]["choices"][0]["finish_reason"], "length");
}

TEST(OpenAiResponseTest, AWholeAnswerAndItsReadingBack) {
  for (const bool chat : {true, false}) {
    SCOPED_TRACE(chat ? "chat" : "completions");
    const std::string body =
        CompletionJson(Head(chat), "Free from 49 EUR.", "stop", UsageJson(5, 4, 0));
    const json j = json::parse(body);
    EXPECT_EQ(j["object"], chat ? "chat.completion" : "text_completion");
    if (chat) {
      EXPECT_EQ(j["choices"][0]["message"],
                (json{{"role", "assistant"}, {"content", "Free from 49 EUR."}}));
    } else {
      EXPECT_EQ(j["choices"][0]["text"], "Free from 49 EUR.");
    }
    EXPECT_EQ(j["usage"]["total_tokens"], 9);
    const auto read = ReadCompletion(body, chat);
    ASSERT_TRUE(read.has_value());
    EXPECT_EQ(read->content, "Free from 49 EUR.");
    EXPECT_EQ(read->finish_reason, "stop");
    EXPECT_EQ(json::parse(read->usage_json), j["usage"]);
    // The other kind's field is not there: nothing to read.
    EXPECT_FALSE(ReadCompletion(body, !chat).has_value());
  }
  EXPECT_FALSE(json::parse(CompletionJson(Head(true), "x", "stop", "")).contains("usage"));
  EXPECT_FALSE(ReadCompletion("not json", true).has_value());
  EXPECT_FALSE(ReadCompletion(R"({"choices": []})", true).has_value());
}

TEST(OpenAiResponseTest, AReplayedAnswerIsTheStoredTextInPiecesAtSpaces) {
  const std::string content =
      "Standard delivery costs 4.90 EUR and is free from 49 EUR; 运费 parcels leave in two days.";
  for (const bool chat : {true, false}) {
    SCOPED_TRACE(chat ? "chat" : "completions");
    const auto h = Head(chat, "");
    const auto ev = Events(ReplayStream(h, content, "stop", UsageJson(3, 20, 0), true));
    // Read back as a relay would: the same text, its end, its usage.
    StreamNotes notes;
    std::string joined;
    size_t pieces = 0;
    for (const auto& e : ev) {
      if (e == "[DONE]") continue;
      ASSERT_TRUE(NoteChunk(e.dump(), chat, &notes));
    }
    for (size_t i = 0; i < ev.size(); ++i) {
      if (ev[i] == "[DONE]" || ev[i]["choices"].empty()) continue;
      const json& c = ev[i]["choices"][0];
      const std::string piece =
          chat ? c["delta"].value("content", std::string()) : c["text"].get<std::string>();
      if (piece.empty()) continue;
      ++pieces;
      joined += piece;
      // Every piece but the last ends after a space or newline and is at least 16 bytes.
      if (joined.size() < content.size()) {
        EXPECT_GE(piece.size(), 16u);
        EXPECT_TRUE(piece.back() == ' ' || piece.back() == '\n') << piece;
      }
    }
    EXPECT_EQ(joined, content);
    EXPECT_EQ(notes.content, content);
    EXPECT_EQ(notes.pieces, static_cast<int64_t>(pieces));
    EXPECT_GT(pieces, 2u);
    EXPECT_EQ(notes.finish_reason, "stop");
    EXPECT_EQ(json::parse(notes.usage_json)["completion_tokens"], 20);
    EXPECT_EQ(notes.id, h.id);
    EXPECT_EQ(ev.back(), "[DONE]");
    EXPECT_EQ(ev.front()["choices"][0].contains("delta") &&
                  ev.front()["choices"][0]["delta"].contains("role"),
              chat);
    // Without include_usage (or without a stored usage) no usage chunk.
    for (const auto& e : Events(ReplayStream(h, content, "stop", UsageJson(3, 20, 0), false))) {
      EXPECT_FALSE(e.is_object() && e.contains("usage"));
    }
    for (const auto& e : Events(ReplayStream(h, content, "stop", "", true))) {
      EXPECT_FALSE(e.is_object() && e.contains("usage"));
    }
  }
}

TEST(OpenAiResponseTest, AnErrorInsideAStreamIsTheErrorBody) {
  const auto ev = Events(ErrorEvent(504, "took too long", "timeout"));
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0]["error"]["message"], "took too long");
  EXPECT_EQ(ev[0]["error"]["code"], "timeout");
  StreamNotes notes;
  ASSERT_TRUE(NoteChunk(ev[0].dump(), true, &notes));
  EXPECT_EQ(notes.finish_reason, "error");
  EXPECT_FALSE(NoteChunk("[not an object]", true, &notes));
}

TEST(OpenAiResponseTest, AContinuationIsPartOfTheClientsStream) {
  const auto h = Head(true);
  // The new worker's opening role delta is dropped; its content keeps coming under the
  // client's stream id; its usage counts the relayed prefix as answer, not prompt.
  EXPECT_FALSE(RewriteContinuedChunk(OpenEvent(h).substr(6), true, "chatcmpl-first", 7));
  const auto piece =
      RewriteContinuedChunk(PieceEvent(h, "more").substr(6), true, "chatcmpl-first", 7);
  ASSERT_TRUE(piece);
  EXPECT_EQ(json::parse(*piece)["id"], "chatcmpl-first");
  EXPECT_EQ(json::parse(*piece)["choices"][0]["delta"]["content"], "more");
  const auto usage = RewriteContinuedChunk(UsageEvent(h, UsageJson(30, 5, 0)).substr(6), true,
                                           "chatcmpl-first", 7);
  ASSERT_TRUE(usage);
  const json u = json::parse(*usage)["usage"];
  EXPECT_EQ(u["prompt_tokens"], 23);
  EXPECT_EQ(u["completion_tokens"], 12);
  EXPECT_EQ(u["total_tokens"], 35);
  const auto finish =
      RewriteContinuedChunk(FinishEvent(h, "stop").substr(6), true, "chatcmpl-first", 7);
  ASSERT_TRUE(finish);
  EXPECT_EQ(json::parse(*finish)["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(RewriteContinuedChunk("nope", true, "x", 0));

  // The request that continues it: the answer so far to continue, max_tokens less the relayed.
  const std::string body =
      R"({"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":10})";
  ASSERT_TRUE(Continuable(body, true, "Hel"));
  const json b = json::parse(ContinuedRequestBody(body, true, "Hel", 3));
  EXPECT_EQ(b["messages"].back(), (json{{"role", "assistant"}, {"content", "Hel"}}));
  EXPECT_EQ(b["continue_final_message"], true);
  EXPECT_EQ(b["add_generation_prompt"], false);
  EXPECT_EQ(b["max_tokens"], 7);
  const json c = json::parse(
      ContinuedRequestBody(R"({"model":"m","prompt":"A","max_tokens":2})", false, "BC", 5));
  EXPECT_EQ(c["prompt"], "ABC");
  EXPECT_EQ(c["max_tokens"], 1);  // never below one
  EXPECT_FALSE(Continuable(R"({"model":"m","messages":[],"n":2})", true, ""));
  EXPECT_FALSE(Continuable(R"({"model":"m","prompt":["a","b"]})", false, "x"));
  EXPECT_TRUE(Continuable(R"({"model":"m","prompt":["a","b"]})", false, ""));
}

}  // namespace
}  // namespace frugal::api
