// Entry points for `frugal tokenize`: load a tokenizer from a path, and stream JSON lines.
#pragma once

#include <iosfwd>
#include <memory>
#include <string>

#include "frugal/status.h"
#include "tokenizer/tokenizer.h"

namespace frugal {

// `path` is a .gguf file, a tokenizer.json (tokenizer_config.json beside it is read when
// present), or a folder holding tokenizer.json. Other files are recognised by content
// (the GGUF magic, else JSON).
StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path);

// Reads one JSON string per line from `in` and writes one JSON array of token ids per line to
// `out`, flushing after each so a caller can talk to it line by line. Blank lines are skipped.
// A line that is not a JSON string is InvalidArgument naming the line.
Status TokenizeJsonl(const Tokenizer& tokenizer, std::istream& in, std::ostream& out,
                     bool add_special, bool parse_special);

// The reverse, for round-trip checks: one JSON array of ids per line in, one JSON string out.
Status DecodeJsonl(const Tokenizer& tokenizer, std::istream& in, std::ostream& out,
                   bool skip_special);

}  // namespace frugal
