// ExtractNumbers (src/text/numbers.h), the answer reading the quantizer's numeric check uses:
// full-width digits, Chinese numerals and mixed forms read as their values, and the Chinese words
// made of numeral characters left alone.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "text/numbers.h"

namespace frugal::text {
namespace {

using Strings = std::vector<std::string>;

// The values of the answer reading.
Strings Answer(std::string_view text) {
  return NumberValues(ExtractNumbers(text, NumberReading::kAnswer));
}

struct Case {
  const char* text;
  Strings want;
};

void ExpectAll(const std::vector<Case>& cases) {
  for (const Case& c : cases) EXPECT_EQ(Answer(c.text), c.want) << c.text;
}

TEST(NumbersTest, FullWidthDigitsPointAndComma) {
  ExpectAll({
      {"价格是１２９９元", {"1299"}},
      {"１２．５０", {"12.5"}},
      {"１，２９９．００", {"1299"}},
      {"１２，３４５，６７８", {"12345678"}},
      {"共５件，每件１２．５元", {"5", "12.5"}},
      {"订单号 48213，总价 1299元，共3件", {"48213", "1299", "3"}},
      // "，" is the ordinary Chinese comma unless both neighbours are full-width digits.
      {"库存12，300件已售", {"12", "300"}},
      {"１２，300", {"12", "300"}},
      {"１，２", {"1", "2"}},
      {"３．", {"3"}},
      {"０００７", {"7"}},
  });
  EXPECT_EQ(Answer("１２９９"), Answer("1299"));
  EXPECT_EQ(Answer("１，２９９．５"), Answer("1,299.50"));
}

TEST(NumbersTest, ChineseNumeralsByValue) {
  ExpectAll({
      {"三百元", {"300"}},
      {"两千五百元", {"2500"}},
      {"一千零五元", {"1005"}},
      {"十五天", {"15"}},
      {"十天", {"10"}},
      {"二十天", {"20"}},
      {"一百一十元", {"110"}},
      {"三百二十五元", {"325"}},
      {"九千九百九十九元", {"9999"}},
      {"一万元", {"10000"}},
      {"一万零五百元", {"10500"}},
      {"一万两千元", {"12000"}},
      {"十万元", {"100000"}},
      {"三十五万元", {"350000"}},
      {"一百万元", {"1000000"}},
      {"三亿元", {"300000000"}},
      {"三亿五千万元", {"350000000"}},
      {"一万亿元", {"1000000000000"}},
      {"二点五公斤", {"2.5"}},
      {"零点五元", {"0.5"}},
      {"十二点五元", {"12.5"}},
      {"一点五万元", {"15000"}},
      {"三点二亿元", {"320000000"}},
      // The spoken shortening: the last digit is the next place down.
      {"两千五", {"2500"}},
      {"一百五", {"150"}},
      {"三万五", {"35000"}},
      {"一亿五", {"150000000"}},
      // Financial forms.
      {"壹仟贰佰叁拾肆元", {"1234"}},
      {"伍佰元整", {"500"}},
      {"拾元", {"10"}},
      {"壹萬元", {"10000"}},
  });
  EXPECT_EQ(Answer("两千五百元"), Answer("2500元"));
  EXPECT_EQ(Answer("总价三百二十五元"), Answer("总价￥325"));
}

TEST(NumbersTest, CountsDatesAndTimes) {
  ExpectAll({
      {"三件", {"3"}},
      {"两件", {"2"}},
      {"一个", {"1"}},
      {"七天无理由退货", {"7"}},
      {"三个工作日内", {"3"}},
      {"两周", {"2"}},
      {"五折", {"5"}},
      {"打八五折", {"85"}},
      {"八折", {"8"}},
      {"十分钟", {"10"}},
      {"两小时", {"2"}},
      {"下午三点发货", {"3"}},
      {"三点五十分", {"3", "50"}},
      {"第一", {"1"}},
      {"第三次", {"3"}},
      {"三月十七日", {"3", "17"}},
      {"十一月十一日", {"11", "11"}},
      {"二〇二六年三月五日", {"2026", "3", "5"}},
      {"一九九八年", {"1998"}},
      {"二零二四年", {"2024"}},
      {"库存为零。", {"0"}},
      {"零元", {"0"}},
      {"一点钟", {"1"}},
  });
  EXPECT_EQ(Answer("二〇二六年三月五日"), Answer("2026年3月5日"));
  EXPECT_EQ(Answer("三月十七日"), Answer("3月17日"));
}

TEST(NumbersTest, MixedDigitsAndMultipliers) {
  ExpectAll({
      {"1.5万", {"15000"}},
      {"1.5万元", {"15000"}},
      {"2千", {"2000"}},
      {"3亿", {"300000000"}},
      {"5百元", {"500"}},
      {"3千万", {"30000000"}},
      {"100万元", {"1000000"}},
      {"1,500万", {"15000000"}},
      {"0.35亿", {"35000000"}},
      {"1万2千", {"12000"}},
      {"2千5百", {"2500"}},
      {"１．５万", {"15000"}},
      {"12.345万", {"123450"}},
      // 千 before 克 米 瓦 卡 is "kilo".
      {"2千克", {"2"}},
      {"5千米", {"5"}},
      {"3千瓦", {"3"}},
      {"两千克", {"2"}},
      {"1.5千克", {"1.5"}},
  });
  EXPECT_EQ(Answer("1.5万"), Answer("一万五千"));
  EXPECT_EQ(Answer("1.5万"), Answer("15,000"));
  EXPECT_EQ(Answer("2千"), Answer("两千"));
}

TEST(NumbersTest, PercentagesAndYuanJiaoFen) {
  // A percentage is its number, as "10%" reads "10".
  ExpectAll({
      {"百分之十", {"10"}},
      {"百分之二十五", {"25"}},
      {"百分之十二点五", {"12.5"}},
      {"百分之零点五", {"0.5"}},
      {"百分之12", {"12"}},
      {"百分之百", {"100"}},
      {"百分百正品", {"100"}},
      {"三元五角", {"3.5"}},
      {"12元3角5分", {"12.35"}},
      {"十块五毛", {"10.5"}},
      {"两元两角", {"2.2"}},
      {"3元", {"3"}},
      {"3元钱，5角", {"3", "5"}},
  });
  EXPECT_EQ(Answer("百分之十"), Answer("10%"));
  EXPECT_EQ(Answer("三元五角"), Answer("3.50元"));
}

TEST(NumbersTest, WordsMadeOfNumeralsAreNotNumbers) {
  for (const char* text : {
           "一些",     "一下",       "一起",     "一定",       "一样",   "一直",     "一般",
           "一切",     "一共",       "统一",     "唯一",       "一旦",   "之一",     "十分感谢",
           "万一坏了", "千万不要",   "百度",     "百货",       "四川",   "三星手机", "五金",
           "九州",     "一点小问题", "稍等一点", "周一到周五", "星期三", "礼拜五",   "每周日",
           "一一对应", "三三两两",   "三四个",   "七八天",     "两三件", "几十个",   "数百人",
           "十几个",   "零件",       "零售",     "零钱",       "百分比", "万分感谢", "三思",
           "一路顺风", "千奇百怪",   "八卦",
       }) {
    EXPECT_EQ(Answer(text), Strings{}) << text;
  }
  // Around real numbers, the words are still skipped.
  ExpectAll({
      {"一共三件，一起发货", {"3"}},
      {"请稍等一下，退款三百元会在三个工作日内到账", {"300", "3"}},
      {"周一到周五发货，周末不发", {}},
      {"50多万", {"50"}},
      {"10几万", {"10"}},
      {"千万别担心，只要二十元", {"20"}},
  });
}

TEST(NumbersTest, AsciiRulesUnchanged) {
  ExpectAll({
      {"The total is $1,299.00 for 3 items.", {"1299", "3"}},
      {"Order #A-48213-77 has shipped", {"48213", "77"}},
      {"on 2024-03-05 at 10:30", {"2024", "3", "5", "10", "30"}},
      {"version 1.2.3", {"1.2", "3"}},
      {"1,2345", {"1", "2345"}},
      {"tracking 1Z999AA10123456784 and 123456789012345678901234",
       {"1", "999", "10123456784", "123456789012345678901234"}},
      {"2024年3月5日", {"2024", "3", "5"}},
      {"a 15% discount", {"15"}},
      {"", {}},
  });
}

TEST(NumbersTest, DifferentValuesDiffer) {
  EXPECT_NE(Answer("三百元"), Answer("三千元"));
  EXPECT_NE(Answer("两千五百"), Answer("两千零五"));
  EXPECT_NE(Answer("1.5万"), Answer("1.5千"));
  EXPECT_NE(Answer("一千零五"), Answer("一千五"));
  EXPECT_NE(Answer("百分之十"), Answer("百分之一"));
  EXPECT_NE(Answer("二点五"), Answer("二十五"));
}

TEST(NumbersTest, MalformedTextIsSafe) {
  // Broken UTF-8, lone continuation bytes, numerals at the very end or alone.
  EXPECT_EQ(Answer(std::string("\xE4\xB8", 2)), Strings{});
  EXPECT_EQ(Answer(std::string("12\xFF"
                               "34")),
            (Strings{"12", "34"}));
  EXPECT_EQ(Answer("点"), Strings{});
  EXPECT_EQ(Answer("十"), Strings{});
  EXPECT_EQ(Answer("万"), Strings{});
  EXPECT_EQ(Answer("零"), Strings{"0"});
  EXPECT_EQ(Answer("百分之"), Strings{});
  EXPECT_EQ(Answer("一千百"), Strings{});
  EXPECT_EQ(Answer("九九九九九九九九九九九九九九九九九九九九九九年"), Strings{});  // too long
  EXPECT_EQ(Answer("99999999999999999999万"), Strings{"99999999999999999999"});
}

}  // namespace
}  // namespace frugal::text
