// Placeholder until estimator/ lands: registers nothing.
#include "commands.hpp"
namespace scalefit::cli {
void add_estimator_commands(CLI::App &) {}
}  // namespace scalefit::cli
