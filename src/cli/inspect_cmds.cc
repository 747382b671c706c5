// `frugal info | tokenize | dequant`: what is in a model file, without running it.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/describe.h"
#include "cli/model_flags.h"
#include "formats/gguf.h"
#include "frugal/engine.h"
#include "kernels/kernels.h"
#include "models/inspect.h"
#include "models/model_source.h"
#include "tokenizer/tokenize_jsonl.h"
#include "tokenizer/tokenizer.h"

namespace frugal::cli {
namespace {

int RunInfo(const std::string& model, bool json, bool tensors) {
  frugal::EngineOptions o;
  o.model_path = model;
  o.threads = 1;
  auto engine = frugal::Engine::Open(o);
  if (engine.ok()) {
    const auto& e = **engine;
    std::fputs((json ? frugal::DescribeModelJson(e.info(), e.source()) + "\n"
                     : frugal::DescribeModelText(e.info(), e.source(), tensors))
                   .c_str(),
               stdout);
    return 0;
  }
  // A well-formed file the engine cannot run (unknown architecture or tokenizer) is still
  // described; a missing or corrupt file is an error.
  if (engine.status().code() != StatusCode::kUnimplemented) return Fail(engine.status());
  auto source = frugal::ModelSource::Open(model);
  if (!source.ok()) return Fail(source.status());
  const frugal::ModelInfo info = frugal::InspectSource(**source);
  std::fputs((json ? frugal::DescribeModelJson(info, **source, engine.status().message()) + "\n"
                   : frugal::DescribeModelText(info, **source, tensors, engine.status().message()))
                 .c_str(),
             stdout);
  return 0;
}
int RunTokenize(const std::string& model, const std::vector<std::string>& texts, bool jsonl,
                bool no_special, bool parse_special, bool decode, bool skip_special) {
  auto tok = frugal::LoadTokenizer(model);
  if (!tok.ok()) return Fail(tok.status());
  if (decode) {
    if (!jsonl)
      return Fail(frugal::InvalidArgument("--decode reads JSON id arrays: use it with --jsonl"));
    Status st = frugal::DecodeJsonl(**tok, std::cin, std::cout, skip_special);
    return st.ok() ? 0 : Fail(st);
  }
  if (jsonl) {
    Status st = frugal::TokenizeJsonl(**tok, std::cin, std::cout, !no_special, parse_special);
    return st.ok() ? 0 : Fail(st);
  }
  for (const auto& t : texts) {
    nlohmann::json ids = (*tok)->Encode(t, !no_special, parse_special);
    std::puts(ids.dump().c_str());
  }
  return 0;
}
int RunDequant(const std::string& model, const std::string& tensor, const std::string& out) {
  auto gguf = frugal::GgufFile::Open(model);
  if (!gguf.ok()) return Fail(gguf.status());
  const frugal::TensorView* t = (*gguf)->FindTensor(tensor);
  if (t == nullptr) return Fail(frugal::NotFound("no tensor '" + tensor + "' in " + model));
  std::vector<float> v(static_cast<size_t>(t->elements()));
  frugal::DequantizeTensor(*t, v.data());
  Status st = WriteFloats(out, v);
  return st.ok() ? 0 : Fail(st);
}

struct InfoFlags {
  std::string model;
  bool json = false, tensors = false;
};

struct TokenizeFlags {
  std::string model;
  std::vector<std::string> texts;
  bool jsonl = false, no_special = false, parse_special = false, decode = false,
       skip_special = false;
};

struct DequantFlags {
  std::string model, tensor, out;
};

}  // namespace

void AddInspectCommands(CLI::App& app, Commands& out) {
  {
    auto f = std::make_shared<InfoFlags>();
    auto* info = app.add_subcommand("info", "architecture, tensors, types and size of a model");
    info->add_option("model", f->model, "a .gguf file or a Hugging Face folder")->required();
    info->add_flag("--json", f->json, "print one JSON object");
    info->add_flag("--tensors", f->tensors, "list every tensor");
    out.emplace_back(info, [f] { return RunInfo(f->model, f->json, f->tensors); });
  }
  {
    auto f = std::make_shared<TokenizeFlags>();
    auto* tk = app.add_subcommand("tokenize", "print token ids as JSON arrays");
    tk->add_option("-m,--model", f->model,
                   "a .gguf file, a tokenizer.json or a Hugging Face folder")
        ->required();
    tk->add_option("texts", f->texts, "texts to tokenize");
    tk->add_flag("--jsonl", f->jsonl,
                 "read one JSON string per stdin line, print one array per line");
    tk->add_flag("--no-special", f->no_special, "do not add BOS/CLS/SEP");
    tk->add_flag("--parse-special", f->parse_special,
                 "turn special tokens written in the text into their ids");
    tk->add_flag("--decode", f->decode,
                 "with --jsonl: read id arrays, print the decoded JSON strings");
    tk->add_flag("--skip-special", f->skip_special, "with --decode: drop special tokens");
    out.emplace_back(tk, [f] {
      return RunTokenize(f->model, f->texts, f->jsonl, f->no_special, f->parse_special, f->decode,
                         f->skip_special);
    });
  }
  {
    auto f = std::make_shared<DequantFlags>();
    auto* dq = app.add_subcommand("dequant", "write one GGUF tensor as raw float32");
    dq->add_option("-m,--model", f->model, "a .gguf file")->required();
    dq->add_option("--tensor", f->tensor, "tensor name")->required();
    dq->add_option("-o,--out", f->out, "output file")->required();
    out.emplace_back(dq, [f] { return RunDequant(f->model, f->tensor, f->out); });
  }
}

}  // namespace frugal::cli
