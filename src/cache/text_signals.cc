#include "cache/text_signals.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace frugal::cache {
namespace {

// ---------------------------------------------------------------------------------------------
// Text -> tokens

enum class Kind { kWord, kNumber, kHan };

struct Token {
  Kind kind;
  std::string text;   // lower-case word, canonical digits, or one Han character (UTF-8)
  uint32_t cp = 0;    // kHan: the code point
  bool gap = true;    // a space or punctuation before it (Han runs and "1.5万" need adjacency)
  bool used = false;  // consumed by a number, a negation or a lexicon match
};

bool IsHan(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0xF900 && cp <= 0xFAFF) || cp == 0x3007;  // 〇
}

bool IsLetter(uint32_t cp) {
  if (cp < 128) return std::isalpha(static_cast<int>(cp)) != 0;
  const utf8proc_category_t c = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT ||
         c == UTF8PROC_CATEGORY_LM || c == UTF8PROC_CATEGORY_LO || c == UTF8PROC_CATEGORY_MN;
}

// NFKC + case folding; invalid bytes become U+FFFD first.
std::string Normalize(std::string_view text) {
  std::string valid;
  valid.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    utf8proc_int32_t cp = 0;
    const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + i),
                                    static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
    if (n <= 0) {
      valid += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    valid.append(text.substr(i, static_cast<size_t>(n)));
    i += static_cast<size_t>(n);
  }
  utf8proc_uint8_t* out = nullptr;
  const auto n = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t*>(valid.data()),
      static_cast<utf8proc_ssize_t>(valid.size()), &out,
      static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT |
                                     UTF8PROC_CASEFOLD | UTF8PROC_IGNORE));
  if (n < 0) return valid;
  std::string s(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
  std::free(out);
  return s;
}

// Canonical digits: thousands separators dropped, 24.90 -> 24.9, 007 -> 7; dates and times
// (2024-03-05, 10:30, 11/11) keep their separators.
std::string CanonicalDigits(std::string n) {
  n.erase(std::remove(n.begin(), n.end(), ','), n.end());
  if (n.find_first_of("-/:") != std::string::npos) return n;
  if (n.find('.') != std::string::npos) {
    while (!n.empty() && n.back() == '0') n.pop_back();
    if (!n.empty() && n.back() == '.') n.pop_back();
  }
  const size_t nz = n.find_first_not_of('0');
  if (nz == std::string::npos) return "0";
  return n[nz] == '.' ? n.substr(nz - 1) : n.substr(nz);
}

std::vector<Token> Tokenize(const std::string& s) {
  std::vector<Token> out;
  bool gap = true;
  size_t i = 0;
  auto cp_at = [&](size_t at, uint32_t* cp) -> size_t {
    utf8proc_int32_t c = 0;
    const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + at),
                                    static_cast<utf8proc_ssize_t>(s.size() - at), &c);
    *cp = n > 0 ? static_cast<uint32_t>(c) : 0xFFFD;
    return n > 0 ? static_cast<size_t>(n) : 1;
  };
  while (i < s.size()) {
    uint32_t cp = 0;
    const size_t len = cp_at(i, &cp);
    if (cp < 128 && std::isdigit(static_cast<int>(cp))) {
      // Digits with inner separators: 1,299.00  2024-03-05  10:30  11.11
      std::string n;
      size_t j = i;
      while (j < s.size()) {
        const char c = s[j];
        if (std::isdigit(static_cast<unsigned char>(c))) {
          n += c;
          ++j;
        } else if ((c == '.' || c == ',' || c == '-' || c == '/' || c == ':') && j + 1 < s.size() &&
                   std::isdigit(static_cast<unsigned char>(s[j + 1])) && !n.empty()) {
          n += c;
          ++j;
        } else {
          break;
        }
      }
      out.push_back({Kind::kNumber, CanonicalDigits(n), 0, gap});
      gap = false;
      i = j;
      continue;
    }
    if (IsHan(cp)) {
      out.push_back({Kind::kHan, s.substr(i, len), cp, gap});
      gap = false;
      i += len;
      continue;
    }
    if (IsLetter(cp)) {
      std::string w;
      size_t j = i;
      while (j < s.size()) {
        uint32_t c = 0;
        const size_t l = cp_at(j, &c);
        if (IsLetter(c) && !IsHan(c)) {
          w.append(s, j, l);
          j += l;
        } else if ((c == '\'' || c == 0x2019) && !w.empty() && j + l < s.size() &&
                   std::isalpha(static_cast<unsigned char>(s[j + l]))) {
          w += '\'';  // don't, can't, item's
          j += l;
        } else {
          break;
        }
      }
      out.push_back({Kind::kWord, w, 0, gap});
      gap = false;
      i = j;
      continue;
    }
    gap = true;
    i += len;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// English word forms

// Light stemming so that inflections compare equal: refunds / refunded / refunding -> refund,
// deliveries -> delivery, charged / charge -> charg. Words of 3 letters or fewer stay.
std::string Stem(std::string w) {
  if (w.size() > 2 && w.ends_with("'s")) w.resize(w.size() - 2);
  if (w.size() <= 3) return w;
  auto undouble = [](std::string& x) {
    if (x.size() >= 3 && x[x.size() - 1] == x[x.size() - 2] &&
        std::string("aeiouls").find(x.back()) == std::string::npos)
      x.pop_back();
  };
  if (w.size() > 4 && w.ends_with("ies")) {
    w.resize(w.size() - 3);
    w.push_back('y');
  } else if (w.size() > 5 && w.ends_with("sses")) {
    w.resize(w.size() - 2);
  } else if (w.size() > 5 && w.ends_with("ing")) {
    w.resize(w.size() - 3);
    undouble(w);
  } else if (w.size() > 4 && w.ends_with("ed") && !w.ends_with("eed")) {
    w.resize(w.size() - 2);
    undouble(w);
  } else if (w.size() > 4 && (w.ends_with("ches") || w.ends_with("shes") || w.ends_with("xes") ||
                              w.ends_with("zes"))) {
    w.resize(w.size() - 2);
  } else if (w.size() > 3 && w.back() == 's' && !w.ends_with("ss") && !w.ends_with("us") &&
             !w.ends_with("is")) {
    w.pop_back();
  } else if (w.size() > 5 && w.ends_with("ly")) {
    w.resize(w.size() - 2);
  }
  if (w.size() > 4 && w.back() == 'e') w.pop_back();
  return w;
}

// Function words and fillers: what a polite or chatty rewording adds without changing the
// question. Question words are not here (how / when / where ask different things).
const std::unordered_set<std::string>& EnglishStopwords() {
  static const std::unordered_set<std::string> kSet = [] {
    std::unordered_set<std::string> s;
    for (const char* w :
         {"a",         "an",      "the",         "and",        "or",        "but",       "so",
          "to",        "of",      "in",          "on",         "at",        "by",        "for",
          "from",      "with",    "into",        "onto",       "about",     "as",        "is",
          "are",       "was",     "were",        "be",         "been",      "being",     "am",
          "do",        "does",    "did",         "done",       "doing",     "have",      "has",
          "had",       "having",  "i",           "me",         "my",        "mine",      "myself",
          "we",        "us",      "our",         "ours",       "you",       "your",      "yours",
          "he",        "him",     "his",         "she",        "her",       "it",        "its",
          "they",      "them",    "their",       "this",       "that",      "these",     "those",
          "there",     "here",    "can",         "could",      "would",     "will",      "shall",
          "should",    "may",     "might",       "must",       "please",    "pls",       "plz",
          "kindly",    "hi",      "hello",       "hey",        "dear",      "thanks",    "thank",
          "thx",       "ty",      "cheers",      "sir",        "madam",     "team",      "support",
          "tell",      "know",    "let",         "wonder",     "wondering", "wondered",  "curious",
          "question",  "quick",   "quickly",     "just",       "really",    "actually",  "also",
          "still",     "yet",     "again",       "then",       "now",       "currently", "anyone",
          "somebody",  "someone", "any",         "some",       "possible",  "able",      "way",
          "ok",        "okay",    "like",        "want",       "wanted",    "need",      "needed",
          "help",      "assist",  "guys",        "folks",      "um",        "uh",        "well",
          "oh",        "sorry",   "excuse",      "appreciate", "if",        "whether",   "exactly",
          "basically", "is't",    "it's",        "i'm",        "i'd",       "i've",      "i'll",
          "you're",    "what's",  "how's",       "where's",    "when's",    "there's",   "that's",
          "get",       "got",     "find",        "out",        "see",       "check",     "say",
          "explain",   "info",    "information", "details",    "detail",    "u",         "ur",
          "ya",        "yo",      "usually",     "normally",   "typically", "generally", "dollar",
          "dollars",   "usd",     "bucks",       "buck",       "percent",   "pct",       "ask",
          "asking",    "advance", "bother",      "bothering",  "morning",   "afternoon", "evening",
          "regards",   "best",    "greetings",   "lot",        "much",      "very",      "so",
          "many",      "ive",     "im",          "whats",      "hows",      "wheres",    "whens",
          "thats",     "theres",  "youre",       "offer",      "provide",   "usual",     "take",
          "takes"}) {
      s.insert(w);
    }
    return s;
  }();
  return kSet;
}

// Words that negate, whole.
const std::unordered_set<std::string>& EnglishNegations() {
  static const std::unordered_set<std::string> kSet = {"not",           "no",
                                                       "never",         "none",
                                                       "nothing",       "nobody",
                                                       "nowhere",       "neither",
                                                       "nor",           "without",
                                                       "cannot",        "cant",
                                                       "wont",          "dont",
                                                       "doesnt",        "didnt",
                                                       "isnt",          "arent",
                                                       "wasnt",         "werent",
                                                       "havent",        "hasnt",
                                                       "hadnt",         "shouldnt",
                                                       "wouldnt",       "couldnt",
                                                       "mustnt",        "unable",
                                                       "non",           "unavailable",
                                                       "invalid",       "ineligible",
                                                       "nonrefundable", "nontransferable",
                                                       "unpaid",        "undelivered",
                                                       "unused",        "unopened",
                                                       "unworn",        "unwashed",
                                                       "unsealed"};
  return kSet;
}

// ---------------------------------------------------------------------------------------------
// The lexicon: synonyms (surface -> canonical unit) and opposites (pairs kept apart).
//
// Written for customer service in English and Chinese from general knowledge of both languages;
// not derived from any evaluation set. English surfaces are stemmed like the text.

struct LexEntry {
  std::string canonical;  // the unit it becomes ("" = a function word: removed)
  int opposite = -1;      // pair id * 2 + side, or -1
  bool question = false;  // a question word (compared separately, not as content)
};

struct Lexicon {
  // English: stemmed words joined by ' ' -> entry; longest first per first word.
  std::unordered_map<std::string, LexEntry> en;
  size_t en_max_words = 1;
  // Chinese: surface -> entry; longest match over a Han run.
  std::unordered_map<std::string, LexEntry> zh;
  size_t zh_max_chars = 1;
};

std::string StemPhrase(std::string_view phrase) {
  std::string out;
  size_t i = 0;
  while (i < phrase.size()) {
    const size_t sp = phrase.find(' ', i);
    const std::string w(
        phrase.substr(i, sp == std::string_view::npos ? std::string_view::npos : sp - i));
    if (!out.empty()) out += ' ';
    out += Stem(w);
    if (sp == std::string_view::npos) break;
    i = sp + 1;
  }
  return out;
}

size_t CountChars(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

const Lexicon& GetLexicon() {
  static const Lexicon kLex = [] {
    Lexicon lx;
    auto en = [&](const std::string& canonical, std::initializer_list<const char*> surfaces,
                  bool question = false) {
      for (const char* s : surfaces) {
        const std::string k = StemPhrase(s);
        lx.en[k] = {canonical.empty() ? "" : StemPhrase(canonical), -1, question};
        lx.en_max_words =
            std::max<size_t>(lx.en_max_words, std::count(k.begin(), k.end(), ' ') + 1);
      }
    };
    auto zh = [&](const std::string& canonical, std::initializer_list<const char*> surfaces,
                  bool question = false) {
      for (const char* s : surfaces) {
        lx.zh[s] = {canonical, -1, question};
        lx.zh_max_chars = std::max(lx.zh_max_chars, CountChars(s));
      }
    };
    // --- English synonyms ---
    en("ship",
       {"shipping", "ship", "shipment", "delivery", "deliver", "postage", "dispatch", "send out"});
    en("price", {"price", "cost", "fee", "charge", "rate", "fare", "pricing"});
    en("refund", {"refund", "money back", "reimburse", "reimbursement", "pay back"});
    en("package", {"package", "parcel"});
    en("cancel", {"cancel", "call off", "cancellation"});
    en("change", {"change", "modify", "edit", "update", "alter", "amend"});
    en("account", {"account", "profile"});
    en("password", {"password", "passcode"});
    en("login", {"log in", "login", "sign in", "signin", "log on", "logon"});
    en("register", {"sign up", "signup", "register", "registration", "create an account"});
    en("coupon", {"coupon", "coupon code", "voucher", "voucher code", "promo code", "promo",
                  "discount code", "promotion code", "promotional code"});
    en("store", {"store", "shop", "outlet"});
    en("hours", {"hours", "opening hours", "opening times", "business hours", "open hours",
                 "hours of operation"});
    en("agent", {"customer service", "customer support", "human agent", "agent", "representative",
                 "live agent", "real person", "human"});
    en("email", {"email", "e-mail", "e mail"});
    en("phone", {"phone", "telephone", "phone number", "mobile number", "cell number"});
    en("broken", {"broken", "damaged", "defective", "faulty", "damage"});
    en("wrong", {"wrong", "incorrect"});
    en("lost", {"lost", "missing"});
    en("exchange", {"exchange", "swap"});
    en("track", {"track", "tracking", "trace"});
    en("invoice", {"invoice", "receipt", "bill"});
    en("giftcard", {"gift card", "giftcard", "gift certificate", "gift voucher"});
    en("warranty", {"warranty", "guarantee"});
    en("fast", {"fast", "quick", "rapid", "speedy", "faster", "quicker"});
    en("cheap", {"cheap", "inexpensive", "affordable", "cheaper"});
    en("big", {"big", "large", "bigger", "larger"});
    en("free", {"free", "free of charge", "complimentary", "no charge", "at no cost", "for free"});
    en("use", {"use", "apply", "redeem"});
    en("applyfor", {"apply for"});
    en("item", {"item", "product", "goods", "article", "merchandise"});
    en("pay", {"pay", "payment", "paying"});
    en("available", {"available", "in stock", "availability"});
    en("buy", {"buy"});
    en("order", {"order", "orders", "purchase"});
    en("arrive", {"arrive", "arrival", "reach me", "get here", "show up", "be delivered"});
    en("receive", {"receive", "get back"});
    en("day", {"day", "days", "business day", "working day"});
    en("size", {"size", "sizing"});
    en("return", {"return", "send back", "send it back"});
    en("creditcard", {"credit card", "creditcard"});
    en("debitcard", {"debit card", "debitcard"});
    en("kg", {"kg", "kgs", "kilogram", "kilograms", "kilo", "kilos"});
    en("gb", {"gb", "gig", "gigs", "gigabyte", "gigabytes"});
    en("hour", {"hour", "hours", "hr", "hrs"});
    en("minute", {"minute", "minutes", "mins"});
    en("over", {"over", "above", "more than"});
    en("point", {"point", "points", "pts", "reward points", "loyalty points"});
    en("inch", {"inch", "inches"});
    en("cm", {"cm", "centimeter", "centimeters", "centimetre", "centimetres"});
    // Fillers: greetings, thanks and hedges around the question.
    en("", {"quick question",
            "a quick question",
            "quick one",
            "thanks a lot",
            "thank you very much",
            "thank you so much",
            "thanks so much",
            "thanks in advance",
            "many thanks",
            "good morning",
            "good afternoon",
            "good evening",
            "sorry to bother you",
            "sorry to bother",
            "may i ask",
            "i would like to know",
            "i'd like to know",
            "just wondering",
            "by the way",
            "btw",
            "hi there",
            "hello there",
            "hey there",
            "is it possible",
            "is there a way",
            "i was wondering",
            "do you know",
            "can you tell me",
            "could you tell me",
            "would you tell me",
            "let me know",
            "i want to know",
            "i need to know",
            "any idea",
            "times",
            "time"});
    en("howmuch", {"how much", "how much is the price", "how much does it cost"}, true);
    en("howmany", {"how many"}, true);
    en("howlong", {"how long", "how many days", "how much time", "how soon"}, true);
    en("when", {"when", "what time", "what day", "what date"}, true);
    en("how", {"how", "in what way", "what is the way", "what's the way"}, true);
    en("where", {"where", "what place"}, true);
    en("why", {"why", "how come", "for what reason"}, true);
    en("who", {"who", "whom"}, true);
    en("what", {"what", "which"}, true);
    // --- Chinese synonyms ---
    zh("快递", {"快递", "物流", "快件", "运单"});
    zh("发货", {"发货", "寄出", "发出", "出货", "发件"});
    zh("运费", {"运费", "邮费", "快递费", "配送费", "运输费", "物流费"});
    zh("包邮", {"包邮", "免运费", "免邮", "免邮费"});
    zh("退款", {"退款", "退钱", "返款", "退费", "退回钱"});
    zh("价格", {"价格", "价钱", "售价", "单价"});
    zh("修改", {"修改", "更改", "改", "变更", "改成", "换成"});
    zh("取消", {"取消", "撤销", "撤回"});
    zh("订单", {"订单", "单子", "单", "定单"});
    zh("商品", {"商品", "东西", "产品", "货品", "宝贝", "货物"});
    zh("客服", {"客服", "人工", "人工客服", "客服人员"});
    zh("优惠券", {"优惠券", "券", "优惠码", "折扣码", "代金券", "优惠卷"});
    zh("发票", {"发票", "收据", "票据"});
    zh("损坏", {"损坏", "破损", "坏了", "坏掉", "摔坏", "坏"});
    zh("尺码", {"尺码", "码数", "尺寸", "码", "号码"});
    zh("颜色", {"颜色", "色"});
    zh("有货", {"有货", "现货", "库存"});
    zh("电话", {"电话", "手机号", "手机号码", "电话号码", "联系方式"});
    zh("账号", {"账号", "账户", "帐号", "帐户"});
    zh("退货", {"退货", "退回", "退掉", "退"});
    zh("换货", {"换货", "调换", "换"});
    zh("到货", {"到货", "送到", "送达", "到达", "到"});
    zh("便宜", {"便宜", "优惠", "实惠", "划算"});
    zh("密码", {"密码"});
    zh("积分", {"积分"});
    // Words that hold a character of an opposite pair without being one.
    zh("售后", {"售后", "售后服务"});
    zh("最后", {"最后"});
    zh("前台", {"前台"});
    zh("参加", {"参加", "参与"});
    zh("加急", {"加急"});
    zh("", {"然后",   "后来",   "之后呢", "在吗",     "在不在", "哈喽",  "多谢", "谢谢啦",
            "谢谢您", "辛苦了", "打扰了", "打扰一下", "急",     "着急",  "很急", "安排",
            "给",     "元",     "块",     "块钱",     "人民币", "一下子"});
    zh("什么", {"哪家", "哪一家", "哪个"}, true);
    zh("kg", {"公斤", "千克"});
    zh("cm", {"厘米"});
    zh("登录", {"登录", "登陆"});
    zh("到账", {"到账", "到帐"});
    zh("下单", {"下单", "拍下", "拍了", "下了单"});
    zh("门店", {"门店", "店铺", "实体店", "店"});
    zh("支付", {"支付", "付款", "付钱", "付"});
    zh("howmuch", {"多少钱", "多少", "几", "几个", "多少个"}, true);
    zh("howlong", {"多久", "多长时间", "多少天", "几天", "多长", "多少时间", "多快"}, true);
    zh("how", {"怎么", "如何", "怎样", "怎么办", "咋", "咋办", "怎么才能"}, true);
    zh("when", {"什么时候", "何时", "啥时候", "几时", "哪天", "几号", "几点"}, true);
    zh("where", {"哪里", "哪儿", "在哪", "什么地方", "哪", "啥地方"}, true);
    zh("why", {"为什么", "为啥", "怎么会"}, true);
    zh("what", {"什么", "啥", "哪个", "哪些", "哪种"}, true);
    // Function words and fillers (removed): particles, pronouns, politeness, modal verbs.
    zh("",
       {"请问",   "麻烦", "您好", "你好",   "谢谢", "亲",     "想问", "想问一下", "问一下", "问下",
        "一下",   "我想", "知道", "可以",   "能",   "能否",   "可否", "能够",     "可",     "会",
        "要",     "需要", "需",   "想",     "请",   "帮我",   "帮忙", "帮",       "给我",   "告诉",
        "告诉我", "吗",   "呢",   "吧",     "啊",   "呀",     "哦",   "嘛",       "么",     "呗",
        "哈",     "嗯",   "哇",   "噢",     "的",   "了",     "得",   "地",       "着",     "过",
        "我",     "我们", "你",   "你们",   "您",   "他",     "她",   "它",       "这",     "那",
        "这个",   "那个", "这件", "是",     "在",   "有",     "就",   "都",       "也",     "还",
        "又",     "很",   "太",   "挺",     "让",   "把",     "被",   "对",       "和",     "与",
        "跟",     "及",   "或",   "或者",   "还是", "一个",   "个",   "下",       "些",     "一些",
        "吧",     "呐",   "咱",   "咱们",   "如果", "的话",   "现在", "目前",     "请教",   "咨询",
        "问问",   "问",   "查",   "查一下", "看看", "看一下", "到底", "究竟",     "一般",   "大概",
        "大约",   "左右"});
    // --- Opposites: each pair's two sides ---
    int pair = 0;
    auto opp = [&](bool chinese, std::initializer_list<const char*> one,
                   std::initializer_list<const char*> other) {
      for (int side = 0; side < 2; ++side) {
        for (const char* s : side == 0 ? one : other) {
          // A word that is also a synonym keeps its canonical form and gains the opposite.
          if (chinese) {
            auto [it, fresh] = lx.zh.try_emplace(s, LexEntry{s, -1, false});
            it->second.opposite = pair * 2 + side;
            lx.zh_max_chars = std::max(lx.zh_max_chars, CountChars(s));
          } else {
            const std::string k = StemPhrase(s);
            auto [it, fresh] = lx.en.try_emplace(k, LexEntry{k, -1, false});
            it->second.opposite = pair * 2 + side;
            lx.en_max_words =
                std::max<size_t>(lx.en_max_words, std::count(k.begin(), k.end(), ' ') + 1);
          }
        }
      }
      ++pair;
    };
    opp(false, {"subscribe", "subscription"}, {"unsubscribe"});
    opp(false, {"opt in", "opt-in"}, {"opt out", "opt-out"});
    opp(false, {"increase", "raise", "higher", "more"},
        {"decrease", "reduce", "lower", "less", "fewer"});
    opp(false, {"upgrade"}, {"downgrade"});
    opp(false, {"add"}, {"remove", "delete"});
    opp(false, {"enable", "turn on", "switch on", "activate"},
        {"disable", "turn off", "switch off", "deactivate"});
    opp(false, {"open"}, {"close", "closing"});
    opp(false, {"lock"}, {"unlock"});
    opp(false, {"include", "included"}, {"exclude", "excluded"});
    opp(false, {"buy", "buyer"}, {"sell", "seller"});
    opp(false, {"maximum", "max", "most"}, {"minimum", "min", "least"});
    opp(false, {"before"}, {"after"});
    opp(false, {"early", "earliest", "earlier"}, {"late", "latest", "later"});
    opp(false, {"first"}, {"last"});
    opp(false, {"join"}, {"leave", "quit"});
    opp(false, {"start", "begin"}, {"stop", "end", "finish"});
    opp(false, {"follow"}, {"unfollow"});
    opp(false, {"install"}, {"uninstall"});
    opp(false, {"link", "connect", "bind"}, {"unlink", "disconnect", "unbind"});
    opp(false, {"pause", "suspend"}, {"resume", "continue"});
    opp(false, {"accept", "approve"}, {"reject", "decline", "deny"});
    opp(false, {"send"}, {"receive"});
    opp(false, {"deposit", "top up"}, {"withdraw", "withdrawal", "cash out"});
    opp(false, {"credit"}, {"debit"});
    opp(false, {"login", "log in", "sign in"}, {"logout", "log out", "sign out"});
    opp(false, {"show", "unhide"}, {"hide"});
    opp(false, {"mute"}, {"unmute"});
    opp(false, {"block"}, {"unblock"});
    opp(false, {"upload"}, {"download"});
    opp(false, {"import"}, {"export"});
    opp(false, {"cheap", "cheapest"}, {"expensive", "most expensive"});
    opp(false, {"fast", "fastest"}, {"slow", "slowest"});
    opp(false, {"big", "large", "bigger", "larger", "biggest", "largest"},
        {"small", "smaller", "smallest"});
    opp(false, {"heavy"}, {"light"});
    opp(false, {"domestic"}, {"international", "overseas", "abroad"});
    opp(false, {"men", "man", "male", "mens"}, {"women", "woman", "female", "womens", "ladies"});
    opp(false, {"adult"}, {"child", "kid", "kids", "children"});
    opp(false, {"confirm"}, {"cancel"});
    opp(false, {"new"}, {"used", "old", "second hand", "refurbished"});
    opp(false, {"allow", "permit"}, {"forbid", "prohibit", "ban"});
    opp(false, {"inbound", "incoming"}, {"outbound", "outgoing"});
    opp(false, {"weekday", "weekdays"}, {"weekend", "weekends"});
    opp(false, {"morning"}, {"evening", "night"});
    opp(false, {"upstairs"}, {"downstairs"});
    opp(false, {"hot"}, {"cold"});
    opp(false, {"sender"}, {"recipient", "receiver"});
    opp(false, {"online"}, {"offline", "in store", "in-store"});
    opp(true, {"订阅"}, {"退订", "取消订阅"});
    opp(true, {"增加", "加", "提高", "上调", "涨", "涨价", "调高", "变多"},
        {"减少", "减", "降低", "下调", "降", "降价", "调低", "变少"});
    opp(true, {"升级"}, {"降级"});
    opp(true, {"开通", "打开", "开启", "启用"}, {"关闭", "关掉", "停用", "禁用"});
    opp(true, {"绑定", "关联"}, {"解绑", "解除绑定", "取消关联"});
    opp(true, {"加入", "入会"}, {"退出", "退会"});
    opp(true, {"登录", "登陆"}, {"登出", "退出登录"});
    opp(true, {"注册"}, {"注销"});
    opp(true, {"添加"}, {"删除", "删掉", "移除"});
    opp(true, {"关注"}, {"取关", "取消关注"});
    opp(true, {"收藏"}, {"取消收藏"});
    opp(true, {"锁定", "冻结"}, {"解锁", "解冻"});
    opp(true, {"充值"}, {"提现"});
    opp(true, {"存入", "存钱"}, {"取出", "取钱"});
    opp(true, {"最高", "最多", "最大", "最贵", "最长", "上限"},
        {"最低", "最少", "最小", "最便宜", "最短", "下限"});
    opp(true, {"最早", "最快"}, {"最晚", "最迟", "最慢"});
    opp(true, {"以上", "超过", "大于", "高于"}, {"以下", "低于", "小于", "不到"});
    opp(true, {"之前", "以前", "前"}, {"之后", "以后", "后"});
    opp(true, {"提前"}, {"推迟", "延后", "延期"});
    opp(true, {"上架"}, {"下架"});
    opp(true, {"开始"}, {"结束"});
    opp(true, {"暂停"}, {"恢复"});
    opp(true, {"接受", "同意", "通过"}, {"拒绝", "驳回"});
    opp(true, {"买家", "买入", "购买", "买"}, {"卖家", "卖出", "出售", "卖"});
    opp(true, {"国内"}, {"国外", "国际", "海外", "境外"});
    opp(true, {"男款", "男士", "男", "男装"}, {"女款", "女士", "女", "女装"});
    opp(true, {"大人", "成人"}, {"小孩", "儿童", "孩子", "童装"});
    opp(true, {"开门", "上班", "营业"}, {"关门", "下班", "打烊"});
    opp(true, {"发货", "寄件"}, {"收货", "收件", "签收"});
    opp(true, {"上门"}, {"自提"});
    opp(true, {"大一码", "大一号", "偏大", "大码"}, {"小一码", "小一号", "偏小", "小码"});
    opp(true, {"新品", "全新"}, {"二手", "旧"});
    opp(true, {"线上", "网上", "网店"}, {"线下", "实体店", "门店"});
    opp(true, {"早上", "上午"}, {"晚上", "下午"});
    opp(true, {"工作日"}, {"周末", "节假日"});
    return lx;
  }();
  return kLex;
}

// ---------------------------------------------------------------------------------------------
// Numbers

int ChineseDigit(uint32_t cp) {
  switch (cp) {
    case 0x96F6:
    case 0x3007:
      return 0;  // 零 〇
    case 0x4E00:
      return 1;  // 一
    case 0x4E8C:
    case 0x4E24:
      return 2;  // 二 两
    case 0x4E09:
      return 3;  // 三
    case 0x56DB:
      return 4;  // 四
    case 0x4E94:
      return 5;  // 五
    case 0x516D:
      return 6;  // 六
    case 0x4E03:
      return 7;  // 七
    case 0x516B:
      return 8;  // 八
    case 0x4E5D:
      return 9;  // 九
    default:
      return -1;
  }
}

int64_t ChineseUnit(uint32_t cp) {
  switch (cp) {
    case 0x5341:
      return 10;  // 十
    case 0x767E:
      return 100;  // 百
    case 0x5343:
      return 1000;  // 千
    case 0x4E07:
      return 10000;  // 万
    case 0x4EBF:
      return 100000000;  // 亿
    default:
      return 0;
  }
}

bool IsNumeral(uint32_t cp) { return ChineseDigit(cp) >= 0 || ChineseUnit(cp) > 0; }

// Characters a quantity is counted in: 一件 / 两天 are numbers, 一下 / 一起 are not.
bool IsMeasure(uint32_t cp) {
  static const std::u32string kMeasures =
      U"个件元块双天月日号年周次台部张条只斤克米箱包盒瓶本支套份位分秒点折倍岁层楼小时钟期码寸升毫"
      U"度角毛人单周期款种样杯袋根颗粒片枚笔倍成星";
  return kMeasures.find(static_cast<char32_t>(cp)) != std::u32string::npos;
}

std::string FormatValue(double v) {
  if (std::fabs(v - std::round(v)) < 1e-9 && std::fabs(v) < 1e15) {
    return std::to_string(static_cast<long long>(std::llround(v)));
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f", v);
  return CanonicalDigits(buf);
}

// The value of a run of Chinese numerals: 三百 300, 两千五 2500, 十一 11, 一百零五 105, 三万五
// 35000.
std::optional<double> ParseChineseNumber(const std::vector<uint32_t>& cps, double leading) {
  double total = 0, section = 0;
  double digit = leading;  // "1.5万": the ASCII number before the run
  bool have_digit = leading != 0;
  int64_t last_unit = 0;
  bool any = have_digit;
  for (uint32_t cp : cps) {
    const int d = ChineseDigit(cp);
    if (d >= 0) {
      if (have_digit && d != 0 && last_unit == 0) {
        // "一二三" is not a number in our sense: read digit by digit (an id).
        digit = digit * 10 + d;
      } else {
        digit = d;
      }
      have_digit = true;
      any = true;
      continue;
    }
    const int64_t u = ChineseUnit(cp);
    if (u == 0) return std::nullopt;
    if (!have_digit) digit = 1;  // 十一 = 11
    if (u >= 10000) {
      section = (section + digit) * static_cast<double>(u);
      total += section;
      section = 0;
    } else {
      section += digit * static_cast<double>(u);
    }
    last_unit = u;
    digit = 0;
    have_digit = false;
    any = true;
  }
  if (have_digit) {
    // The colloquial tail: 两千五 = 2500, 三万五 = 35000, 一百五 = 150.
    if (last_unit >= 10 && digit < 10 && cps.size() >= 2 && ChineseDigit(cps[cps.size() - 2]) < 0) {
      section += digit * static_cast<double>(last_unit >= 10000 ? last_unit / 10 : last_unit / 10);
      if (last_unit >= 10000) {
        total += section;
        section = 0;
      }
    } else {
      section += digit;
    }
  }
  if (!any) return std::nullopt;
  return total + section;
}

// Words with numeral characters that are not quantities.
bool NumeralIdiom(const std::vector<Token>& t, size_t i) {
  static const std::unordered_set<std::string> kIdioms = {
      "一下",   "一起",   "一样", "一直", "一定", "一般", "一些", "一点",  "一旦",
      "一切",   "一共",   "一边", "一会", "一律", "一致", "一向", "一再",  "一同",
      "一并",   "一口价", "统一", "唯一", "之一", "万一", "千万", "十分",  "一模一样",
      "一次性", "第一",   "一手", "一半", "专一", "一路", "一旁", "一番",  "一块儿",
      "一面",   "一生",   "万能", "百货", "百度", "千克", "三思", "一些些"};
  for (size_t len = 4; len >= 2; --len) {
    for (size_t start = i >= len - 1 ? i - (len - 1) : 0; start <= i; ++start) {
      if (start + len > t.size()) continue;
      std::string w;
      bool ok = true;
      for (size_t k = start; k < start + len; ++k) {
        if (t[k].kind != Kind::kHan || (k > start && t[k].gap)) {
          ok = false;
          break;
        }
        w += t[k].text;
      }
      if (!ok || !kIdioms.count(w)) continue;
      // 十分钟 (ten minutes) is a quantity; 十分满意 (very satisfied) is not.
      if (w == "十分" && start + 2 < t.size() && t[start + 2].kind == Kind::kHan &&
          t[start + 2].text == "钟")
        continue;
      if (w == "千克") continue;  // a unit after a number: handled by the caller
      return true;
    }
  }
  return false;
}

int EnglishNumberWord(const std::string& w) {
  static const std::unordered_map<std::string, int> kWords = {
      {"zero", 0},      {"one", 1},         {"two", 2},           {"three", 3},
      {"four", 4},      {"five", 5},        {"six", 6},           {"seven", 7},
      {"eight", 8},     {"nine", 9},        {"ten", 10},          {"eleven", 11},
      {"twelve", 12},   {"thirteen", 13},   {"fourteen", 14},     {"fifteen", 15},
      {"sixteen", 16},  {"seventeen", 17},  {"eighteen", 18},     {"nineteen", 19},
      {"twenty", 20},   {"thirty", 30},     {"forty", 40},        {"fifty", 50},
      {"sixty", 60},    {"seventy", 70},    {"eighty", 80},       {"ninety", 90},
      {"hundred", 100}, {"thousand", 1000}, {"million", 1000000}, {"dozen", 12},
      {"twice", 2}};  // not "once": "once the order ships"
  auto it = kWords.find(w);
  return it == kWords.end() ? -1 : it->second;
}

// first .. thirty-first ("second" only where it cannot be the time unit: the caller checks).
int OrdinalWord(const std::string& w) {
  static const std::unordered_map<std::string, int> kOrd = {
      {"first", 1},        {"second", 2},      {"third", 3},       {"fourth", 4},
      {"fifth", 5},        {"sixth", 6},       {"seventh", 7},     {"eighth", 8},
      {"ninth", 9},        {"tenth", 10},      {"eleventh", 11},   {"twelfth", 12},
      {"thirteenth", 13},  {"fourteenth", 14}, {"fifteenth", 15},  {"sixteenth", 16},
      {"seventeenth", 17}, {"eighteenth", 18}, {"nineteenth", 19}, {"twentieth", 20},
      {"thirtieth", 30}};
  auto it = kOrd.find(w);
  return it == kOrd.end() ? -1 : it->second;
}

int MonthNumber(const std::string& w) {
  static const std::unordered_map<std::string, int> kMonths = {
      {"january", 1},   {"jan", 1},   {"february", 2},  {"feb", 2},      {"march", 3},
      {"mar", 3},       {"april", 4}, {"apr", 4},       {"may", 5},      {"june", 6},
      {"jun", 6},       {"july", 7},  {"jul", 7},       {"august", 8},   {"aug", 8},
      {"september", 9}, {"sep", 9},   {"sept", 9},      {"october", 10}, {"oct", 10},
      {"november", 11}, {"nov", 11},  {"december", 12}, {"dec", 12}};
  auto it = kMonths.find(w);
  return it == kMonths.end() ? 0 : it->second;
}

bool IsDayNumber(const Token& t, int* day) {
  if (t.kind != Kind::kNumber || t.text.find_first_not_of("0123456789") != std::string::npos ||
      t.text.size() > 2)
    return false;
  *day = std::atoi(t.text.c_str());
  return *day >= 1 && *day <= 31;
}

std::string DateValue(int month, int day) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "d%d/%d", month, day);
  return buf;
}

// A run of Han numerals starting at i (adjacent, no gap); returns its end.
size_t NumeralRun(const std::vector<Token>& t, size_t i) {
  size_t j = i;
  while (j < t.size() && t[j].kind == Kind::kHan && IsNumeral(t[j].cp) && (j == i || !t[j].gap))
    ++j;
  return j;
}

void ExtractNumbers(std::vector<Token>& t, std::vector<NumberValue>* out) {
  auto han_is = [&](size_t k, const char* s) {
    return k < t.size() && t[k].kind == Kind::kHan && !t[k].gap && t[k].text == s;
  };
  for (size_t i = 0; i < t.size(); ++i) {
    Token& tok = t[i];
    if (tok.used) continue;
    // 双十一 / 双11 / 双十二: the shopping festivals, dates.
    if (tok.kind == Kind::kHan && tok.text == "双" && i + 1 < t.size() && !t[i + 1].gap) {
      int v = 0;
      size_t end = i + 1;
      if (t[i + 1].kind == Kind::kNumber && (t[i + 1].text == "11" || t[i + 1].text == "12")) {
        v = std::atoi(t[i + 1].text.c_str());
        end = i + 2;
      } else {
        const size_t r = NumeralRun(t, i + 1);
        std::vector<uint32_t> cps;
        for (size_t k = i + 1; k < r; ++k) cps.push_back(t[k].cp);
        if (auto x = ParseChineseNumber(cps, 0); x && (*x == 11 || *x == 12)) {
          v = static_cast<int>(*x);
          end = r;
        }
      }
      if (v != 0) {
        out->push_back({DateValue(v, v), ""});
        for (size_t k = i; k < end; ++k) t[k].used = true;
        i = end - 1;
        continue;
      }
    }
    // An ASCII number, maybe the head of a Chinese quantity (1.5万) or of a date (11月11日).
    if (tok.kind == Kind::kNumber) {
      double lead = std::atof(tok.text.c_str());
      const bool plain = tok.text.find_first_of("-/:") == std::string::npos;
      size_t end = i + 1;
      std::string value = tok.text, alt;
      if (plain && end < t.size() && t[end].kind == Kind::kHan && !t[end].gap &&
          ChineseUnit(t[end].cp) > 0) {
        const size_t r = NumeralRun(t, end);
        std::vector<uint32_t> cps;
        for (size_t k = end; k < r; ++k) cps.push_back(t[k].cp);
        if (auto x = ParseChineseNumber(cps, lead)) {
          value = FormatValue(*x);
          end = r;
        }
      }
      // M月D日 / M月D号 with digits (or a numeral day).
      if (plain && han_is(end, "月")) {
        const int month = std::atoi(value.c_str());
        size_t k = end + 1;
        int day = 0;
        if (k < t.size() && !t[k].gap && IsDayNumber(t[k], &day)) {
          ++k;
        } else if (k < t.size() && t[k].kind == Kind::kHan && !t[k].gap && IsNumeral(t[k].cp)) {
          const size_t r = NumeralRun(t, k);
          std::vector<uint32_t> cps;
          for (size_t q = k; q < r; ++q) cps.push_back(t[q].cp);
          if (auto x = ParseChineseNumber(cps, 0)) day = static_cast<int>(*x);
          k = r;
        }
        if (month >= 1 && month <= 12 && day >= 1 && day <= 31) {
          if (han_is(k, "日") || han_is(k, "号")) ++k;
          out->push_back({DateValue(month, day), ""});
          for (size_t q = i; q < k; ++q) t[q].used = true;
          i = k - 1;
          continue;
        }
      }
      // May 3 / 3 May written with a month name after the number.
      if (plain && end < t.size() && t[end].kind == Kind::kWord && MonthNumber(t[end].text) > 0 &&
          t[end].text != "may") {
        int day = 0;
        if (IsDayNumber(tok, &day)) {
          out->push_back({DateValue(MonthNumber(t[end].text), day), ""});
          tok.used = t[end].used = true;
          i = end;
          continue;
        }
      }
      // 11.11 / 6.18 read as prices or as dates; 11/11 as a date.
      const size_t dot = value.find('.');
      if (dot != std::string::npos && value.find('.', dot + 1) == std::string::npos &&
          tok.text == value) {
        const int m = std::atoi(value.substr(0, dot).c_str()),
                  d = std::atoi(value.substr(dot + 1).c_str());
        if (m >= 1 && m <= 12 && d >= 1 && d <= 31 && value.size() - dot - 1 <= 2)
          alt = DateValue(m, d);
      }
      const size_t slash = value.find('/');
      if (slash != std::string::npos &&
          value.find_first_of("/-:", slash + 1) == std::string::npos) {
        const int m = std::atoi(value.substr(0, slash).c_str()),
                  d = std::atoi(value.substr(slash + 1).c_str());
        if (m >= 1 && m <= 12 && d >= 1 && d <= 31) value = DateValue(m, d);
      }
      out->push_back({value, alt});
      for (size_t k = i; k < end; ++k) t[k].used = true;
      // Ordinal and unit suffixes glued to the digits: 1st, 2nd, 5pcs stay a number + a word;
      // the ordinal letters are not content.
      if (end < t.size() && t[end].kind == Kind::kWord && !t[end].gap &&
          (t[end].text == "st" || t[end].text == "nd" || t[end].text == "rd" ||
           t[end].text == "th")) {
        t[end].used = true;
        int day = 0;
        if (end + 2 < t.size() && t[end + 1].kind == Kind::kWord && t[end + 1].text == "of" &&
            IsDayNumber(tok, &day) && t[end + 2].kind == Kind::kWord &&
            MonthNumber(t[end + 2].text) > 0) {
          out->back() = {DateValue(MonthNumber(t[end + 2].text), day), ""};
          t[end + 1].used = t[end + 2].used = true;
          end += 2;
        }
        i = end;
        continue;
      }
      i = end - 1;
      continue;
    }
    // Chinese numerals.
    if (tok.kind == Kind::kHan && IsNumeral(tok.cp)) {
      const size_t r = NumeralRun(t, i);
      if (NumeralIdiom(t, i)) continue;
      // A lone 一 / 两 counts only before a measure word (一件, 两天), and 百分之 is a percentage.
      const bool lone_small =
          r == i + 1 && (tok.text == "一" || tok.text == "两" || tok.text == "二");
      const bool measured =
          r < t.size() && t[r].kind == Kind::kHan && !t[r].gap && IsMeasure(t[r].cp);
      if (lone_small && !measured) continue;
      std::vector<uint32_t> cps;
      for (size_t k = i; k < r; ++k) cps.push_back(t[k].cp);
      // 百分之十: 100 then 分之 then a number; read as the percentage.
      auto x = ParseChineseNumber(cps, 0);
      if (!x) continue;
      size_t end = r;
      if (han_is(end, "月")) {
        size_t k = end + 1;
        int day = 0;
        if (k < t.size() && !t[k].gap && IsDayNumber(t[k], &day)) {
          ++k;
        } else if (k < t.size() && t[k].kind == Kind::kHan && IsNumeral(t[k].cp)) {
          const size_t r2 = NumeralRun(t, k);
          std::vector<uint32_t> c2;
          for (size_t q = k; q < r2; ++q) c2.push_back(t[q].cp);
          if (auto y = ParseChineseNumber(c2, 0)) day = static_cast<int>(*y);
          k = r2;
        }
        if (*x >= 1 && *x <= 12 && day >= 1 && day <= 31) {
          if (han_is(k, "日") || han_is(k, "号")) ++k;
          out->push_back({DateValue(static_cast<int>(*x), day), ""});
          for (size_t q = i; q < k; ++q) t[q].used = true;
          i = k - 1;
          continue;
        }
      }
      out->push_back({FormatValue(*x), ""});
      for (size_t k = i; k < end; ++k) t[k].used = true;
      i = end - 1;
      continue;
    }
    // English number words: two, twenty five, three hundred (and fifty).
    if (tok.kind == Kind::kWord && EnglishNumberWord(tok.text) >= 0) {
      if (tok.text == "one") {
        // "which one", "this one", "one of": a pronoun, not a quantity.
        static const std::unordered_set<std::string> kBefore = {
            "which", "this",    "that",  "the",  "each",  "any",     "every",  "no",
            "some",  "another", "other", "a",    "new",   "only",    "same",   "right",
            "wrong", "quick",   "last",  "next", "first", "cheaper", "bigger", "smaller"};
        const bool pron_before =
            i > 0 && t[i - 1].kind == Kind::kWord && kBefore.count(t[i - 1].text);
        const bool of_after = i + 1 < t.size() && t[i + 1].kind == Kind::kWord &&
                              (t[i + 1].text == "of" || t[i + 1].text == "by");
        const bool last = i + 1 >= t.size();
        const bool scaled = i + 1 < t.size() && t[i + 1].kind == Kind::kWord &&
                            EnglishNumberWord(t[i + 1].text) >= 100;
        if (!scaled && (pron_before || of_after || last)) continue;
      }
      double total = 0, current = 0;
      size_t j = i;
      bool any = false;
      while (j < t.size() && t[j].kind == Kind::kWord) {
        const int v = EnglishNumberWord(t[j].text);
        if (v < 0) {
          if (t[j].text == "and" && any && j + 1 < t.size() &&
              EnglishNumberWord(t[j + 1].text) > 0) {
            ++j;
            continue;
          }
          break;
        }
        if (v == 100) {
          current = (current == 0 ? 1 : current) * 100;
        } else if (v >= 1000) {
          total += (current == 0 ? 1 : current) * v;
          current = 0;
        } else {
          current += v;
        }
        any = true;
        ++j;
      }
      out->push_back({FormatValue(total + current), ""});
      for (size_t k = i; k < j; ++k) t[k].used = true;
      i = j - 1;
      continue;
    }
    // Ordinals: the third (of March), a second bag, twenty-first; "30th of November" below.
    if (tok.kind == Kind::kWord && OrdinalWord(tok.text) > 0) {
      int v = OrdinalWord(tok.text);
      const std::string& before =
          i > 0 && t[i - 1].kind == Kind::kWord ? t[i - 1].text : std::string();
      const bool of_next =
          i + 1 < t.size() && t[i + 1].kind == Kind::kWord && t[i + 1].text == "of";
      if (tok.text == "second" && !of_next &&
          !(before == "the" || before == "a" || before == "my" || before == "your" ||
            before == "our" || before == "their")) {
        continue;
      }
      size_t end = i + 1;
      if (of_next && i + 2 < t.size() && t[i + 2].kind == Kind::kWord &&
          MonthNumber(t[i + 2].text) > 0) {
        out->push_back({DateValue(MonthNumber(t[i + 2].text), v), ""});
        end = i + 3;
      } else {
        out->push_back({FormatValue(v), ""});
      }
      for (size_t k = i; k < end; ++k) t[k].used = true;
      i = end - 1;
      continue;
    }
    // May 3, March 5th.
    if (tok.kind == Kind::kWord && MonthNumber(tok.text) > 0) {
      int day = 0;
      if (i + 1 < t.size() && IsDayNumber(t[i + 1], &day)) {
        out->push_back({DateValue(MonthNumber(tok.text), day), ""});
        tok.used = t[i + 1].used = true;
        if (i + 2 < t.size() && t[i + 2].kind == Kind::kWord && !t[i + 2].gap &&
            (t[i + 2].text == "st" || t[i + 2].text == "nd" || t[i + 2].text == "rd" ||
             t[i + 2].text == "th")) {
          t[i + 2].used = true;
        }
        ++i;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Negation

int CountNegations(std::vector<Token>& t) {
  int n = 0;
  const auto& neg = EnglishNegations();
  auto word_at = [&](size_t k) -> const std::string& {
    static const std::string kEmpty;
    return k < t.size() && t[k].kind == Kind::kWord ? t[k].text : kEmpty;
  };
  for (size_t i = 0; i < t.size(); ++i) {
    Token& tok = t[i];
    if (tok.kind == Kind::kWord && tok.text == "w" && i + 1 < t.size() &&
        t[i + 1].kind == Kind::kWord && t[i + 1].text == "o" && t[i + 1].gap) {
      tok.used = t[i + 1].used = true;  // w/o = without
      ++n;
      ++i;
      continue;
    }
    if (tok.kind == Kind::kWord) {
      std::string w = tok.text;
      w.erase(std::remove(w.begin(), w.end(), '\''), w.end());
      const bool is_neg = neg.count(w) != 0 || (tok.text.size() > 3 && tok.text.ends_with("n't"));
      if (!is_neg) continue;
      // "I don't know how to ...", "not sure": hedges, not negations of the question.
      const std::string& next = word_at(i + 1);
      if ((next == "know" || next == "sure" || next == "understand") &&
          (w == "dont" || w == "not" || w == "didnt" || w == "im")) {
        tok.used = true;
        continue;
      }
      if (w == "no" && (next == "idea" || next == "clue")) {
        tok.used = t[i + 1].used = true;
        continue;
      }
      // "out of stock" / "sold out" below; "no charge" / "no cost" is "free" (the lexicon).
      tok.used = true;
      ++n;
      continue;
    }
    if (tok.kind != Kind::kHan || tok.used) continue;
    auto han = [&](size_t k) -> std::string {
      return k < t.size() && t[k].kind == Kind::kHan && (k == i || !t[k].gap || k < i)
                 ? t[k].text
                 : std::string();
    };
    const std::string prev =
        i > 0 && !tok.gap && t[i - 1].kind == Kind::kHan ? t[i - 1].text : std::string();
    const std::string next = i + 1 < t.size() && !t[i + 1].gap ? han(i + 1) : std::string();
    const std::string next2 =
        i + 2 < t.size() && !t[i + 1].gap && !t[i + 2].gap ? han(i + 2) : std::string();
    const std::string& c = tok.text;
    auto is = [&](std::initializer_list<const char*> words, const std::string& w) {
      for (const char* x : words) {
        if (w == x) return true;
      }
      return false;
    };
    if (c == "不" || c == "没") {
      // A-not-A: 是不是, 能不能, 可不可以, 有没有, 支不支持 ask a plain question.
      if (!prev.empty() && prev == next) {
        tok.used = true;
        t[i - 1].used = true;  // 包不包邮 = 包邮: the repeated head is not content of its own
        continue;
      }
      if (c == "不" &&
          (is({"错", "客", "好", "仅", "过", "管", "论", "久", "然", "得", "如", "少", "止"},
              next) ||
           is({"差", "对", "要", "了"}, prev))) {
        // 不错 不客气 不好意思 不仅 不过 不管 不论 不久 不然 不得不 不如 不少 不止; 差不多 对不起
        // 要不 了不起
        if (!(next == "好" && next2 != "意")) {
          tok.used = true;
          continue;
        }
      }
      if (c == "不" &&
          (next == "知" || next == "清" || next == "懂" || next == "明" || next == "太")) {
        // 不知道 / 不清楚 / 不懂 / 不明白 / 不太会: "I don't know how to ...", a hedge.
        if (next != "太") {
          tok.used = true;
          continue;
        }
      }
      if (c == "没" && (is({"关", "问", "事"}, next))) {  // 没关系 没问题 没事
        tok.used = true;
        continue;
      }
      tok.used = true;
      ++n;
      continue;
    }
    if (c == "无") {
      if (is({"法", "货", "效", "需", "须", "权", "人"},
             next)) {  // 无法 无货 无效 无需 无须 无权 无人
        tok.used = true;
        ++n;
      }
      continue;  // 无理由, 无门槛, 无论, 无线, 无忧: not negations
    }
    if (c == "非") {
      if (next == "常" || prev == "除" || prev == "是" || prev == "无" || prev == "莫") continue;
      tok.used = true;
      ++n;
      continue;
    }
    if (c == "未") {
      if (next == "来") continue;  // 未来
      tok.used = true;
      ++n;
      continue;
    }
    if (c == "别") {
      if (is({"人", "的", "处"}, next) ||
          is({"区", "类", "特", "个", "告", "分", "级", "识", "差", "性", "派", "辨", "鉴"}, prev))
        continue;
      tok.used = true;
      ++n;
      continue;
    }
    if (c == "勿" || (c == "莫" && next != "非")) {
      tok.used = true;
      ++n;
    }
  }
  // Phrases: out of stock, sold out.
  for (size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i].kind != Kind::kWord) continue;
    if (t[i].text == "out" && i + 2 < t.size() && t[i + 1].text == "of" &&
        (t[i + 2].text == "stock")) {
      t[i].used = t[i + 1].used = t[i + 2].used = true;
      ++n;
    } else if (t[i].text == "sold" && t[i + 1].text == "out") {
      t[i].used = t[i + 1].used = true;
      ++n;
    }
  }
  return n;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

TextSignals AnalyzeText(std::string_view text) {
  TextSignals s;
  if (text.size() > kMaxSignalBytes) {
    s.too_long = true;
    return s;
  }
  s.normalized = Normalize(text);
  std::vector<Token> t = Tokenize(s.normalized);
  s.tokens = static_cast<int>(t.size());
  for (const Token& tok : t) s.has_han |= tok.kind == Kind::kHan;
  ExtractNumbers(t, &s.numbers);
  s.negations = CountNegations(t);

  const Lexicon& lx = GetLexicon();
  const auto& stop = EnglishStopwords();
  std::vector<std::string> stems(t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].kind == Kind::kWord) stems[i] = Stem(t[i].text);
  }
  // The longest lexicon entry starting at token i: English stems joined by spaces, or a run of
  // adjacent Chinese characters; null when none.
  auto longest = [&](size_t i, size_t* len) -> const LexEntry* {
    const bool han = t[i].kind == Kind::kHan;
    const auto& table = han ? lx.zh : lx.en;
    const size_t most = han ? lx.zh_max_chars : lx.en_max_words;
    const LexEntry* hit = nullptr;
    std::string key;
    for (size_t k = i; k < t.size() && k - i < most && t[k].kind == t[i].kind && !t[k].used &&
                       (k == i || !han || !t[k].gap);
         ++k) {
      if (k > i && !han) key += ' ';
      key += han ? t[k].text : stems[k];
      if (auto it = table.find(key); it != table.end()) {
        hit = &it->second;
        *len = k - i + 1;
      }
    }
    return hit;
  };
  // A lexicon match of tokens [i, i + len): a question word, an opposite, a canonical content
  // unit (English surfaces joined by spaces, Chinese ones by nothing), or a function word.
  auto take = [&](const LexEntry& hit, size_t i, size_t len) {
    for (size_t k = i; k < i + len; ++k) t[k].used = true;
    if (hit.opposite >= 0) s.opposites.push_back(hit.opposite);
    if (hit.question) {
      s.questions.push_back(hit.canonical);
      return;
    }
    if (hit.canonical.empty()) return;
    const bool han = t[i].kind == Kind::kHan;
    std::string surface;
    for (size_t k = i; k < i + len; ++k) surface += (k > i && !han ? " " : "") + t[k].text;
    s.content.push_back({hit.canonical, surface, han, static_cast<int>(i)});
  };
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].used) continue;
    if (t[i].kind == Kind::kWord) {
      size_t len = 0;
      if (const LexEntry* hit = longest(i, &len)) {
        take(*hit, i, len);
        i += len - 1;
        continue;
      }
      t[i].used = true;
      if (stop.count(t[i].text) || stop.count(stems[i])) continue;
      s.content.push_back({stems[i], t[i].text, false, static_cast<int>(i)});
      continue;
    }
    if (t[i].kind == Kind::kHan) {
      size_t len = 0;
      if (const LexEntry* hit = longest(i, &len)) {
        take(*hit, i, len);
        i += len - 1;
        continue;
      }
      t[i].used = true;
      s.content.push_back({t[i].text, t[i].text, true, static_cast<int>(i)});
      continue;
    }
    // A stray number token left unused cannot happen (numbers take every number token).
    t[i].used = true;
  }
  // "Dear customer service," / "客服你好": the addressee of a greeting is not the question.
  auto greeting_near = [&](int at) {
    for (int k = std::max(0, at - 3); k < std::min<int>(static_cast<int>(t.size()), at + 5); ++k) {
      const Token& g = t[static_cast<size_t>(k)];
      if (g.kind == Kind::kWord &&
          (g.text == "hi" || g.text == "hello" || g.text == "hey" || g.text == "dear"))
        return true;
      if (g.kind == Kind::kHan && (g.text == "好" || g.text == "在") && k > 0 &&
          t[static_cast<size_t>(k - 1)].kind == Kind::kHan &&
          (t[static_cast<size_t>(k - 1)].text == "你" ||
           t[static_cast<size_t>(k - 1)].text == "您" || g.text == "在")) {
        return true;
      }
    }
    return false;
  };
  std::erase_if(s.content, [&](const ContentUnit& u) {
    return (u.text == "agent" || u.text == "客服") && greeting_near(u.index);
  });
  std::sort(s.opposites.begin(), s.opposites.end());
  s.opposites.erase(std::unique(s.opposites.begin(), s.opposites.end()), s.opposites.end());
  std::sort(s.questions.begin(), s.questions.end());
  s.questions.erase(std::unique(s.questions.begin(), s.questions.end()), s.questions.end());
  return s;
}

namespace {

// Optimal string alignment distance (a transposition costs 1: retrun / return), or limit + 1
// once it must exceed limit.
size_t EditDistance(std::string_view a, std::string_view b, size_t limit) {
  if (a.size() > b.size() + limit || b.size() > a.size() + limit) return limit + 1;
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    size_t best = cur[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] =
          std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
      best = std::min(best, cur[j]);
    }
    if (best > limit) return limit + 1;
    prev2.swap(prev);
    prev.swap(cur);
  }
  return prev[b.size()];
}

// Two spellings of one English word: a typo (edit distance 1 from 4 letters, 2 from 8) or a
// shared stem of 5+ letters (delivery / delivered).
bool SameSpelling(std::string_view a, std::string_view b) {
  if (a.empty() || b.empty()) return false;
  const size_t shorter = std::min(a.size(), b.size());
  if (shorter < 3) return false;
  if (shorter >= 5 && a.substr(0, shorter) == b.substr(0, shorter)) return true;
  const size_t limit = shorter >= 8 ? 2 : 1;
  return EditDistance(a, b, limit) <= limit && (shorter >= 4 || a[0] == b[0]);
}

// A misspelling of a function word of 4+ letters by a letter dropped, added or swapped (chek /
// check, dose / does, suport / support), or substituted from 6 letters (doller / dollar); in a
// shorter word a substituted letter is another word (wait / want).
bool MisspelledFunctionWord(const std::string& w) {
  std::string sw = w;
  std::sort(sw.begin(), sw.end());
  for (const std::string& f : EnglishStopwords()) {
    if (f.size() < 4 || f.find('\'') != std::string::npos || f == w) continue;
    if (EditDistance(w, f, 1) > 1) continue;
    if (f.size() != w.size() || w.size() >= 6) return true;
    std::string sf = f;
    std::sort(sf.begin(), sf.end());
    if (sf == sw) return true;
  }
  return false;
}

std::string WithoutSpaces(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != ' ') out += c;
  }
  return out;
}

// Whether the numbers of a can be paired one to one with those of b (each pair sharing a
// reading). Greedy is exact here: a value has at most two readings and they never chain.
bool NumbersMatch(const std::vector<NumberValue>& a, const std::vector<NumberValue>& b) {
  if (a.size() != b.size()) return false;
  std::vector<bool> taken(b.size(), false);
  // Exact readings first, then the alternates.
  std::vector<bool> done(a.size(), false);
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < a.size(); ++i) {
      if (done[i]) continue;
      for (size_t j = 0; j < b.size(); ++j) {
        if (taken[j]) continue;
        const bool eq =
            pass == 0 ? a[i].value == b[j].value
                      : (!a[i].alt.empty() && (a[i].alt == b[j].value || a[i].alt == b[j].alt)) ||
                            (!b[j].alt.empty() && b[j].alt == a[i].value);
        if (eq) {
          taken[j] = true;
          done[i] = true;
          break;
        }
      }
    }
  }
  return std::all_of(done.begin(), done.end(), [](bool d) { return d; });
}

}  // namespace

PairDiff Compare(const TextSignals& a, const TextSignals& b) {
  PairDiff d;
  if (a.too_long || b.too_long) {
    d.too_long = true;
    return d;
  }
  d.numbers_differ = !NumbersMatch(a.numbers, b.numbers);
  // Question words: "what" / "which" fit any question; how, when, where, why, who, how much
  // and how long ask different things.
  auto specific = [](const std::vector<std::string>& q) {
    std::vector<std::string> out;
    for (const auto& w : q) {
      if (w != "what") out.push_back(w);
    }
    return out;
  };
  const auto qa = specific(a.questions), qb = specific(b.questions);
  if (!qa.empty() && !qb.empty()) {
    std::vector<std::string> common;
    std::set_intersection(qa.begin(), qa.end(), qb.begin(), qb.end(), std::back_inserter(common));
    d.question_differs = common.empty();
  }
  // A wh-question against a yes/no question ("how much is international shipping" / "do you
  // ship internationally"); "what" counts as a wh-question here.
  d.question_one_sided =
      (!qa.empty() && b.questions.empty()) || (!qb.empty() && a.questions.empty());
  d.negation_differs = (a.negations % 2) != (b.negations % 2);
  // X on one side, its opposite on the other, and neither side has both.
  for (int x : a.opposites) {
    const int y = x ^ 1;
    if (std::binary_search(b.opposites.begin(), b.opposites.end(), y) &&
        !std::binary_search(a.opposites.begin(), a.opposites.end(), y) &&
        !std::binary_search(b.opposites.begin(), b.opposites.end(), x)) {
      d.opposite = true;
    }
  }
  // Content: a unit of one side is matched by an occurrence of it on the other (or a spelling
  // of it), each occurrence once: compared as multisets, so a sentence added to a long message
  // differs even when every word of it already occurs somewhere in the message.
  std::unordered_map<std::string, int> in_a, in_b;
  for (const ContentUnit& u : a.content) ++in_a[u.text];
  for (const ContentUnit& u : b.content) ++in_b[u.text];
  d.content_a = static_cast<int>(a.content.size());
  d.content_b = static_cast<int>(b.content.size());
  std::vector<bool> ma(a.content.size()), mb(b.content.size());
  {
    std::unordered_map<std::string, int> left_b = in_b, left_a = in_a;
    for (size_t i = 0; i < a.content.size(); ++i) {
      int& n = left_b[a.content[i].text];
      if (n > 0) {
        ma[i] = true;
        --n;
      }
    }
    for (size_t j = 0; j < b.content.size(); ++j) {
      int& n = left_a[b.content[j].text];
      if (n > 0) {
        mb[j] = true;
        --n;
      }
    }
  }
  // "How much is shipping" asks the price: a price unit matches that question on the other side.
  auto asks_price = [](const TextSignals& t) {
    return std::find(t.questions.begin(), t.questions.end(), "howmuch") != t.questions.end();
  };
  auto is_price = [](const ContentUnit& u) { return u.text == "price" || u.text == "价格"; };
  if (asks_price(b)) {
    for (size_t i = 0; i < a.content.size(); ++i) ma[i] = ma[i] || is_price(a.content[i]);
  }
  if (asks_price(a)) {
    for (size_t j = 0; j < b.content.size(); ++j) mb[j] = mb[j] || is_price(b.content[j]);
  }
  // Misspellings among what is left (bounded: at most 16 x 16 short comparisons): a unit
  // matches a spelling of one of the other side's, or of a function word (chek / check), and
  // two adjacent units match their joined form (phone line / phoneline).
  constexpr size_t kMaxTypoUnits = 16;
  const size_t left_a = static_cast<size_t>(std::count(ma.begin(), ma.end(), false));
  const size_t left_b = static_cast<size_t>(std::count(mb.begin(), mb.end(), false));
  if (left_a <= kMaxTypoUnits && left_b <= kMaxTypoUnits) {
    auto spelled = [](const ContentUnit& x, const ContentUnit& y) {
      return SameSpelling(x.surface, y.surface) || SameSpelling(x.text, y.text) ||
             (x.surface.find(' ') != std::string::npos || y.surface.find(' ') != std::string::npos
                  ? SameSpelling(WithoutSpaces(x.surface), WithoutSpaces(y.surface))
                  : false);
    };
    for (size_t i = 0; i < a.content.size(); ++i) {
      if (ma[i] || a.content[i].han) continue;
      for (size_t j = 0; j < b.content.size(); ++j) {
        // Only with a unit the other side has left over: every occurrence pairs once.
        if (mb[j] || b.content[j].han || !spelled(a.content[i], b.content[j])) continue;
        ma[i] = mb[j] = true;
        ++d.typo_matches;
        break;
      }
    }
    // Two adjacent units of one side against one unit of the other: "phone line" / "phoneline".
    auto joined = [&](const std::vector<ContentUnit>& x, std::vector<bool>& mx,
                      const std::vector<ContentUnit>& y, std::vector<bool>& my) {
      for (size_t i = 0; i + 1 < x.size(); ++i) {
        if (x[i].han || x[i + 1].han || x[i + 1].index != x[i].index + 1 || (mx[i] && mx[i + 1]))
          continue;
        const std::string both = x[i].surface + x[i + 1].surface;
        for (size_t j = 0; j < y.size(); ++j) {
          if (y[j].han || my[j] || !SameSpelling(both, WithoutSpaces(y[j].surface))) continue;
          mx[i] = mx[i + 1] = my[j] = true;
          ++d.typo_matches;
          break;
        }
      }
    };
    joined(a.content, ma, b.content, mb);
    joined(b.content, mb, a.content, ma);
    for (auto [side, matched] : {std::pair{&a.content, &ma}, std::pair{&b.content, &mb}}) {
      for (size_t i = 0; i < side->size(); ++i) {
        if ((*matched)[i] || (*side)[i].han || (*side)[i].surface.size() < 3) continue;
        if (MisspelledFunctionWord((*side)[i].surface)) {
          (*matched)[i] = true;
          ++d.typo_matches;
        }
      }
    }
  }
  auto spans = [](const std::vector<ContentUnit>& units, const std::vector<bool>& matched,
                  std::vector<std::string>* out) {
    int count = 0;
    int last = -10;
    for (size_t i = 0; i < units.size(); ++i) {
      if (matched[i]) continue;
      ++count;
      const ContentUnit& u = units[i];
      const std::string& text = u.text;
      if (!out->empty() && u.index <= last + 2) {
        if (!u.han) out->back() += ' ';
        out->back() += text;
      } else {
        out->push_back(text);
      }
      last = u.index;
    }
    return count;
  };
  d.unmatched_a = spans(a.content, ma, &d.only_a);
  d.unmatched_b = spans(b.content, mb, &d.only_b);
  return d;
}

std::string CanonicalText(std::string_view text) {
  static const char* kCjkPunct[] = {"？", "！", "，", "。", "：", "；", "、", "（", "）", "“", "”"};
  std::string out;
  for (size_t i = 0; i < text.size();) {
    bool skipped = false;
    for (const char* p : kCjkPunct) {
      const size_t n = std::char_traits<char>::length(p);
      if (text.compare(i, n, p) == 0) {
        i += n;
        skipped = true;
        break;
      }
    }
    if (skipped) continue;
    const auto u = static_cast<unsigned char>(text[i]);
    // Punctuation goes, except inside a number (24.99 and 249.9 stay apart).
    const bool in_number = i > 0 && i + 1 < text.size() &&
                           std::isdigit(static_cast<unsigned char>(text[i - 1])) &&
                           std::isdigit(static_cast<unsigned char>(text[i + 1]));
    if (u < 128 && (std::isspace(u) || (std::ispunct(u) && !in_number))) {
      ++i;
      continue;
    }
    out += static_cast<char>(u < 128 ? std::tolower(u) : u);
    ++i;
  }
  return out;
}

}  // namespace frugal::cache
