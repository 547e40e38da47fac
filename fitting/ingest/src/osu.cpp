#include "scalefit/ingest/ingest.hpp"
#include "scalefit/core/error.hpp"
namespace scalefit::ingest {
IngestResult read_osu(const std::string &path, const IngestOptions &) {
  throw InputError("OSU reader not implemented yet", path);
}
}  // namespace scalefit::ingest
