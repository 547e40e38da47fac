// Error messages of the SCALEFIT_*_CHECK macros: library, error, call, location, rank and host.
#include "scalefit/bench/check.hpp"

#include <unistd.h>

#include <array>

namespace scalefit::bench::detail {

std::string where() {
  int rank = -1;
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized)
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) != 0)
    host[0] = '\0';
  return "rank " + std::to_string(rank) + " on " + (host[0] ? host.data() : "unknown host");
}

void throw_call_error(const char *lib, const std::string &name, const std::string &text,
                      const char *expr, const char *file, int line) {
  throw RuntimeError(std::string(lib) + " error " + name + " (" + text + ") in `" + expr + "` at " +
                     file + ":" + std::to_string(line) + " on " + where());
}

void throw_mpi_error(int code, const char *expr, const char *file, int line) {
  int cls = 0;
  MPI_Error_class(code, &cls);
  std::array<char, MPI_MAX_ERROR_STRING> text{};
  int len = 0;
  MPI_Error_string(code, text.data(), &len);
  throw_call_error("MPI", "class " + std::to_string(cls) + " (code " + std::to_string(code) + ")",
                   std::string(text.data(), static_cast<std::size_t>(len)), expr, file, line);
}

} // namespace scalefit::bench::detail
