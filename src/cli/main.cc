// `frugal <subcommand>`: flag parsing and output only; the work happens in the library. Each
// group of subcommands registers itself from its own file (cli/commands.h).
//
// Exit codes: 0 success; 2 bad input (flags, files, models, prompts), with one line on stderr
// starting "frugal: error: "; 1 an internal or I/O failure.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"Frugal: LLM serving that cuts the cost of every answer"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "frugal 0.1.0");

  frugal::cli::Commands commands;
  frugal::cli::AddModelCommands(app, commands);
  frugal::cli::AddInspectCommands(app, commands);
  frugal::cli::AddServeCommand(app, commands);
  frugal::cli::AddLoadgenCommand(app, commands);
  frugal::cli::AddGatewayCommands(app, commands);
  frugal::cli::AddQuantizeCommand(app, commands);
  frugal::cli::AddEvalCommand(app, commands);
  frugal::cli::AddCacheEvalCommand(app, commands);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    for (char& c : msg) {
      if (c == '\n') c = ' ';
    }
    std::fprintf(stderr, "frugal: error: %s (see frugal --help)\n", msg.c_str());
    return 2;
  }

  for (const auto& [cmd, run] : commands) {
    if (*cmd) return run();
  }
  return 2;
}
