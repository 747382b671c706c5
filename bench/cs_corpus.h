// A synthetic corpus of customer-service questions for cache_bench: distinct queries, each an
// intent (price, order status, returns, ...) with its slots filled in (product, city, order
// number, size, ...), and repeats of them as they arrive at a cache: paraphrases (the same intent
// and slots in other words) and light edits (a greeting, a thank-you, lower case). Real embeddings
// of such text cluster the way a shop's traffic does, unlike Gaussian vectors (HNSW's worst case).
//
// Deterministic for a seed: CsCorpus(seed).Question(i) is the same text on every machine.
#pragma once

#include <cctype>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace frugal::bench {

class CsCorpus {
 public:
  // The slots of one question; Render(variant) words them with the intent's variant-th template.
  struct Slots {
    uint32_t intent = 0;
    std::string product, city, order, size, when, payment, day;
    int qty = 0, pct = 0;
  };

  explicit CsCorpus(uint64_t seed) : seed_(seed) {}

  // The slots of question i (a pure function of seed and i).
  Slots Draw(uint64_t i) const {
    std::mt19937_64 r(seed_ * 0x9E3779B97F4A7C15ull + i);
    auto pick = [&r](const auto& list) { return std::string(list[r() % std::size(list)]); };
    Slots s;
    s.intent = static_cast<uint32_t>(r() % std::size(kIntents));
    s.product = pick(kColours) + " " + pick(kItems);
    if (r() % 2 == 0)
      s.product += " model " + std::string(1, static_cast<char>('A' + r() % 26)) +
                   std::to_string(100 + r() % 9900);
    s.city = pick(kCities);
    s.order = std::to_string(100000 + r() % 900000);
    s.size = pick(kSizes);
    s.when = pick(kWhen);
    s.payment = pick(kPayments);
    s.day = pick(kDays);
    s.qty = 2 + static_cast<int>(r() % 48);
    s.pct = 5 * (1 + static_cast<int>(r() % 10));
    return s;
  }

  size_t Variants(const Slots& s) const { return kIntents[s.intent].size(); }

  std::string Render(const Slots& s, size_t variant) const {
    const std::string_view t = kIntents[s.intent][variant % kIntents[s.intent].size()];
    std::string out;
    for (size_t p = 0; p < t.size();) {
      if (t[p] != '{') {
        out += t[p++];
        continue;
      }
      const size_t e = t.find('}', p);
      const std::string_view k = t.substr(p + 1, e - p - 1);
      if (k == "product")
        out += s.product;
      else if (k == "city")
        out += s.city;
      else if (k == "order")
        out += s.order;
      else if (k == "size")
        out += s.size;
      else if (k == "when")
        out += s.when;
      else if (k == "payment")
        out += s.payment;
      else if (k == "day")
        out += s.day;
      else if (k == "qty")
        out += std::to_string(s.qty);
      else if (k == "pct")
        out += std::to_string(s.pct);
      p = e + 1;
    }
    return out;
  }

  // Question i in its first wording.
  std::string Question(uint64_t i) const { return Render(Draw(i), 0); }

  // A repeat of question i as a customer would ask it again: for even salts a paraphrase (the
  // same slots in another template of the same intent), for odd ones the same wording with a
  // greeting, a thank-you or in lower case.
  std::string Repeat(uint64_t i, uint64_t salt) const {
    const Slots s = Draw(i);
    if (salt % 2 == 0) return Render(s, 1 + (salt / 2) % (Variants(s) - 1));
    std::string q = Render(s, 0);
    switch ((salt / 2) % 4) {
      case 0:
        return "Hi, " + q;
      case 1:
        return q + " Thanks!";
      case 2:
        return "Hello there. " + q;
      default:
        for (char& c : q) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return q;
    }
  }

 private:
  static constexpr std::string_view kColours[] = {"black", "white", "blue",   "red",
                                                  "green", "grey",  "navy",   "beige",
                                                  "brown", "pink",  "yellow", "purple"};
  static constexpr std::string_view kItems[] = {
      "jacket",       "running shoes", "winter coat",  "backpack",     "rain jacket",
      "hoodie",       "jeans",         "t-shirt",      "sneakers",     "dress",
      "wool sweater", "leather boots", "wallet",       "watch",        "sunglasses",
      "scarf",        "gloves",        "hiking boots", "yoga mat",     "water bottle",
      "laptop bag",   "phone case",    "headphones",   "coffee maker", "desk lamp",
      "office chair", "blender",       "kettle",       "toaster",      "vacuum cleaner",
      "duvet",        "pillow",        "towel set",    "frying pan",   "suitcase",
      "umbrella",     "baseball cap",  "swimsuit",     "pyjamas",      "belt"};
  static constexpr std::string_view kCities[] = {
      "Berlin",    "Munich",    "Hamburg",    "Cologne", "Vienna",    "Zurich",   "Paris",
      "Lyon",      "Madrid",    "Barcelona",  "Rome",    "Milan",     "London",   "Dublin",
      "Amsterdam", "Brussels",  "Copenhagen", "Oslo",    "Stockholm", "Helsinki", "Warsaw",
      "Prague",    "Budapest",  "Lisbon",     "Athens",  "New York",  "Chicago",  "Toronto",
      "Sydney",    "Singapore", "Tokyo",      "Seoul",   "Shanghai",  "Beijing",  "Hong Kong",
      "Dubai",     "Istanbul",  "Boston",     "Seattle", "Denver"};
  static constexpr std::string_view kSizes[] = {"XS", "S",  "M",  "L",  "XL", "XXL",
                                                "36", "38", "40", "42", "44", "46"};
  static constexpr std::string_view kWhen[] = {"yesterday",      "last week",  "two weeks ago",
                                               "last month",     "on Monday",  "on March 3",
                                               "three days ago", "in the sale"};
  static constexpr std::string_view kPayments[] = {"PayPal",      "a credit card", "Apple Pay",
                                                   "a gift card", "bank transfer", "Klarna"};
  static constexpr std::string_view kDays[] = {"Monday",   "Tuesday",         "Wednesday",
                                               "Thursday", "Friday",          "Saturday",
                                               "Sunday",   "a public holiday"};
  using Templates = std::vector<std::string_view>;
  inline static const std::vector<Templates> kIntents = {
      {"How long does shipping to {city} take for the {product}?",
       "When will the {product} arrive if I ship it to {city}?",
       "What is the delivery time for the {product} to {city}?",
       "If I order the {product} today, how many days until it gets to {city}?"},
      {"What is the price of the {product}?", "How much does the {product} cost?",
       "How much is the {product} right now?", "Can you tell me what the {product} costs?"},
      {"Is the {product} in stock in size {size}?", "Do you have the {product} in size {size}?",
       "Is size {size} of the {product} available?", "Can I still buy the {product} in {size}?"},
      {"Where is my order {order}?", "What is the status of order {order}?",
       "Order {order} has not arrived yet, where is it?", "Can you track my order {order} for me?"},
      {"Can I return the {product} I bought {when}?",
       "How do I send back the {product} I ordered {when}?",
       "I want to return the {product} from {when}, is that possible?"},
      {"When will I get my refund for order {order}?",
       "How long does the refund for order {order} take?",
       "I returned order {order}, when do I get my money back?"},
      {"Can I cancel order {order}?", "How do I cancel my order {order}?",
       "Please cancel order {order}, is it still possible?"},
      {"Can I change the delivery address of order {order} to {city}?",
       "I moved to {city}, can order {order} be delivered there instead?",
       "Please send order {order} to my new address in {city}."},
      {"Is there a discount on the {product} this week?", "Is the {product} on sale at the moment?",
       "Do you have a coupon for the {product}?"},
      {"Can I get {pct}% off the {product}?",
       "Is there a {pct} percent discount code for the {product}?",
       "Does the {pct}% voucher work on the {product}?"},
      {"How long is the warranty on the {product}?", "Does the {product} come with a warranty?",
       "What warranty do I get with the {product}?"},
      {"Can I pick up the {product} at the {city} store?",
       "Is store pickup in {city} possible for the {product}?",
       "Can I collect the {product} from your shop in {city}?"},
      {"Can I exchange the {product} for size {size}?",
       "The {product} does not fit, can I swap it for a size {size}?",
       "I need the {product} in {size} instead, can you exchange it?"},
      {"Can I pay for the {product} with {payment}?", "Do you accept {payment} for the {product}?",
       "Is {payment} a payment option for the {product}?"},
      {"Can I order {qty} units of the {product}?",
       "Is there a limit if I buy {qty} of the {product}?",
       "I would like {qty} pieces of the {product}, is that possible?"},
      {"My {product} from order {order} arrived damaged, what should I do?",
       "The {product} in order {order} is broken, can you replace it?",
       "Order {order} came with a damaged {product}, how do I get a new one?"},
      {"How much is shipping for the {product} to {city}?",
       "What does delivery of the {product} to {city} cost?",
       "What are the shipping fees to {city} for the {product}?"},
      {"Can I get an invoice for order {order}?", "Please send me the receipt for order {order}.",
       "Where do I find the invoice of order {order}?"},
      {"How do I wash the {product}?", "What are the care instructions for the {product}?",
       "Can the {product} go in the washing machine?"},
      {"When does the {city} store open on {day}?",
       "What are the opening hours of your {city} shop on {day}?",
       "Is the store in {city} open on {day}?"},
      {"Can you gift wrap the {product} I am ordering?",
       "Do you offer gift wrapping for the {product}?",
       "Is it possible to have the {product} wrapped as a present?"},
      {"What is the {product} made of?", "Which material is the {product}?",
       "What fabric is used for the {product}?"},
  };

  uint64_t seed_;
};

}  // namespace frugal::bench
