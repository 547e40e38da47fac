// scalefit: fit measured collective curves and estimate transformer training from them.
// Only this file decides exit codes (README "Exit codes"; scalefit/core/error.hpp): subcommands
// throw, and main maps what they throw to one scheme.
#include "commands.hpp"

#include "scalefit/core/error.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <ios>
#include <new>
#include <string>
#include <system_error>

namespace {

/// The names of `app`'s subcommands, comma-separated ("fit, predict, ...").
std::string subcommand_names(const CLI::App &app) {
  std::string names;
  for (const CLI::App *sub : app.get_subcommands([](const CLI::App *) { return true; }))
    names += (names.empty() ? "" : ", ") + sub->get_name();
  return names;
}

/// Walks the leading words of the command line down the subcommand tree; returns a message for
/// the first word that names no subcommand where one is expected, or for a missing command
/// ("" when all is well; options and positionals of a leaf command are left to CLI11). CLI11 alone reports an unknown word as
/// "A subcommand is required", which names neither the word nor the commands.
std::string unknown_subcommand(const CLI::App &app, int argc, char **argv) {
  const CLI::App *level = &app;
  std::string path = "scalefit";
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.empty() || word[0] == '-') return "";
    if (level->get_subcommands([](const CLI::App *) { return true; }).empty()) return "";
    const auto match =
        level->get_subcommands([&](const CLI::App *sub) { return sub->check_name(word); });
    if (match.empty())
      return "unknown command '" + path + " " + word + "' (commands: " + subcommand_names(*level) +
             "; see '" + path + " --help')";
    level = match.front();
    path += " " + word;
  }
  if (level->get_require_subcommand_min() > 0)
    return "'" + path + "' needs a command: " + subcommand_names(*level) + " (see '" + path +
           " --help')";
  return "";
}

/// Flushes and checks standard output: a report printed to a full disk or a closed pipe is an
/// environment failure (exit 2), never a silent success.
bool stdout_ok() {
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return true;
  std::fprintf(stderr, "scalefit: error: cannot write standard output: %s\n", std::strerror(errno));
  return false;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"scalefit: ingest and fit collective measurements; estimate distributed transformer "
               "training from fit files"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "scalefit 0.1.0");
  app.footer("Exit status: 0 ok; 1 a check found wrong results; 2 bad input or environment "
             "(arguments, files, values, unwritable output, full disk); 3 internal error (a bug: "
             "please report it).");
  scalefit::cli::add_ingest_commands(app);
  scalefit::cli::add_fitting_commands(app);
  scalefit::cli::add_estimator_commands(app);
  scalefit::cli::add_report_command(app);
  scalefit::cli::add_calibrate_command(app);
  scalefit::cli::add_check_command(app);
  if (const std::string unknown = unknown_subcommand(app, argc, argv); !unknown.empty()) {
    std::fprintf(stderr, "scalefit: error: %s\n", unknown.c_str());
    return scalefit::kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    const int code = app.exit(e);  // prints help/version (code 0) or the error
    return code == 0 && stdout_ok() ? scalefit::kExitOk : scalefit::kExitUsage;
  } catch (const scalefit::InputError &e) {
    std::fprintf(stderr, "scalefit: error: %s\n", e.what());
    return scalefit::kExitUsage;
  } catch (const std::filesystem::filesystem_error &e) {
    // The environment: a path that cannot be created, read or renamed (names the path).
    std::fprintf(stderr, "scalefit: error: %s\n", e.what());
    return scalefit::kExitUsage;
  } catch (const std::ios_base::failure &e) {
    std::fprintf(stderr, "scalefit: error: I/O failure: %s\n", e.what());
    return scalefit::kExitUsage;
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "scalefit: internal error: out of memory (an input too large was not "
                         "refused with its size; please report it)\n");
    return scalefit::kExitInternal;
  } catch (const scalefit::RuntimeError &e) {
    std::fprintf(stderr, "scalefit: error: %s\n", e.what());
    return scalefit::kExitInternal;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "scalefit: internal error (a bug: please report it): %s\n", e.what());
    return scalefit::kExitInternal;
  }
  if (!stdout_ok())
    return scalefit::kExitUsage;
  return scalefit::cli::command_exit_code();
}
