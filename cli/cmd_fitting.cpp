// Placeholder until fitting/ lands: registers nothing.
#include "commands.hpp"
namespace scalefit::cli {
void add_fitting_commands(CLI::App &) {}
}  // namespace scalefit::cli
