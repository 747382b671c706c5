// The lexicons are data (data/lexicon/*.txt, text/lexicon.h): every file compiled in reads with
// its kind, is not empty and has no duplicates; a malformed file is refused with its name and
// line.
#include "text/lexicon.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace frugal::text {
namespace {

size_t ReadCount(const EmbeddedLexicon& f, Status* status) {
  switch (f.kind) {
    case LexiconKind::kWordList: {
      auto r = ReadWordList(f.name, f.text);
      *status = r.status();
      return r.ok() ? r->size() : 0;
    }
    case LexiconKind::kNumberTable: {
      auto r = ReadNumberTable(f.name, f.text);
      *status = r.status();
      return r.ok() ? r->size() : 0;
    }
    case LexiconKind::kGroups: {
      auto r = ReadGroups(f.name, f.text);
      *status = r.status();
      return r.ok() ? r->size() : 0;
    }
    case LexiconKind::kPairs: {
      auto r = ReadPairs(f.name, f.text);
      *status = r.status();
      return r.ok() ? r->size() : 0;
    }
  }
  return 0;
}

TEST(LexiconTest, EveryShippedFileReadsAndIsNotEmpty) {
  const auto files = EmbeddedLexicons();
  EXPECT_GE(files.size(), 21u) << "data/lexicon/*.txt compiled in";
  for (const EmbeddedLexicon& f : files) {
    Status st;
    const size_t n = ReadCount(f, &st);
    EXPECT_TRUE(st.ok()) << st.ToString();
    EXPECT_GT(n, 0u) << f.name;
  }
  // The tables the readers use, by name.
  EXPECT_EQ(LexiconNumbers("zh_digits").size(), 12u);  // 零〇一二两三四五六七八九
  EXPECT_EQ(LexiconNumbers("zh_powers").size(), 5u);   // 十百千万亿
  EXPECT_GT(LexiconWords("en_stopwords").size(), 150u);
  EXPECT_GT(LexiconGroups("zh_synonyms").size(), 20u);
  EXPECT_GT(LexiconPairs("en_opposites").size(), 40u);
}

TEST(LexiconTest, ArticleMeasuresAreMeasures) {
  // An article measure not in the measure list would never follow a number read as one.
  const std::vector<std::string> measures = LexiconWords("zh_query_measure_chars");
  for (const std::string& m : LexiconWords("zh_query_article_measures"))
    EXPECT_EQ(std::count(measures.begin(), measures.end(), m), 1) << m;
}

TEST(LexiconTest, SynonymsAndQuestionsShareNoSurface) {
  // A surface in both files would be read as whichever is applied last.
  for (const char* lang : {"en", "zh"}) {
    std::vector<std::string> seen;
    for (const char* kind : {"_synonyms", "_questions"}) {
      for (const LexiconGroup& g : LexiconGroups(std::string(lang) + kind)) {
        for (const std::string& s : g.surfaces) {
          EXPECT_EQ(std::count(seen.begin(), seen.end(), s), 0) << lang << ": " << s;
          seen.push_back(s);
        }
      }
    }
  }
}

TEST(LexiconTest, Syntax) {
  auto words = ReadWordList("t", "# comment\n\n  一下  \r\n一起\n");
  ASSERT_TRUE(words.ok());
  EXPECT_EQ(*words, (std::vector<std::string>{"一下", "一起"}));
  auto table = ReadNumberTable("t", "零 = 0\n〇 = 0\n亿 = 8");
  ASSERT_TRUE(table.ok());
  EXPECT_EQ(table->back(), (std::pair<std::string, int>{"亿", 8}));
  auto groups = ReadGroups("t", "ship = shipping | send out\n= thanks | hi there\n");
  ASSERT_TRUE(groups.ok());
  EXPECT_EQ(groups->at(0), (LexiconGroup{"ship", {"shipping", "send out"}}));
  EXPECT_EQ(groups->at(1), (LexiconGroup{"", {"thanks", "hi there"}}));
  auto pairs = ReadPairs("t", "open = close | closing\n");
  ASSERT_TRUE(pairs.ok());
  EXPECT_EQ(pairs->at(0).other, (std::vector<std::string>{"close", "closing"}));
}

TEST(LexiconTest, MalformedFilesAreRefusedWithFileAndLine) {
  auto expect_error = [](const Status& st, const std::string& want) {
    EXPECT_FALSE(st.ok());
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find(want), std::string::npos) << st.ToString();
  };
  expect_error(ReadWordList("words", "a\nb\na\n").status(), "lexicon words:3: duplicate 'a'");
  expect_error(ReadWordList("words", "a = b\n").status(), "words:1: expected one word a line");
  expect_error(ReadNumberTable("digits", "# x\n一 = one\n").status(),
               "digits:2: 'one' is not an integer");
  expect_error(ReadNumberTable("digits", "一 = 1\n一 = 2\n").status(), "digits:2: duplicate '一'");
  expect_error(ReadNumberTable("digits", "一\n").status(), "digits:1: expected 'key = number'");
  expect_error(ReadGroups("syn", "a = b | c\nd = c\n").status(), "syn:2: duplicate 'c'");
  expect_error(ReadGroups("syn", "a = b | | c\n").status(), "syn:1: empty item");
  expect_error(ReadGroups("syn", "a = b = c\n").status(), "syn:1: more than one '='");
  expect_error(ReadGroups("syn", "a = b\na = c\n").status(), "syn:2: duplicate");
  expect_error(ReadPairs("opp", "up = down\ndown = low\n").status(), "opp:2: duplicate 'down'");
  expect_error(ReadPairs("opp", "= down\n").status(), "opp:1: expected 'a | b = c | d'");
  expect_error(ParseLexicon("any", "a |\n").status(), "any:1: empty item");
}

}  // namespace
}  // namespace frugal::text
