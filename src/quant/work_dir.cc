#include "quant/work_dir.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/durable.h"

namespace frugal {
namespace quant_internal {
namespace {

namespace fs = std::filesystem;

constexpr int kWorkDirFormat = 1;
constexpr const char* kManifest = "manifest.json";

// The names a work directory's files have (nothing else is written or removed).
bool IsWorkFile(const std::string& name) {
  if (name == kManifest || name == "manifest.json.tmp" || name == "tail.bin") return true;
  for (const char* prefix : {"layer-", "states-"}) {
    if (!name.starts_with(prefix)) continue;
    const std::string rest = name.substr(std::strlen(prefix));
    const size_t dot = rest.find('.');
    if (dot != 5 || rest.find_first_not_of("0123456789") != 5) return false;
    const std::string ext = rest.substr(dot);
    return ext == ".bin" || ext == ".json" || ext == ".bin.tmp" || ext == ".json.tmp";
  }
  return false;
}

// Writes `bytes` to path + ".tmp", syncs it and renames it to path (common/durable.h).
Status WriteDurably(const std::string& path, std::span<const uint8_t> bytes) {
  return WriteFileAtomically(path, [&](std::FILE* f) {
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    return Status::Ok();
  });
}

Status WriteTextDurably(const std::string& path, const std::string& text) {
  return WriteDurably(
      path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

StatusOr<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string WorkDir::LayerFile(int64_t li, const char* ext) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "layer-%05lld%s", static_cast<long long>(li), ext);
  return buf;
}

StatusOr<std::unique_ptr<WorkDir>> WorkDir::Open(const std::string& dir, const RunManifest& run,
                                                 int64_t n_layer, bool resume) {
  auto wd = std::unique_ptr<WorkDir>(new WorkDir());
  wd->dir_ = dir;
  wd->run_ = run;
  wd->n_layer_ = n_layer;
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    if (!fs::create_directories(dir, ec))
      return InvalidArgument("cannot make the work directory " + dir + ": " + ec.message());
  } else if (!fs::is_directory(dir, ec)) {
    return InvalidArgument("--work-dir " + dir + " is not a directory");
  }
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (!IsWorkFile(e.path().filename().string())) {
      return InvalidArgument("the work directory " + dir + " holds " +
                             e.path().filename().string() +
                             ", which is not a quantization checkpoint's: choose an empty or new "
                             "--work-dir");
    }
  }
  const std::string manifest_path = (fs::path(dir) / kManifest).string();
  nlohmann::json j;
  if (fs::exists(manifest_path, ec)) {
    FRUGAL_ASSIGN_OR_RETURN(const std::string text, ReadText(manifest_path));
    j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || !j.contains("run") || !j["run"].is_object() ||
        j.value("format", 0) != kWorkDirFormat || !j.contains("layers_done") ||
        !j["layers_done"].is_number_integer()) {
      return InvalidArgument(manifest_path + " is not a checkpoint this frugal can read: remove " +
                             dir + " to start again");
    }
  }
  // A manifest with no finished layer is no checkpoint: nothing to continue.
  if (j.is_object() && j["layers_done"].get<int64_t>() > 0) {
    const int64_t done = j["layers_done"].get<int64_t>();
    if (!resume) {
      return InvalidArgument(dir + " holds the checkpoint of an interrupted run (" +
                             std::to_string(done) + " of " + std::to_string(n_layer) +
                             " layers done): --resume continues it, or remove the folder to "
                             "start again");
    }
    RunManifest saved;
    for (const auto& [k, v] : j["run"].items()) {
      if (v.is_string()) saved[k] = v.get<std::string>();
    }
    for (const auto& [k, v] : run) {
      const auto it = saved.find(k);
      const std::string was = it == saved.end() ? "(not set)" : it->second;
      if (was != v) {
        const bool short_values = was.size() <= 80 && v.size() <= 80 &&
                                  was.find('\n') == std::string::npos &&
                                  v.find('\n') == std::string::npos;
        return InvalidArgument("--resume: the checkpoint in " + dir + " was made with " +
                               (short_values ? k + " " + was + ", this run has " + v
                                             : "another " + k + " than this run's") +
                               " (run with the same options, or remove the folder to start again)");
      }
    }
    if (saved.size() != run.size()) {
      return InvalidArgument("--resume: the checkpoint in " + dir +
                             " was made by another version of frugal's options: remove the "
                             "folder to start again");
    }
    if (done < 0 || done > n_layer) return InvalidArgument(manifest_path + ": bad layers_done");
    wd->layers_done_ = done;
    wd->states_ = j.value("states", "");
  } else {
    // Whatever an unfinished first layer left.
    FRUGAL_RETURN_IF_ERROR(RemoveQuantizeWorkDir(dir, /*keep_dir=*/true));
    FRUGAL_RETURN_IF_ERROR(wd->WriteManifest(0, ""));
  }
  return wd;
}

Status WorkDir::WriteManifest(int64_t layers_done, const std::string& states) const {
  nlohmann::ordered_json j;
  j["format"] = kWorkDirFormat;
  j["what"] = "frugal quantize checkpoint (docs/quantization.md, \"Resume\")";
  j["run"] = run_;
  j["n_layer"] = n_layer_;
  j["layers_done"] = layers_done;
  j["states"] = states;
  return WriteTextDurably((fs::path(dir_) / kManifest).string(), j.dump(2) + "\n");
}

Status WorkDir::BeginLayer(int64_t li) {
  std::error_code ec;
  fs::remove(fs::path(dir_) / LayerFile(li, ".bin"), ec);
  fs::remove(fs::path(dir_) / LayerFile(li, ".json"), ec);
  return Status::Ok();
}

Status WorkDir::BeginTail() {
  std::error_code ec;
  fs::remove(fs::path(dir_) / "tail.bin", ec);
  return Status::Ok();
}

StatusOr<QuantizedModel::Blob> WorkDir::Append(const std::string& file,
                                               std::span<const uint8_t> bytes) {
  const std::string path = (fs::path(dir_) / file).string();
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "ab"), &std::fclose);
  if (!f) return IoError("cannot write " + path + ": " + std::strerror(errno));
  QuantizedModel::Blob b;
  b.file = path;
  const off_t at = ::ftello(f.get());
  if (at < 0) return IoError("cannot write " + path + ": " + std::strerror(errno));
  b.offset = static_cast<uint64_t>(at);
  b.size = bytes.size();
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f.get()) == bytes.size();
  if (std::fclose(f.release()) != 0) ok = false;
  if (!ok) return IoError("cannot write " + path + " (disk full?)");
  return b;
}

Status WorkDir::CommitLayer(int64_t li, const std::string& layer_json,
                            const std::vector<std::vector<float>>& states) {
  const std::string bin = (fs::path(dir_) / LayerFile(li, ".bin")).string();
  std::error_code ec;
  if (fs::exists(bin, ec)) FRUGAL_RETURN_IF_ERROR(SyncPath(bin));
  FRUGAL_RETURN_IF_ERROR(
      WriteTextDurably((fs::path(dir_) / LayerFile(li, ".json")).string(), layer_json));
  std::string states_file;
  if (!states.empty()) {
    char name[64];
    std::snprintf(name, sizeof name, "states-%05lld.bin", static_cast<long long>(li + 1));
    states_file = name;
    const std::string path = (fs::path(dir_) / states_file).string();
    FRUGAL_RETURN_IF_ERROR(WriteFileAtomically(path, [&](std::FILE* f) {
      for (const std::vector<float>& st : states) {
        if (std::ferror(f) != 0) break;
        std::fwrite(st.data(), sizeof(float), st.size(), f);
      }
      return Status::Ok();
    }));
  }
  FRUGAL_RETURN_IF_ERROR(WriteManifest(li + 1, states_file));
  if (!states_.empty() && states_ != states_file) fs::remove(fs::path(dir_) / states_, ec);
  states_ = states_file;
  layers_done_ = li + 1;
  return Status::Ok();
}

StatusOr<std::string> WorkDir::LayerJson(int64_t li) const {
  return ReadText((fs::path(dir_) / LayerFile(li, ".json")).string());
}

Status WorkDir::LoadStates(std::vector<std::vector<float>>& states) const {
  if (states.empty()) return Status::Ok();
  if (states_.empty()) return DataLoss(dir_ + ": the checkpoint has no calibration states");
  const std::string path = (fs::path(dir_) / states_).string();
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return DataLoss("cannot read " + path + ": " + std::strerror(errno));
  size_t want = 0;
  for (const std::vector<float>& s : states) want += s.size() * sizeof(float);
  std::error_code ec;
  if (fs::file_size(path, ec) != want) {
    return DataLoss(path + " does not hold this run's calibration states (" + std::to_string(want) +
                    " bytes expected)");
  }
  for (std::vector<float>& s : states) {
    if (std::fread(s.data(), sizeof(float), s.size(), f.get()) != s.size())
      return DataLoss("cannot read " + path);
  }
  return Status::Ok();
}

}  // namespace quant_internal

Status RemoveQuantizeWorkDir(const std::string& dir, bool keep_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return Status::Ok();
  std::vector<fs::path> ours;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (quant_internal::IsWorkFile(e.path().filename().string())) ours.push_back(e.path());
  }
  for (const fs::path& p : ours) {
    if (!fs::remove(p, ec) && ec)
      return IoError("cannot remove " + p.string() + ": " + ec.message());
  }
  if (!keep_dir && fs::is_empty(dir, ec)) fs::remove(dir, ec);
  return Status::Ok();
}

}  // namespace frugal
