#include "tokenizer/unicode_util.h"

#include <utf8proc.h>

#include <cstdlib>
#include <memory>

namespace frugal::tokenizer_internal {

Utf8Char DecodeUtf8(std::string_view s, size_t pos) {
  const auto b0 = static_cast<uint8_t>(s[pos]);
  if (b0 < 0x80) return {Utf8Status::kComplete, b0, 1};
  size_t need = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the first continuation byte
  uint32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return {Utf8Status::kInvalid, kInvalidCodepoint, 1};
  }
  for (size_t k = 1; k <= need; ++k) {
    if (pos + k >= s.size()) return {Utf8Status::kIncomplete, kInvalidCodepoint, k};
    const auto b = static_cast<uint8_t>(s[pos + k]);
    if (b < lo || b > hi) return {Utf8Status::kInvalid, kInvalidCodepoint, k};
    lo = 0x80;
    hi = 0xBF;
    cp = (cp << 6) | (b & 0x3F);
  }
  return {Utf8Status::kComplete, cp, need + 1};
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string ToValidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    Utf8Char c = DecodeUtf8(s, i);
    if (c.status == Utf8Status::kComplete) {
      out.append(s.substr(i, c.len));
    } else {
      out.append("\xEF\xBF\xBD");
    }
    i += c.len;
  }
  return out;
}

namespace {

struct ByteTables {
  std::array<std::string, 256> to_unicode;
  std::array<int, 512> to_byte;  // every mapped code point is below 512
};

const ByteTables& Tables() {
  static const ByteTables tables = [] {
    ByteTables t;
    t.to_byte.fill(-1);
    // Printable Latin-1 bytes map to themselves; the rest to 256, 257, ... in byte order.
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const uint32_t cp = printable ? static_cast<uint32_t>(b) : next++;
      AppendUtf8(cp, &t.to_unicode[b]);
      t.to_byte[cp] = b;
    }
    return t;
  }();
  return tables;
}

}  // namespace

const std::array<std::string, 256>& ByteToUnicode() { return Tables().to_unicode; }

int UnicodeToByte(uint32_t cp) { return cp < 512 ? Tables().to_byte[cp] : -1; }

NormalForm ParseNormalForm(std::string_view name) {
  if (name == "NFC") return NormalForm::kNfc;
  if (name == "NFD") return NormalForm::kNfd;
  if (name == "NFKC") return NormalForm::kNfkc;
  if (name == "NFKD") return NormalForm::kNfkd;
  return NormalForm::kNone;
}

std::string Normalize(std::string_view s, NormalForm form) {
  if (form == NormalForm::kNone) return std::string(s);
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::kNfc:
      options |= UTF8PROC_COMPOSE;
      break;
    case NormalForm::kNfd:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case NormalForm::kNfkc:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case NormalForm::kNfkd:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
    case NormalForm::kNone:
      break;
  }
  std::string out;
  out.reserve(s.size());
  // utf8proc refuses invalid UTF-8 as a whole, so normalise each valid run on its own and copy
  // invalid bytes through: byte-level tokenizers can still encode them.
  auto flush_run = [&](size_t begin, size_t end) {
    if (begin == end) return;
    utf8proc_uint8_t* dst = nullptr;
    const utf8proc_ssize_t n = utf8proc_map(
        reinterpret_cast<const utf8proc_uint8_t*>(s.data() + begin),
        static_cast<utf8proc_ssize_t>(end - begin), &dst, static_cast<utf8proc_option_t>(options));
    std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> holder(dst, &std::free);
    if (n < 0) {
      out.append(s.substr(begin, end - begin));  // out of memory or a bug: keep the text as is
    } else {
      out.append(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
    }
  };
  size_t run_begin = 0, i = 0;
  while (i < s.size()) {
    Utf8Char c = DecodeUtf8(s, i);
    if (c.status == Utf8Status::kComplete) {
      i += c.len;
      continue;
    }
    flush_run(run_begin, i);
    out.push_back(s[i]);
    ++i;
    run_begin = i;
  }
  flush_run(run_begin, s.size());
  return out;
}

bool IsWhitespace(uint32_t cp) {
  switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool IsPunctuation(uint32_t cp) {
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
}

bool IsNonspacingMark(uint32_t cp) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_MN;
}

bool IsOtherControl(uint32_t cp) {
  // Unassigned code points (Cn) are kept: the reference keeps them too.
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
  return cat == UTF8PROC_CATEGORY_CC || cat == UTF8PROC_CATEGORY_CF ||
         cat == UTF8PROC_CATEGORY_CO || cat == UTF8PROC_CATEGORY_CS;
}

void AppendLower(uint32_t cp, std::string* out) {
  if (cp == 0x130) {  // the one unconditional multi-character lowercase mapping
    out->append("i\xCC\x87");
    return;
  }
  AppendUtf8(static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))), out);
}

}  // namespace frugal::tokenizer_internal
