// Placeholder until fitting/ingest lands: registers nothing.
#include "commands.hpp"
namespace scalefit::cli {
void add_ingest_commands(CLI::App &) {}
}  // namespace scalefit::cli
