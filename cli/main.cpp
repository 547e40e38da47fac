// scalefit: fit measured collective curves and estimate transformer training from them.
#include "commands.hpp"

#include "scalefit/core/error.hpp"

#include <cstdio>
#include <exception>

int main(int argc, char **argv) {
  CLI::App app{"scalefit: ingest and fit collective measurements; estimate distributed transformer "
               "training from fit files"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "scalefit 0.1.0");
  scalefit::cli::add_ingest_commands(app);
  scalefit::cli::add_fitting_commands(app);
  scalefit::cli::add_estimator_commands(app);
  scalefit::cli::add_report_command(app);
  scalefit::cli::add_calibrate_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e) == 0 ? 0 : scalefit::kExitUsage;
  } catch (const scalefit::InputError &e) {
    std::fprintf(stderr, "scalefit: error: %s\n", e.what());
    return scalefit::kExitUsage;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "scalefit: error: %s\n", e.what());
    return scalefit::kExitInternal;
  }
  return scalefit::kExitOk;
}
