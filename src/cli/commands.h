// Subcommands that live in their own file under src/cli/ register here, so main.cc stays a list.
#pragma once

#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/strings.h"
#include "frugal/status.h"

namespace frugal::cli {

// One line "frugal: error: ..." on stderr; exit code 1 for internal / I/O failures, 2 otherwise.
inline int Fail(const Status& st) {
  std::string msg = st.message();
  for (char& c : msg) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::fprintf(stderr, "frugal: error: %s\n", msg.c_str());
  return st.code() == StatusCode::kInternal || st.code() == StatusCode::kIoError ? 1 : 2;
}

// Blocks SIGINT and SIGTERM in the calling thread before any other thread starts (threads
// inherit the mask), so only the server command's sigwait sees them; ignores SIGPIPE (a client
// that leaves must not end the process). Returns the set to sigwait on.
inline sigset_t BlockStopSignals() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return s;
}

// A default value for a help text: integers as they are, others as ShortNumber writes them.
template <class T>
std::string DefaultText(const T& v) {
  if constexpr (std::is_convertible_v<T, std::string>) {
    return v;
  } else if constexpr (std::is_integral_v<T>) {
    return std::to_string(v);
  } else {
    return ShortNumber(static_cast<double>(v));
  }
}

// A help text that ends with the option's default, read from the value itself so the two cannot
// disagree: WithDefault("calibration sequences", 32) -> "calibration sequences (default 32)".
template <class T>
std::string WithDefault(const std::string& what, const T& v) {
  return what + " (default " + DefaultText(v) + ")";
}

// Parsed subcommand -> what runs it (returns the exit code).
using Commands = std::vector<std::pair<CLI::App*, std::function<int()>>>;

void AddModelCommands(CLI::App& app, Commands& out);     // model_cmds.cc: generate, embed, ...
void AddInspectCommands(CLI::App& app, Commands& out);   // inspect_cmds.cc: info, tokenize, dequant
void AddServeCommand(CLI::App& app, Commands& out);      // serve_cmd.cc
void AddLoadgenCommand(CLI::App& app, Commands& out);    // loadgen_cmd.cc
void AddGatewayCommands(CLI::App& app, Commands& out);   // gateway_cmd.cc: gateway, up
void AddQuantizeCommand(CLI::App& app, Commands& out);   // quantize_cmd.cc
void AddEvalCommand(CLI::App& app, Commands& out);       // eval_cmd.cc
void AddCacheEvalCommand(CLI::App& app, Commands& out);  // cache_eval_cmd.cc

}  // namespace frugal::cli
