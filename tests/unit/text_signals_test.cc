// The hit verifier's reading of queries (cache/text_signals.h) and its decision
// (verifier.h): numbers in every notation, negation by word, opposites, one-sided and swapped
// content, Chinese first-class; the shipped calibrations parse and refuse what they must.
#include "cache/text_signals.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "cache/verifier.h"
#include "cache_calibrations.h"

namespace frugal::cache {
namespace {

std::vector<std::string> Values(std::string_view text) {
  std::vector<std::string> out;
  for (const auto& n : AnalyzeText(text).numbers) out.push_back(n.value);
  return out;
}

PairDiff Diff(std::string_view a, std::string_view b) {
  return Compare(AnalyzeText(a), AnalyzeText(b));
}

// The pair is refused whatever the model: a veto.
const char* Veto(std::string_view cached, std::string_view query) {
  return ComputePairFeatures(query, cached, 0.99f).veto;
}

TEST(TextSignalsTest, NumbersInEveryNotation) {
  EXPECT_EQ(Values("price $1,299.00 for order #A-10432 on 2024-03-05"),
            (std::vector<std::string>{"1299", "10432", "2024-03-05"}));
  EXPECT_EQ(Values("24.90 or 024.9"), (std::vector<std::string>{"24.9", "24.9"}));
  EXPECT_EQ(Values("no numbers here"), std::vector<std::string>{});
  // Chinese numerals, with the colloquial tail and a leading ASCII number.
  EXPECT_EQ(Values("三百元"), std::vector<std::string>{"300"});
  EXPECT_EQ(Values("两千五"), std::vector<std::string>{"2500"});
  EXPECT_EQ(Values("1.5万"), std::vector<std::string>{"15000"});
  EXPECT_EQ(Values("十一件"), std::vector<std::string>{"11"});
  EXPECT_EQ(Values("一百零五"), std::vector<std::string>{"105"});
  EXPECT_EQ(Values("三万五"), std::vector<std::string>{"35000"});
  // Full-width digits are ASCII after NFKC.
  EXPECT_EQ(Values("３００元"), std::vector<std::string>{"300"});
  // English number words.
  EXPECT_EQ(Values("twenty five dollars"), std::vector<std::string>{"25"});
  EXPECT_EQ(Values("a one hundred dollar gift card"), std::vector<std::string>{"100"});
  EXPECT_EQ(Values("which one is cheaper"), std::vector<std::string>{});
  // Dates: month/day however written.
  EXPECT_EQ(Values("双十一"), std::vector<std::string>{"d11/11"});
  EXPECT_EQ(Values("11月11日"), std::vector<std::string>{"d11/11"});
  EXPECT_EQ(Values("May 3"), std::vector<std::string>{"d5/3"});
  EXPECT_EQ(Values("the 30th of November"), std::vector<std::string>{"d11/30"});
  // Idioms with numeral characters are not quantities; a measured 一 is.
  EXPECT_EQ(Values("能一起发货吗，稍等一下"), std::vector<std::string>{});
  EXPECT_EQ(Values("买一件送一件"), (std::vector<std::string>{"1", "1"}));
}

TEST(TextSignalsTest, SameQuantityInOtherNotationsMatches) {
  for (auto [a, b] : {std::pair{"300元可以吗", "三百元可以吗"},
                      {"１.５万的手机", "15000的手机"},
                      {"orders over $50", "orders over fifty dollars"},
                      {"双十一有活动吗", "11月11日有活动吗"},
                      {"双十一有活动吗", "11.11有活动吗"},
                      {"a second bag", "a 2nd bag"}}) {
    EXPECT_FALSE(Diff(a, b).numbers_differ) << a << " / " << b;
  }
  for (auto [a, b] : {std::pair{"三百元", "四百元"},
                      {"３００", "４００"},
                      {"双十一", "双十二"},
                      {"两千五", "两千"},
                      {"1.5万", "2万"},
                      {"price of item 1299", "price of item 1300"},
                      {"May 3", "May 5"},
                      {"11月11日", "12月12日"},
                      {"2 pairs of socks", "3 pairs of socks"}}) {
    EXPECT_TRUE(Diff(a, b).numbers_differ) << a << " / " << b;
  }
}

TEST(TextSignalsTest, ChineseArticleOneIsNoQuantityAgainstNoNumber) {
  // 一 + a measure word of things is mostly "a": against a text without numbers it does not
  // refuse the pair.
  for (auto [a, b] : {std::pair{"我想办一张信用卡", "怎么申请信用卡"},
                      {"能给我发一份贷款合同吗", "在哪里查看借款合同"},
                      {"有一笔不认识的扣款记录", "莫名其妙被扣款了"},
                      {"我想换一个颜色", "可以换颜色吗"}}) {
    EXPECT_FALSE(Diff(a, b).numbers_differ) << a << " / " << b;
    EXPECT_FALSE(Diff(b, a).numbers_differ) << b << " / " << a;
    EXPECT_EQ(Veto(a, b), nullptr) << a << " / " << b;
  }
  // Against another number it is 1; time and money measures are values; digits are counts.
  for (auto [a, b] : {std::pair{"买一件包邮吗", "买两件包邮吗"},
                      {"买一件包邮吗", "买2件包邮吗"},
                      {"还款日过了一天算逾期吗", "还款日过了算逾期吗"},
                      {"借一万元利息多少", "借钱利息多少"},
                      {"买1件包邮吗", "包邮吗"}}) {
    EXPECT_TRUE(Diff(a, b).numbers_differ) << a << " / " << b;
    EXPECT_TRUE(Diff(b, a).numbers_differ) << b << " / " << a;
  }
  EXPECT_TRUE(AnalyzeText("一张卡").numbers.at(0).indefinite);
  EXPECT_FALSE(AnalyzeText("一天").numbers.at(0).indefinite);
  EXPECT_FALSE(AnalyzeText("1张卡").numbers.at(0).indefinite);
}

TEST(TextSignalsTest, NegationByWordNotByCharacter) {
  EXPECT_EQ(AnalyzeText("I didn't get it, not once").negations, 2);
  EXPECT_EQ(AnalyzeText("I did get it").negations, 0);
  EXPECT_EQ(AnalyzeText("这个不能退货").negations, 1);
  EXPECT_EQ(AnalyzeText("服务不错").negations, 0);
  EXPECT_EQ(AnalyzeText("支持七天无理由退货吗").negations, 0);  // 无理由 is the policy's name
  EXPECT_EQ(AnalyzeText("七天无法退货吗").negations, 1);
  EXPECT_EQ(AnalyzeText("非会员能买吗").negations, 1);
  EXPECT_EQ(AnalyzeText("非常满意").negations, 0);
  EXPECT_EQ(AnalyzeText("别的颜色有吗").negations, 0);
  EXPECT_EQ(AnalyzeText("没货了吗").negations, 1);
  // A-not-A questions ask; they do not negate.
  for (const char* q :
       {"是不是包邮", "能不能退", "可不可以退", "有没有货", "支不支持七天无理由", "包不包邮"}) {
    EXPECT_EQ(AnalyzeText(q).negations, 0) << q;
  }
  EXPECT_EQ(AnalyzeText("是不包邮").negations, 1);
  EXPECT_STREQ(Veto("是不是包邮", "是不包邮"), "negation");
  EXPECT_STREQ(Veto("支持七天无理由退货吗", "七天无法退货吗"), "negation");
  EXPECT_EQ(Veto("包邮吗", "是不是包邮"), nullptr);
  EXPECT_EQ(Veto("可以退吗", "能不能退"), nullptr);
  EXPECT_STREQ(Veto("Is the gift card refundable?", "Is the gift card non-refundable?"),
               "negation");
  EXPECT_STREQ(Veto("Is the hoodie in stock?", "Is the hoodie out of stock?"), "negation");
  EXPECT_EQ(Veto("can't log in", "cannot log in"), nullptr);
  EXPECT_STREQ(Veto("Can I get a refund without a receipt?", "Can I get a refund with a receipt?"),
               "negation");
}

TEST(TextSignalsTest, OppositesAreRefused) {
  for (auto [a, b] : {std::pair{"How do I subscribe to the newsletter?",
                                "How do I unsubscribe from the newsletter?"},
                      {"Can I increase my order quantity?", "Can I decrease my order quantity?"},
                      {"怎么订阅短信通知", "怎么退订短信通知"},
                      {"怎么增加收货地址", "怎么减少收货地址"},
                      {"门店几点开门", "门店几点关门"},
                      {"How do I opt in to SMS offers?", "How do I opt out of SMS offers?"}}) {
    EXPECT_STREQ(Veto(a, b), "opposite") << a << " / " << b;
  }
  // "unsubscribe" does not contain an opposite of itself.
  EXPECT_EQ(Veto("how do I unsubscribe", "how can I unsubscribe please"), nullptr);
}

TEST(TextSignalsTest, ContentDifferencesBySide) {
  // A qualifier added on one side.
  PairDiff d = Diff("What is the return policy?", "What is the return policy for shoes?");
  EXPECT_EQ(d.unmatched_a, 0);
  EXPECT_EQ(d.only_b, std::vector<std::string>{"shoe"});
  // A swapped object, in Chinese: the differing characters, as spans.
  d = Diff("可以换尺码吗", "可以换颜色吗");
  EXPECT_EQ(d.only_a, std::vector<std::string>{"尺码"});
  EXPECT_EQ(d.only_b, std::vector<std::string>{"颜色"});
  // apply vs get a coupon code: "use" against nothing.
  d = Diff("How do I apply a coupon code?", "How do I get a coupon code?");
  EXPECT_EQ(d.unmatched_a + d.unmatched_b, 1);
  // Synonyms, stems, typos and fillers are no difference.
  for (auto [a, b] :
       {std::pair{"How much does shipping cost?", "What are the delivery fees?"},
        {"how long do refuns take", "how long do refunds take"},
        {"hi, could you please tell me how long refunds take", "how long do refunds take"},
        {"how do i retrun an item", "How do I return an item?"},
        {"亲，请问快递多久能到", "物流多长时间到货"},
        {"包邮吗？", "免运费吗"},
        {"Dear customer service, where is my parcel?", "where is my package"}}) {
    d = Diff(a, b);
    EXPECT_EQ(d.unmatched_a + d.unmatched_b, 0)
        << a << " / " << b << ": " << testing::PrintToString(d.only_a) << " "
        << testing::PrintToString(d.only_b);
  }
  // Different questions: how long vs how.
  EXPECT_STREQ(Veto("How long does a warranty claim take?", "How do I make a warranty claim?"),
               "question");
}

TEST(TextSignalsTest, LongTextsAreCappedAndLongMessagesMustMatch) {
  const std::string body(kMaxSignalBytes + 1, 'a');
  EXPECT_TRUE(AnalyzeText(body).too_long);
  EXPECT_STREQ(Veto(body, body), "too_long");
  // A long pasted message with one more sentence at the end.
  std::string msg;
  for (int i = 0; i < 30; ++i)
    msg += "I ordered the blue jacket in size medium on Monday and it arrived late. ";
  EXPECT_STREQ(
      Veto(msg + "Summarize.", msg + "Note: Alice wants to cancel her premium plan. Summarize."),
      "long_differs");
  EXPECT_EQ(Veto("Hi, " + msg + "Summarize.", msg + " Summarize."), nullptr);
  // The added request uses only words the message already has: still another question.
  std::string mail;
  for (int i = 0; i < 6; ++i)
    mail +=
        "Please refund order 5521: the jacket arrived late, the scarf was damaged, and the socks "
        "are missing. ";
  EXPECT_STREQ(
      Veto(mail + "What should I do?", mail + "Please refund the scarf. What should I do?"),
      "long_differs");
  // Short texts too: a clause repeating words of the question is content of its own.
  const PairDiff d = Diff("外套晚到了，围巾坏了，请问怎么退款？",
                          "外套晚到了，围巾坏了，围巾请退款，请问怎么退款？");
  EXPECT_GT(d.unmatched_b, 0);
}

TEST(TextSignalsTest, AnalysisIsLinearInTheText) {
  // 16 KiB of varied words, numbers and Chinese: analysed well within a few milliseconds.
  std::string text;
  for (int i = 0; text.size() < kMaxSignalBytes - 64; ++i)
    text += "order " + std::to_string(i) + " 退货 shipping 不能 ";
  const auto t0 = std::chrono::steady_clock::now();
  const PairDiff d = Compare(AnalyzeText(text), AnalyzeText(text + "x"));
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(d.too_long);
  EXPECT_LT(ms, 500.0) << "quadratic work would take seconds here";
}

TEST(VerifierTest, ShippedCalibrationsParse) {
  int n = 0;
  for (const char* const* p = kCacheCalibrationJson; *p != nullptr; ++p, ++n) {
    auto c = ParseCalibration(*p);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_FALSE(c->fingerprint.empty());
    EXPECT_GT(c->recall_threshold, 0.3f);  // MiniLM spreads paraphrases wider than e5
    EXPECT_LT(c->recall_threshold, 1.0f);
    EXPECT_GE(c->target_precision, 0.95);
    EXPECT_NE(FindCalibration(c->fingerprint), nullptr);
  }
  EXPECT_GE(n, 1) << "data/cache_calibration holds the default embedder's calibration";
  EXPECT_FALSE(ParseCalibration("{}").ok());
  EXPECT_FALSE(ParseCalibration("not json").ok());
}

TEST(VerifierTest, ShippedModelRefusesOneSidedAndSwappedContentAtHighCosine) {
  for (const char* const* p = kCacheCalibrationJson; *p != nullptr; ++p) {
    auto c = ParseCalibration(*p);
    ASSERT_TRUE(c.ok());
    const PairVerifier v(std::make_shared<VerifierCalibration>(*c));
    // Even at a cosine no real pair of these reaches, one-sided qualifiers are refused...
    EXPECT_FALSE(v.Decide(ComputePairFeatures("What is the return policy for shoes?",
                                              "What is the return policy?", 0.99f))
                     .accept)
        << c->embedder;
    EXPECT_FALSE(v.Decide(ComputePairFeatures("可以换颜色吗", "可以换尺码吗", 0.99f)).accept)
        << c->embedder;
    // ...and the same content with a greeting is accepted at a cosine such a pair has.
    EXPECT_TRUE(v.Decide(ComputePairFeatures("how long do refunds take?",
                                             "Hi! How long do refunds take? Thanks", 0.95f))
                    .accept)
        << c->embedder;
  }
}

TEST(VerifierTest, StrictRuleWithoutCalibration) {
  const PairVerifier strict;
  EXPECT_STREQ(strict.name(), "strict");
  EXPECT_TRUE(strict
                  .Decide(ComputePairFeatures("how long do refunds take",
                                              "How long do refunds take?", 0.9f))
                  .accept);
  EXPECT_FALSE(strict
                   .Decide(ComputePairFeatures("How do I wash the cotton sweater?",
                                               "How do I wash the wool sweater?", 0.99f))
                   .accept);
}

TEST(CanonicalTextTest, DropsSpacesAndPunctuationNotNumbers) {
  EXPECT_EQ(CanonicalText("退款 24.99元？ Hello,  World!"), "退款24.99元helloworld");
  EXPECT_NE(CanonicalText("退款24.99元"), CanonicalText("退款249.9元"));
}

}  // namespace
}  // namespace frugal::cache
