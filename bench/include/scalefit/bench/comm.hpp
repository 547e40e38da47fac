/// \file comm.hpp
/// `scalefit-bench comm`: the MPI-launched collective benchmark (driver).
#pragma once

#include "scalefit/bench/options.hpp"

#include <string>

namespace scalefit::bench {

/// Runs the sweep on MPI_COMM_WORLD (every rank calls it with the same options): validates
/// everything (backend, types, roots, output file) before measuring, prints the nccl-tests table
/// on rank 0's stdout and progress on its stderr, and appends records to `opts.out`.
/// \returns kExitOk, or kExitCheck when -c found a wrong element.
/// \throws InputError on every rank alike for bad input (main prints it once, from rank 0);
///   RuntimeError when a library call fails.
int run_comm(const CommOptions &opts, const std::string &command_line);

/// Agreement across MPI_COMM_WORLD on a condition only some ranks can judge: when any rank
/// passes a non-empty `error`, every rank throws InputError with the lowest such rank's message.
void agree_or_throw(const std::string &error, const std::string &field = "");

} // namespace scalefit::bench
