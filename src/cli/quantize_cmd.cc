// `frugal quantize`: flags, progress and the report; the quantizer, the gate and its search are
// src/quant (quantizer.h, candidate_gate.h, gate_search.h; docs/quantization.md).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <vector>

#include "cli/commands.h"
#include "quant/candidate_gate.h"
#include "quant/eval.h"
#include "quant/gate.h"
#include "quant/gate_search.h"
#include "quant/gptq_export.h"
#include "quant/quantizer.h"
#include "quant_gate_data.h"  // generated: the built-in held-out data

namespace frugal::cli {
namespace {

struct QuantizeFlags {
  std::string input, output, recipe_file, preset = "mixed-int4-int8", method = "gptq";
  std::string calib;
  std::string target = "frugal";  // who reads the output: frugal | llama.cpp | vllm
  std::string frugal_gguf;        // --target vllm: also keep the Frugal GGUF here
  int group_size = 0;
  int64_t calib_samples = QuantizeOptions{}.calib_samples;
  int64_t seq_len = QuantizeOptions{}.seq_len;
  double damp = GptqOptions{}.damp;
  bool no_act_order = false;
  bool no_scale_search = false;
  int awq_grid = AwqOptions{}.grid;
  int threads = 0;
  bool json = false, quiet = false;
  // Quality gate: evaluate on held-out data, refuse to leave a model that fails. On by default
  // (kDefaultGate on the built-in copies of tests/data's held-out files); --no-gate skips it.
  std::string gate;  // "" = kDefaultGate
  bool no_gate = false;
  std::string eval_text;    // "" = the built-in heldout_cs.txt
  std::string eval_probes;  // "" = the built-in numeric_probes.jsonl
  int64_t eval_max_tokens = 2048;
  bool auto_mixed = false;
  int auto_mixed_max = 16;
  std::string max_size;    // e.g. "104MB": raise the most sensitive INT4 tensors while it fits
  std::string max_memory;  // e.g. "2GB": cap on the calibration hidden states (fewer windows)
  std::string shard_size;  // --target vllm: most tensor bytes per safetensors shard ("" = 5GB)
  // The per-run work directory: finished layers spilled there, a checkpoint per layer ("" =
  // OUTPUT.parts; "none" = keep everything in memory, no checkpoint).
  std::string work_dir;
  bool resume = false;         // continue from the checkpoint in the work directory
  bool keep_work_dir = false;  // leave the work directory after a successful write
};

// Where the run's work directory is ("" for none).
std::string WorkDirOf(const QuantizeFlags& f) {
  if (f.work_dir == "none") return "";
  return f.work_dir.empty() ? f.output + ".parts" : f.work_dir;
}

// "104MB", "52GB", "1.5GiB", "900kB", "123456789B" -> bytes. The unit is required unless
// bare_bytes (then "2000000000" is bytes).
StatusOr<size_t> ParseSize(const std::string& text, const char* flag = "--max-size",
                           bool bare_bytes = false) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  std::string unit = text.substr(used);
  if (bare_bytes && unit.empty()) unit = "b";
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::map<std::string, double> kUnits = {
      {"b", 1},     {"kb", 1e3},     {"mb", 1e6},        {"gb", 1e9},
      {"tb", 1e12}, {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0}};
  const auto u = kUnits.find(unit);
  if (used == 0 || u == kUnits.end() || !(v > 0) || !std::isfinite(v) || v * u->second > 1e18) {
    return InvalidArgument(std::string(flag) + ": '" + text +
                           "' is not a size such as 104MB or 52GB");
  }
  return static_cast<size_t>(v * u->second);
}

// Exit code of a quantization the gate refused (as `frugal eval --gate`).
constexpr int kGateFailed = 3;

std::string Duration(double s) {
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%.0fs", s);
  } else {
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  }
  return buf;
}

// One line per step on a pipe or file; a bar redrawn in place on a terminal.
std::function<void(const QuantProgress&)> ProgressPrinter() {
  const bool tty = isatty(STDERR_FILENO) != 0;
  const auto t0 = std::chrono::steady_clock::now();
  // The ETA counts only the steps this run did: a resumed run starts with layers done.
  return [tty, t0, first = int64_t{-1}](const QuantProgress& p) mutable {
    if (first < 0) first = p.done;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double frac =
        p.total > 0 ? static_cast<double>(p.done) / static_cast<double>(p.total) : 0;
    const int64_t run = p.done - first, left = p.total - p.done;
    const std::string eta =
        run > 0 && left > 0
            ? Duration(elapsed * static_cast<double>(left) / static_cast<double>(run))
            : "-";
    constexpr int kWidth = 30;
    const int fill = static_cast<int>(frac * kWidth);
    std::string bar(static_cast<size_t>(fill), '=');
    bar.resize(kWidth, ' ');
    std::fprintf(stderr, "%squantize [%s] %3.0f%% %s %lld/%lld  elapsed %s  ETA %s%s",
                 tty ? "\r" : "", bar.c_str(), 100 * frac, p.stage.c_str(),
                 static_cast<long long>(p.done), static_cast<long long>(p.total),
                 Duration(elapsed).c_str(), eta.c_str(), tty && frac < 1 ? "" : "\n");
    std::fflush(stderr);
  };
}

// The plan, before the long part: two lines on stderr (docs/quantization.md "The plan").
void PrintPlan(const QuantPlan& p) {
  const auto gb = [](size_t b) { return static_cast<double>(b) / 1e9; };
  std::string windows;
  if (p.windows_dropped > 0) {
    windows = ", --max-memory kept " + std::to_string(p.windows) + " of " +
              std::to_string(p.windows + p.windows_dropped) + " calibration windows";
  }
  if (p.resumed_layers > 0) {
    windows += "; --resume: " + std::to_string(p.resumed_layers) + " of " +
               std::to_string(p.layers) + " layers done by an earlier run";
  }
  std::fprintf(
      stderr,
      "plan: memory ~%.1f GB for one layer (source %.1f + calibration states %.1f + "
      "layer work %.1f), ~%.1f GB by the end (output %.1f GB %s); "
      "MemAvailable %.1f GB; the source's %.1f GB are mapped and read a layer at a time%s\n",
      gb(p.layer_peak_bytes), gb(p.source_bytes), gb(p.activation_bytes), gb(p.layer_work_bytes),
      gb(p.end_peak_bytes), gb(p.output_bytes),
      p.output_spilled ? "spilled to the work directory layer by layer" : "held until written",
      gb(p.mem_available), gb(p.mapped_bytes), windows.c_str());
  std::fprintf(stderr,
               "plan: time ~%s per layer, ~%s for %lld layers%s (probes: sgemm %.0f GFLOPS, "
               "matmul %.0f GFLOPS, scale fit %.1f ns/weight; %lld calibration tokens)\n",
               Duration(p.layer_seconds).c_str(), Duration(p.total_seconds).c_str(),
               static_cast<long long>(p.layers - p.resumed_layers),
               p.resumed_layers > 0 ? " left" : "", p.blas_gflops, p.matmul_gflops,
               p.fit_ns_per_weight, static_cast<long long>(p.calib_tokens));
  if (p.mem_available > 0 && p.end_peak_bytes > p.mem_available &&
      p.layer_peak_bytes <= p.mem_available)
    std::fprintf(stderr,
                 "plan: warning: the whole run may not fit in MemAvailable (the output is "
                 "held in memory until written)\n");
  std::fflush(stderr);
}

// A tensor type as the file names it: for llama.cpp, a Frugal type is written as the GGUF block
// type with its values (Q8_0, Q4_0, Q4_1).
std::string WrittenTypeName(TensorType t, QuantTarget target) {
  if (target == QuantTarget::kLlamaCpp) {
    if (const std::optional<TensorType> g = GgufEquivalent(t)) return TypeName(*g);
  }
  return TypeName(t);
}

// The reports describe the file as written: `raised` tensors in the alternative it names.
nlohmann::json ReportJson(const QuantizedModel& m, const QuantizeOptions& o,
                          const std::string& output, const Raise& raised) {
  const SizeSummary size = m.Size(raised);
  nlohmann::json j;
  j["output"] = output;
  j["method"] = QuantMethodName(o.method);
  j["scale_fit"] = o.fit == ScaleFit::kSearch ? "search" : "minmax";
  j["recipe"] = o.recipe.name;
  j["bytes"] = size.bytes;
  j["f16_bytes"] = size.f16_bytes;
  j["size_vs_f16"] = size.f16_bytes > 0
                         ? static_cast<double>(size.bytes) / static_cast<double>(size.f16_bytes)
                         : 0;
  j["params"] = size.params;
  j["bits_per_weight"] = size.bits_per_weight();
  j["seconds"] = m.seconds();
  j["calib_tokens"] = m.calib_tokens();
  if (!m.calib_sha256().empty()) j["calib_sha256"] = m.calib_sha256();
  nlohmann::json ts = nlohmann::json::array();
  for (const TensorReport& t : m.tensors()) {
    nlohmann::json e{{"name", t.name},
                     {"type", WrittenTypeName(t.TypeIn(raised), o.target)},
                     {"source_type", TypeName(t.source)},
                     {"elements", t.elements},
                     {"bytes", t.BytesIn(raised)}};
    if (raised.count(t.name)) e["raised_from"] = WrittenTypeName(t.type, o.target);
    if (!t.note.empty()) e["note"] = t.note;
    if (t.rel_error >= 0)
      e["rel_error"] = t.rel_error;  // as quantized to `type` (raised_from when raised)
    if (!t.alternatives.empty()) {
      nlohmann::json alts = nlohmann::json::array();
      for (const TensorReport::Alternative& a : t.alternatives) {
        alts.push_back({{"type", WrittenTypeName(a.type, o.target)},
                        {"bytes", a.bytes},
                        {"rel_error", a.rel_error}});
      }
      e["alternatives"] = std::move(alts);
    }
    if (t.awq_alpha >= 0) e["awq_alpha"] = t.awq_alpha;
    ts.push_back(std::move(e));
  }
  j["tensors"] = std::move(ts);
  return j;
}

std::string ReportText(const QuantizedModel& m, const QuantizeOptions& o, const std::string& output,
                       const Raise& raised) {
  std::string s;
  char buf[512];
  // Tensors by type, then the summary.
  std::map<std::string, std::pair<int, size_t>> by_type;
  std::map<std::string, int> notes;
  double worst = -1;
  std::string worst_name;
  for (const TensorReport& t : m.tensors()) {
    auto& e = by_type[WrittenTypeName(t.TypeIn(raised), o.target)];
    ++e.first;
    e.second += t.BytesIn(raised);
    if (!t.note.empty()) ++notes[t.note];
    if (t.rel_error > worst && !raised.count(t.name)) worst = t.rel_error, worst_name = t.name;
  }
  const SizeSummary size = m.Size(raised);
  std::snprintf(buf, sizeof buf, "wrote %s: %s, recipe %s\n", output.c_str(),
                QuantMethodName(o.method), o.recipe.name.c_str());
  s += buf;
  for (const auto& [type, e] : by_type) {
    std::snprintf(buf, sizeof buf, "  %-9s x%-4d %9.2f MB\n", type.c_str(), e.first,
                  static_cast<double>(e.second) / 1e6);
    s += buf;
  }
  for (const auto& [note, n] : notes) {
    std::snprintf(buf, sizeof buf, "  note: %s (%d tensors)\n", note.c_str(), n);
    s += buf;
  }
  std::snprintf(buf, sizeof buf, "size: %.2f MB, %.3f bits/weight, %.1f%% of F16 (%.2f MB)\n",
                static_cast<double>(size.bytes) / 1e6, size.bits_per_weight(),
                100.0 * static_cast<double>(size.bytes) / static_cast<double>(size.f16_bytes),
                static_cast<double>(size.f16_bytes) / 1e6);
  s += buf;
  if (worst >= 0) {
    std::snprintf(buf, sizeof buf, "largest relative output error: %.3g (%s)\n", worst,
                  worst_name.c_str());
    s += buf;
  }
  std::snprintf(buf, sizeof buf, "time: %.1f s", m.seconds());
  s += buf;
  if (m.calib_tokens() > 0) {
    std::snprintf(buf, sizeof buf, ", calibration %lld tokens (sha256 %.12s)",
                  static_cast<long long>(m.calib_tokens()), m.calib_sha256().c_str());
    s += buf;
  }
  return s + "\n";
}

// The flags as QuantizeOptions (everything but the progress printer and the alternatives, which
// depend on the gate and --max-size).
StatusOr<QuantizeOptions> OptionsFromFlags(const QuantizeFlags& f) {
  QuantizeOptions o;
  o.input = f.input;
  if (!f.recipe_file.empty()) {
    FRUGAL_ASSIGN_OR_RETURN(o.recipe, LoadRecipe(f.recipe_file));
  } else {
    FRUGAL_ASSIGN_OR_RETURN(o.recipe, PresetRecipe(f.preset));
  }
  if (f.group_size != 0) OverrideGroupSize(o.recipe, f.group_size);
  FRUGAL_ASSIGN_OR_RETURN(const QuantTarget target, ParseQuantTarget(f.target));
  o.target = target;
  FRUGAL_RETURN_IF_ERROR(ApplyQuantTarget(o, f.group_size));
  if (!f.frugal_gguf.empty() && target != QuantTarget::kVllm)
    return InvalidArgument("--frugal-gguf goes with --target vllm (the other targets are GGUF)");
  FRUGAL_ASSIGN_OR_RETURN(o.method, ParseQuantMethod(f.method));
  o.calib_path = f.calib;
  o.calib_samples = f.calib_samples;
  o.seq_len = f.seq_len;
  o.gptq.damp = f.damp;
  o.gptq.act_order = !f.no_act_order;
  o.awq.grid = f.awq_grid;
  o.fit = f.no_scale_search ? ScaleFit::kMinMax : ScaleFit::kSearch;
  o.threads = f.threads;
  o.work_dir = WorkDirOf(f);
  o.resume = f.resume;
  if (f.resume && o.work_dir.empty())
    return InvalidArgument("--resume needs a work directory (not --work-dir none)");
  if (!f.max_memory.empty()) {
    FRUGAL_ASSIGN_OR_RETURN(o.max_activation_bytes, ParseSize(f.max_memory, "--max-memory"));
  }
  if (o.method != QuantMethod::kRtn && o.calib_path.empty()) {
    return InvalidArgument(std::string("--method ") + f.method +
                           " needs calibration data: --calib FILE (text or JSONL)");
  }
  return o;
}

Status CheckWritableFile(const std::string& output) {
  FILE* probe = std::fopen((output + ".tmp").c_str(), "wb");
  if (probe == nullptr) return InvalidArgument("cannot write " + output);
  std::fclose(probe);
  std::remove((output + ".tmp").c_str());
  return Status::Ok();
}

// Fails on a bad output path before the work.
Status CheckWritable(const QuantizeFlags& f) {
  if (f.target != "vllm") return CheckWritableFile(f.output);
  FRUGAL_RETURN_IF_ERROR(CheckGptqOutputDir(f.output));
  return f.frugal_gguf.empty() ? Status::Ok() : CheckWritableFile(f.frugal_gguf);
}

// The held-out files the gate reads when --eval-text / --eval-probes are not given: copies of
// tests/data's, compiled in.
constexpr const char* kBuiltinText = "built-in tests/data/heldout_cs.txt";
constexpr const char* kBuiltinProbes = "built-in tests/data/numeric_probes.jsonl";

// The gate's clauses (--gate, or the default) and the held-out data it scores; no gate with
// --no-gate.
struct GateInputs {
  std::optional<Gate> gate;
  bool is_default = false;
  std::vector<Probe> probes;
  std::string eval_text;
};

StatusOr<GateInputs> LoadGateInputs(const QuantizeFlags& f) {
  GateInputs g;
  if (f.no_gate) {
    if (f.auto_mixed)
      return InvalidArgument("--auto-mixed needs the gate: it raises layers until the gate holds");
    return g;
  }
  g.is_default = f.gate.empty();
  FRUGAL_ASSIGN_OR_RETURN(g.gate, ParseGate(g.is_default ? kDefaultGate : f.gate));
  if (f.eval_text.empty()) {
    g.eval_text = kBuiltinHeldoutText;
  } else {
    std::ifstream in(f.eval_text, std::ios::binary);
    if (!in)
      return NotFound("cannot read --eval-text " + f.eval_text + " (held-out text for the gate)");
    std::stringstream ss;
    ss << in.rdbuf();
    g.eval_text = ss.str();
  }
  if (g.gate->uses_numeric()) {
    if (f.eval_probes.empty()) {
      FRUGAL_ASSIGN_OR_RETURN(g.probes, ParseProbes(kBuiltinNumericProbes, kBuiltinProbes));
    } else {
      FRUGAL_ASSIGN_OR_RETURN(g.probes, LoadProbes(f.eval_probes));
    }
  }
  return g;
}

StatusOr<std::optional<size_t>> MaxSizeFlag(const QuantizeFlags& f) {
  if (f.max_size.empty()) return std::optional<size_t>();
  FRUGAL_ASSIGN_OR_RETURN(const size_t bytes, ParseSize(f.max_size));
  if (f.auto_mixed)
    return InvalidArgument("--max-size and --auto-mixed both choose the tensors to raise: use one");
  return std::optional<size_t>(bytes);
}

// A quantized model on its way out: what the reports need.
struct QuantizeRun {
  const QuantizeFlags& f;
  const QuantizeOptions& o;
  const QuantizedModel& qm;
  SizeSummary base;  // before any raise
  std::optional<size_t> max_size;
  Raise raised;
  std::optional<GptqExportReport> vllm;  // --target vllm: what the folder holds, once written
  size_t shard_bytes = GptqExportOptions{}.shard_bytes;  // --shard-size
};

// --shard-size: bytes, or a size with a unit as Hugging Face's max_shard_size ("5GB" = 5e9).
StatusOr<size_t> ShardSizeFlag(const QuantizeFlags& f) {
  if (f.shard_size.empty()) return GptqExportOptions{}.shard_bytes;
  if (f.target != "vllm")
    return InvalidArgument("--shard-size goes with --target vllm (the other targets are one GGUF)");
  return ParseSize(f.shard_size, "--shard-size", /*bare_bytes=*/true);
}

bool IsVllm(const QuantizeFlags& f) { return f.target == "vllm"; }

// The GGUF a run writes: the target's file, or for --target vllm the Frugal file of the same
// quantization (what the gate evaluates and --frugal-gguf keeps).
QuantTarget GgufTarget(const QuantizeFlags& f) {
  const QuantTarget t = *ParseQuantTarget(f.target);
  return t == QuantTarget::kVllm ? QuantTarget::kFrugal : t;
}

// --target vllm: how the Hugging Face folder in GPTQ's layout is written.
GptqExportOptions VllmExportOptions(const QuantizeRun& r) {
  GptqExportOptions eo;
  eo.source_dir = r.f.input;
  eo.output_dir = r.f.output;
  eo.method = QuantMethodName(r.o.method);
  eo.scale_fit = r.o.fit == ScaleFit::kSearch ? "search" : "minmax";
  eo.damp = r.o.gptq.damp;
  eo.shard_bytes = r.shard_bytes;
  return eo;
}

Status WriteVllmFolder(QuantizeRun& r) {
  FRUGAL_ASSIGN_OR_RETURN(GptqExportReport rep,
                          WriteGptqFolder(r.qm, r.raised, VllmExportOptions(r)));
  r.vllm = std::move(rep);
  return Status::Ok();
}

// The folder's formats in the reports: each Linear's GPTQ scheme next to Frugal's type.
void AddVllm(const QuantizeRun& r, nlohmann::json& j) {
  if (!r.vllm) return;
  const GptqExportReport& v = *r.vllm;
  j["target"] = "vllm";
  j["vllm"] = {{"dir", r.f.output},
               {"checkpoint_format", "gptq"},
               {"base", v.base.Name()},
               {"dynamic", v.dynamic},
               {"formats", v.formats},
               {"modules", v.modules},
               {"notes", v.notes},
               {"safetensors_bytes", v.safetensors_bytes},
               {"shards", v.shards},
               {"quantization_config", nlohmann::json::parse(v.quantization_config)}};
  if (!r.f.frugal_gguf.empty()) j["vllm"]["frugal_gguf"] = r.f.frugal_gguf;
  for (nlohmann::json& t : j["tensors"]) {
    const std::string hf = LlamaHfTensorName(t["name"].get<std::string>());
    const auto m =
        hf.ends_with(".weight") ? v.modules.find(hf.substr(0, hf.size() - 7)) : v.modules.end();
    t["vllm_format"] = m != v.modules.end() ? m->second : "as in the source";
  }
}

std::string VllmText(const QuantizeRun& r) {
  if (!r.vllm) return "";
  const GptqExportReport& v = *r.vllm;
  std::string s = "vLLM folder " + r.f.output + " (GPTQ v1 layout, " +
                  (v.shards > 1 ? std::to_string(v.shards) + " safetensors shards, "
                                : std::string("model.safetensors, ")) +
                  std::to_string(v.safetensors_bytes) + " bytes): base " + v.base.Name() + "\n";
  for (const auto& [name, n] : v.formats) s += "  " + name + " x" + std::to_string(n) + "\n";
  for (const auto& [pattern, what] : v.dynamic) s += "  dynamic " + pattern + " -> " + what + "\n";
  for (const std::string& n : v.notes) s += "  note: " + n + "\n";
  if (!r.f.frugal_gguf.empty())
    s += "Frugal GGUF of the same quantization: " + r.f.frugal_gguf + "\n";
  return s;
}

std::vector<std::string> RaisedNames(const Raise& r) {
  std::vector<std::string> n;
  for (const auto& [name, type] : r) n.push_back(name);
  return n;
}

// --max-size: INT4 tensors go to INT4 g32 or INT8, most error removed per byte first, while the
// tensor data still fits.
Status RaiseWithinMaxSize(QuantizeRun& r) {
  if (!r.max_size) return Status::Ok();
  if (r.base.bytes > *r.max_size) {
    char msg[256];
    std::snprintf(msg, sizeof msg,
                  "the quantized tensors take %.2f MB, over --max-size %s: choose a smaller recipe",
                  static_cast<double>(r.base.bytes) / 1e6, r.f.max_size.c_str());
    return InvalidArgument(msg);
  }
  r.raised = r.qm.RaiseWithin(*r.max_size);
  return Status::Ok();
}

void AddMaxSize(const QuantizeRun& r, nlohmann::json& j) {
  if (!r.max_size) return;
  j["max_size"] = {{"bytes_allowed", *r.max_size},
                   {"bytes_before", r.base.bytes},
                   {"bytes", r.qm.Size(r.raised).bytes},
                   {"raised", RaisedNames(r.raised)}};
  for (const auto& [name, type] : r.raised) j["max_size"]["raised_to"][name] = TypeName(type);
}

void PrintRaised(const QuantizeRun& r, const char* why) {
  if (r.raised.empty()) return;
  const SizeSummary now = r.qm.Size(r.raised);
  std::printf("%s: raised %zu INT4 tensors (+%.2f MB, %.3f -> %.3f bits/weight):", why,
              r.raised.size(), static_cast<double>(now.bytes - r.base.bytes) / 1e6,
              r.base.bits_per_weight(), now.bits_per_weight());
  for (const auto& [name, type] : r.raised)
    std::printf(" %s->%s", name.c_str(), TypeName(type).c_str());
  std::printf("\n");
}

// --no-gate: write the file, report it, and say that it was not validated.
int WriteUngated(QuantizeRun& r) {
  if (IsVllm(r.f)) {
    if (!r.f.frugal_gguf.empty()) {
      if (Status st = r.qm.Write(r.f.frugal_gguf, r.raised, QuantTarget::kFrugal); !st.ok())
        return Fail(st);
    }
    if (Status st = WriteVllmFolder(r); !st.ok()) {
      if (!r.f.frugal_gguf.empty()) std::remove(r.f.frugal_gguf.c_str());
      return Fail(st);
    }
  } else if (Status st = r.qm.Write(r.f.output, r.raised, GgufTarget(r.f)); !st.ok()) {
    return Fail(st);
  }
  // Not progress: said with -q too.
  std::fprintf(stderr,
               "frugal quantize: %s was NOT validated (--no-gate): check it with `frugal eval` "
               "before use\n",
               r.f.output.c_str());
  if (r.f.json) {
    nlohmann::json j = ReportJson(r.qm, r.o, r.f.output, r.raised);
    AddMaxSize(r, j);
    AddVllm(r, j);
    j["validated"] = false;
    j["gate"] = {{"spec", nullptr}, {"skipped", true}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::fputs(ReportText(r.qm, r.o, r.f.output, r.raised).c_str(), stdout);
    std::fputs(VllmText(r).c_str(), stdout);
    PrintRaised(r, "max-size");
    std::printf("not validated: --no-gate\n");
  }
  return 0;
}

EvalProgress GateProgress(bool quiet) {
  if (quiet) return {};
  return [](std::string_view stage, int64_t done, int64_t total) {
    if (done == total || done % 32 == 0) {
      std::fprintf(stderr, "gate: %.*s %lld/%lld\n", static_cast<int>(stage.size()), stage.data(),
                   static_cast<long long>(done), static_cast<long long>(total));
    }
  };
}

nlohmann::json StepsJson(const std::vector<GateStep>& steps) {
  nlohmann::json j = nlohmann::json::array();
  for (const GateStep& s : steps) {
    j.push_back({{"raised", s.raised},
                 {"bytes", s.bytes},
                 {"ppl", s.ppl},
                 {"kld_mean", s.kld_mean},
                 {"passed", s.passed}});
  }
  return j;
}

void PrintGateReport(const QuantizeRun& r, const GateInputs& gi, const GateSearchResult& g) {
  const QuantizeFlags& f = r.f;
  const bool passed = g.shipped();
  const GateVerdict& v = g.verdict;
  const std::string spec = gi.gate->spec + (gi.is_default ? " (the default gate)" : "");
  if (f.json) {
    nlohmann::json j = ReportJson(r.qm, r.o, passed ? f.output : "", r.raised);
    AddMaxSize(r, j);
    AddVllm(r, j);
    j["eval"] = nlohmann::json::parse(frugal::ReportJson(v.report));
    nlohmann::json fails = nlohmann::json::array();
    for (const GateFailure& x : v.failures) fails.push_back(x.message);
    j["validated"] = passed;
    j["gate"] = {{"spec", gi.gate->spec},
                 {"default", gi.is_default},
                 {"passed", passed},
                 {"failures", fails},
                 {"not_measured", v.not_measured},
                 {"eval_text", f.eval_text.empty() ? kBuiltinText : f.eval_text}};
    if (gi.gate->uses_numeric())
      j["gate"]["eval_probes"] = f.eval_probes.empty() ? kBuiltinProbes : f.eval_probes;
    if (f.auto_mixed) {
      j["auto_mixed"] = {{"raised", RaisedNames(r.raised)},
                         {"bytes", r.qm.Size(r.raised).bytes},
                         {"bytes_before", r.base.bytes},
                         {"steps", StepsJson(g.steps)}};
    }
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  if (passed) std::fputs(ReportText(r.qm, r.o, f.output, r.raised).c_str(), stdout);
  if (passed) std::fputs(VllmText(r).c_str(), stdout);
  std::fputs(FormatReport(v.report).c_str(), stdout);
  PrintRaised(r, f.auto_mixed ? "auto-mixed" : "max-size");
  if (passed) {
    std::printf("gate %s: passed\n", spec.c_str());
  } else {
    std::printf("gate %s: FAILED, no model written\n", spec.c_str());
    for (const GateFailure& x : v.failures) std::printf("  %s\n", x.message.c_str());
    for (const std::string& c : v.not_measured)
      std::printf("  %s: not measured (the held-out text failed first)\n", c.c_str());
  }
}

// The gate: the reference (the input model) once, then each candidate against it
// (quant/gate_search.h); the output is left behind only when the gate holds.
int RunGated(QuantizeRun& r, const GateInputs& gi) {
  const QuantizeFlags& f = r.f;
  EvalReferenceOptions ro;
  ro.engine.model_path = f.input;
  ro.engine.threads = f.threads;
  ro.engine.int8_activations = false;
  ro.text = gi.eval_text;
  ro.probes = gi.probes;
  ro.max_tokens = f.eval_max_tokens;
  const EvalProgress progress = GateProgress(f.quiet);
  ro.progress = progress;
  auto evaluator = ReferenceEvaluator::Build(ro);
  if (!evaluator.ok()) return Fail(evaluator.status());
  const std::unique_ptr<QuantizedCandidates> source =
      IsVllm(f) ? QuantizedCandidates::ForVllm(r.qm, VllmExportOptions(r), f.frugal_gguf)
                : QuantizedCandidates::ForGguf(r.qm, GgufTarget(f), f.output);
  GateSearchOptions so;
  so.candidate_path = f.output + (IsVllm(f) ? ".candidate.gguf" : ".candidate");
  so.raise_until_pass = f.auto_mixed;
  so.max_raises = f.auto_mixed_max;
  so.progress = progress;
  if (!f.quiet) {
    so.on_step = [](const GateStep& s, const GateVerdict& v) {
      std::fprintf(stderr, "gate: %zu raised to INT8, %.2f MB: %s\n", s.raised.size(),
                   static_cast<double>(s.bytes) / 1e6,
                   v.passed() ? "passes" : v.failures.front().message.c_str());
    };
  }
  auto g = RunGateSearch(*source, **evaluator, *gi.gate, r.raised, so);
  if (!g.ok()) return Fail(g.status());
  r.raised = g->raised;
  r.vllm = source->vllm_report();
  PrintGateReport(r, gi, *g);
  if (!g->shipped()) {
    // The reason for the exit code, on stderr whatever else was asked (-q, --json).
    std::fprintf(stderr, "frugal quantize: the gate refused the model (%s), no file written: %s\n",
                 g->verdict.failures.front().message.c_str(),
                 f.auto_mixed
                     ? "--auto-mixed-max lets more tensors be raised, --no-gate writes it "
                       "unvalidated"
                     : "--auto-mixed raises tensors to INT8, --no-gate writes it unvalidated");
  }
  return g->shipped() ? 0 : kGateFailed;
}

int RunQuantize(const QuantizeFlags& f) {
  auto o = OptionsFromFlags(f);
  if (!o.ok()) return Fail(o.status());
  if (Status st = CheckWritable(f); !st.ok()) return Fail(st);
  auto gi = LoadGateInputs(f);
  if (!gi.ok()) return Fail(gi.status());
  auto max_size = MaxSizeFlag(f);
  if (!max_size.ok()) return Fail(max_size.status());
  auto shard_bytes = ShardSizeFlag(f);
  if (!shard_bytes.ok()) return Fail(shard_bytes.status());
  o->int8_alternatives = f.auto_mixed || max_size->has_value();
  o->g32_alternatives = max_size->has_value();  // --auto-mixed raises to INT8 only
  if (!f.quiet) {
    o->progress = ProgressPrinter();
    o->on_plan = PrintPlan;
  }
  auto m = QuantizeModel(*o);
  if (!m.ok()) return Fail(m.status());
  QuantizeRun r{f, *o, **m, (*m)->Size(), *max_size, {}, std::nullopt, *shard_bytes};
  int rc = 0;
  if (Status st = RaiseWithinMaxSize(r); !st.ok()) {
    rc = Fail(st);
  } else {
    rc = gi->gate ? RunGated(r, *gi) : WriteUngated(r);
  }
  // The quantization is complete: its checkpoint has nothing left to resume, whatever the gate
  // said. Kept when writing failed for want of disk (exit 1): --resume then writes without
  // quantizing again.
  if (!o->work_dir.empty() && !f.keep_work_dir && rc != 1) {
    if (Status st = RemoveQuantizeWorkDir(o->work_dir); !st.ok()) return Fail(st);
  }
  return rc;
}

}  // namespace

void AddQuantizeCommand(CLI::App& app, Commands& out) {
  auto f = std::make_shared<QuantizeFlags>();
  auto* cmd = app.add_subcommand("quantize",
                                 "quantize a model to Frugal's INT8/INT4 formats (RTN, GPTQ, AWQ)");
  cmd->add_option("-m,--model", f->input,
                  "the model to quantize: a GGUF file (any type the engine reads) or a Hugging "
                  "Face folder (llama, mistral, qwen2)")
      ->required();
  cmd->add_option("-o,--output", f->output,
                  "the quantized GGUF file to write (--target vllm: a folder)")
      ->required();
  auto* recipe =
      cmd->add_option("--recipe", f->recipe_file, "a recipe YAML file (docs/quantization.md)");
  cmd->add_option(
         "--preset", f->preset,
         WithDefault("a built-in recipe: mixed-int4-int8, all-int4, all-int8, f16, f32", f->preset))
      ->excludes(recipe);
  cmd->add_option("--method", f->method, WithDefault("rtn | gptq | awq | awq+gptq", f->method));
  cmd->add_option("--target", f->target,
                  WithDefault("who reads the output: frugal (its tiled INT8/INT4 formats), "
                              "llama.cpp (GGUF Q8_0 / Q4_0 / Q4_1 with the same values, groups "
                              "of 32; int4 -> Q4_1, int4_sym -> Q4_0; and the recipe types "
                              "q4_k, q5_k, q6_k, q5_0, q5_1, which both read) or vllm (-m and -o "
                              "are Hugging Face folders, -o in GPTQ's layout: vLLM, transformers)",
                              f->target))
      ->check(CLI::IsMember({"frugal", "llama.cpp", "vllm"}));
  cmd->add_option("--frugal-gguf", f->frugal_gguf,
                  "with --target vllm: also keep the Frugal GGUF of the same quantization (the "
                  "file the gate evaluates) here");
  cmd->add_option("--group-size", f->group_size,
                  "inputs per scale for every INT rule: 32, 64 or 128")
      ->check(CLI::IsMember({32, 64, 128}));
  cmd->add_option("--calib", f->calib,
                  "calibration data: a text file or JSONL ({\"text\"}, {\"prompt\", \"answer\"} or "
                  "{\"messages\"})");
  cmd->add_option("--calib-samples", f->calib_samples,
                  WithDefault("calibration windows of --seq-len tokens, spread evenly over the "
                              "file; 0 = all of them, so that every item is used",
                              f->calib_samples))
      ->check(CLI::Range(0, 100000));
  cmd->add_option("--seq-len", f->seq_len,
                  WithDefault("tokens per calibration sequence", f->seq_len))
      ->check(CLI::Range(8, 65536));
  cmd->add_option("--damp", f->damp,
                  WithDefault("GPTQ damping, a share of the Hessian's mean diagonal", f->damp))
      ->check(CLI::Range(0.0, 10.0));
  cmd->add_flag("--no-act-order", f->no_act_order, "GPTQ: quantize columns in their stored order");
  cmd->add_flag("--no-scale-search", f->no_scale_search,
                "INT4 group scales from the group's range alone, without the "
                "error-minimising search (every method)");
  cmd->add_option("--awq-grid", f->awq_grid,
                  WithDefault("AWQ: points of the scale exponent's grid", f->awq_grid))
      ->check(CLI::Range(1, 200));
  cmd->add_option("-t,--threads", f->threads, "compute threads (default: one per CPU)")
      ->check(CLI::Range(0, 1024));
  auto* gate = cmd->add_option(
      "--gate", f->gate,
      WithDefault("quality gate, e.g. 'ppl<+3%,kld<0.05,numeric>=0.98' (docs/eval.md): evaluate "
                  "against the input model after quantizing; exit 3 and write nothing when it "
                  "fails",
                  std::string(kDefaultGate)));
  cmd->add_flag("--no-gate", f->no_gate,
                "write the model without evaluating it (the report says it was not validated)")
      ->excludes(gate);
  cmd->add_option("--eval-text", f->eval_text,
                  WithDefault("held-out text the gate scores", std::string(kBuiltinText)));
  cmd->add_option(
      "--eval-probes", f->eval_probes,
      WithDefault("numeric probes for a gate with numeric", std::string(kBuiltinProbes)));
  cmd->add_option("--eval-max-tokens", f->eval_max_tokens,
                  WithDefault("held-out tokens the gate scores", f->eval_max_tokens))
      ->check(CLI::Range(16, 1 << 20));
  cmd->add_flag("--auto-mixed", f->auto_mixed,
                "raise the INT4 tensors with the largest output error to INT8, one at a time, "
                "until the gate holds");
  cmd->add_option(
      "--max-size", f->max_size,
      "a size for the tensor data, e.g. 104MB or 52GB: raise INT4 tensors to INT4 g32 or INT8, "
      "most output error removed per byte first, while it fits (then gated, unless --no-gate)");
  cmd->add_option("--max-memory", f->max_memory,
                  "cap on the calibration hidden states kept between layers, e.g. 2GB: windows are "
                  "dropped, evenly over the set, until the rest fit (the plan says how many)");
  cmd->add_option("--shard-size", f->shard_size,
                  "with --target vllm: most tensor bytes per safetensors file, e.g. 5GB, 500MB or "
                  "2000000000 (default 5GB, as Hugging Face): more and the weights are "
                  "model-0000N-of-0000M.safetensors with model.safetensors.index.json");
  cmd->add_option("--work-dir", f->work_dir,
                  "where each finished layer's tensors are spilled, with the calibration states "
                  "after it and the run's manifest: a checkpoint per layer (default OUTPUT.parts; "
                  "none = keep them in memory, no checkpoint). Removed once the output is written");
  cmd->add_flag("--resume", f->resume,
                "continue an interrupted run from its last finished layer (the work directory's "
                "checkpoint); the options must be the interrupted run's (exit 2 otherwise)");
  cmd->add_flag("--keep-work-dir", f->keep_work_dir,
                "leave the work directory in place after the output is written");
  cmd->add_option("--auto-mixed-max", f->auto_mixed_max,
                  WithDefault("most tensors --auto-mixed may raise", f->auto_mixed_max))
      ->check(CLI::Range(1, 10000));
  cmd->add_flag("--json", f->json, "print the report as one JSON object");
  cmd->add_flag("-q,--quiet", f->quiet, "no progress on stderr");
  out.emplace_back(cmd, [f] { return RunQuantize(*f); });
}

}  // namespace frugal::cli
