// scalefit-bench: the MPI-launched measurement driver. `comm` times collectives (mpi or nccl);
// `kernels` times a transformer layer's GEMMs (cpu or cublas).
// Only this file decides exit codes and calls MPI_Abort; everything else throws.
#include "scalefit/bench/comm.hpp"
#include "scalefit/bench/guard.hpp"
#include "scalefit/bench/options.hpp"
#include "scalefit/core/error.hpp"
#include "scalefit/bench/kernels_command.hpp"

#include <CLI/CLI.hpp>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

namespace {

/// FNV-1a of the arguments, to detect ranks launched with different command lines.
std::uint64_t hash_args(int argc, char **argv) {
  std::uint64_t h = 1469598103934665603ull;
  for (int i = 1; i < argc; ++i) {
    for (const char *c = argv[i]; *c; ++c)
      h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
    h = (h ^ 0xffu) * 1099511628211ull; // separator
  }
  return h;
}

int run(int argc, char **argv, int rank) {
  std::string command_line;
  for (int i = 0; i < argc; ++i)
    command_line += (i ? " " : "") + std::string(argv[i]);
  const std::uint64_t h = hash_args(argc, argv);
  std::uint64_t lo = 0, hi = 0;
  MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  if (lo != hi) {
    if (rank == 0)
      std::fprintf(stderr, "scalefit-bench: error: the arguments differ between ranks (every rank "
                           "must get the same command line)\n");
    return scalefit::kExitUsage;
  }
  CLI::App app{"scalefit-bench: MPI-launched measurements for scalefit (run under mpirun)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("scalefit-bench ") + SCALEFIT_VERSION);
  CLI::App *comm = app.add_subcommand(
      "comm", "Time collectives like nccl-tests (mpi or nccl backend), over group shapes");
  scalefit::bench::RawCommArgs raw;
  scalefit::bench::add_comm_options(*comm, raw);
  CLI::App *kernels = app.add_subcommand(
      "kernels", "Time the GEMMs and softmax of a transformer layer (cpu or cublas engine)");
  scalefit::kernels::RawKernelsArgs kraw;
  scalefit::kernels::add_kernels_options(*kernels, kraw);
  // An unknown first word: name it and the commands (CLI11 says only "A subcommand is required").
  const std::string first = argc > 1 ? argv[1] : "-";
  if (first[0] != '-' && first != "comm" && first != "kernels") {
    if (rank == 0)
      std::fprintf(stderr, "scalefit-bench: error: unknown command '%s' (commands: comm, kernels; "
                           "see 'scalefit-bench --help')\n", argv[1]);
    return scalefit::kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    if (rank == 0)
      return app.exit(e) == 0 ? scalefit::kExitOk : scalefit::kExitUsage;
    return e.get_exit_code() == 0 ? scalefit::kExitOk : scalefit::kExitUsage;
  }
  if (kernels->parsed())
    return scalefit::kernels::run_kernels(scalefit::kernels::validate_kernels_args(kraw),
                                          command_line);
  const scalefit::bench::CommOptions opts = scalefit::bench::validate_comm_args(raw);
  return scalefit::bench::run_comm(opts, command_line);
}

} // namespace

int main(int argc, char **argv) {
  // Stop at once when the launcher (mpirun/orted/srun's step daemon) dies, so a killed job
  // appends nothing more and releases its --out lock; the watchdog thread (guard.hpp) also
  // notices a changed parent. Not for singletons (no launcher).
  scalefit::bench::watch_launcher_from_start();
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int code = scalefit::kExitOk;
  try {
    code = run(argc, argv, rank);
  } catch (const scalefit::InputError &e) {
    // Thrown alike on every rank (see comm.hpp): one message, from rank 0.
    if (rank == 0)
      std::fprintf(stderr, "scalefit-bench: error: %s\n", e.what());
    code = scalefit::kExitUsage;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "scalefit-bench: error: %s\n", e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, scalefit::kExitInternal);
    return scalefit::kExitInternal;
  }
  std::fflush(stdout);
  MPI_Finalize();
  return code;
}
