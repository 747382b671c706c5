#include "tokenizer/tokenize_jsonl.h"

#include <filesystem>
#include <fstream>
#include <istream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "formats/e5_file.h"
#include "formats/gguf.h"

namespace frugal {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return IoError("cannot open " + path.string());
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return IoError("cannot read " + path.string());
  return ss.str();
}

StatusOr<std::unique_ptr<Tokenizer>> FromJsonFile(const fs::path& path) {
  FRUGAL_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  std::string config;
  std::error_code ec;
  const fs::path config_path = path.parent_path() / "tokenizer_config.json";
  if (path.filename() == "tokenizer.json" && fs::is_regular_file(config_path, ec)) {
    FRUGAL_ASSIGN_OR_RETURN(config, ReadFile(config_path));
  }
  auto tok = Tokenizer::FromTokenizerJson(text, config);
  if (!tok.ok()) return tok.status().WithContext(path.string() + ": ");
  return tok;
}

StatusOr<std::unique_ptr<Tokenizer>> FromGgufFile(const std::string& path) {
  FRUGAL_ASSIGN_OR_RETURN(auto gguf, GgufFile::Open(path));
  auto tok = Tokenizer::FromGguf(*gguf);
  if (!tok.ok()) return tok.status().WithContext(path + ": ");
  return tok;
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) {
    const fs::path json_path = p / "tokenizer.json";
    if (!fs::is_regular_file(json_path, ec)) {
      return NotFound(path + ": folder without tokenizer.json");
    }
    return FromJsonFile(json_path);
  }
  if (!fs::exists(p, ec)) return NotFound(path + ": no such file");
  if (E5File::Sniff(path)) {
    FRUGAL_ASSIGN_OR_RETURN(auto e5, E5File::Open(path));
    auto tok = Tokenizer::FromE5(e5->vocab());
    if (!tok.ok()) return tok.status().WithContext(path + ": ");
    return tok;
  }
  if (p.extension() == ".gguf") return FromGgufFile(path);
  if (p.extension() == ".json") return FromJsonFile(p);
  // Unknown extension: look at the content.
  std::ifstream f(p, std::ios::binary);
  char magic[4] = {};
  f.read(magic, sizeof(magic));
  if (f.gcount() == 4 && std::string_view(magic, 4) == "GGUF") return FromGgufFile(path);
  return FromJsonFile(p);
}

Status TokenizeJsonl(const Tokenizer& tokenizer, std::istream& in, std::ostream& out,
                     bool add_special, bool parse_special) {
  std::string line;
  std::string buffer;
  for (size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_string()) {
      return InvalidArgument("line " + std::to_string(line_no) + ": expected a JSON string");
    }
    const std::vector<int32_t> ids =
        tokenizer.Encode(j.get_ref<const std::string&>(), add_special, parse_special);
    buffer.clear();
    buffer.push_back('[');
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i > 0) buffer.push_back(',');
      buffer.append(std::to_string(ids[i]));
    }
    buffer.append("]\n");
    out << buffer << std::flush;
    if (!out) return IoError("cannot write the output");
  }
  if (in.bad()) return IoError("cannot read the input");
  return Status::Ok();
}

Status DecodeJsonl(const Tokenizer& tokenizer, std::istream& in, std::ostream& out,
                   bool skip_special) {
  std::string line;
  for (size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    std::vector<int32_t> ids;
    bool ok = !j.is_discarded() && j.is_array();
    for (size_t i = 0; ok && i < j.size(); ++i) {
      ok = j[i].is_number_integer();
      if (ok) ids.push_back(static_cast<int32_t>(j[i].get<int64_t>()));
    }
    if (!ok)
      return InvalidArgument("line " + std::to_string(line_no) + ": expected an array of ids");
    // Decode returns valid UTF-8, so dump cannot throw; `replace` makes sure of it regardless.
    out << json(tokenizer.Decode(ids, skip_special))
               .dump(-1, ' ', false, json::error_handler_t::replace)
        << '\n'
        << std::flush;
    if (!out) return IoError("cannot write the output");
  }
  if (in.bad()) return IoError("cannot read the input");
  return Status::Ok();
}

}  // namespace frugal
