// A tokenizer of single letters for tests that need real token ids without a model: id 0 is the
// end-of-generation (control) token, ids 1..26 are the letters a..z.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "tokenizer/tokenizer.h"

namespace frugal::testing {

inline std::unique_ptr<Tokenizer> LetterTokenizer() {
  TokenizerSpec spec;
  spec.kind = TokenizerKind::kSentencePieceBpe;
  spec.byte_fallback = false;
  spec.tokens.push_back("</s>");
  spec.token_types.push_back(3);
  for (char c = 'a'; c <= 'z'; ++c) {
    spec.tokens.push_back(std::string(1, c));
    spec.token_types.push_back(1);
  }
  spec.scores.assign(spec.tokens.size(), 0.f);
  spec.eos_id = 0;
  spec.special_tokens = {"</s>"};
  auto tok = Tokenizer::Create(std::move(spec));
  if (!tok.ok()) {  // every caller needs it: stop here, loudly
    ADD_FAILURE() << tok.status().ToString();
    std::abort();
  }
  return std::move(tok).value();
}

}  // namespace frugal::testing
