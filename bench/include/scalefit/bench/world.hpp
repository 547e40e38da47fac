/// \file world.hpp
/// Small MPI_COMM_WORLD helpers of the driver: rank and size, string broadcast and gather, host
/// name, the node layout from shared-memory communicators, and the environment a context
/// records. Collective calls are marked; every rank must make them in the same order.
#pragma once

#include "scalefit/bench/groups.hpp"

#include <map>
#include <string>
#include <vector>

namespace scalefit::bench {

int world_rank(); ///< rank in MPI_COMM_WORLD
int world_size(); ///< ranks in MPI_COMM_WORLD

/// Broadcasts a string from rank `root` of MPI_COMM_WORLD (collective).
std::string bcast_string(std::string s, int root);

/// Every rank's string, on every rank, in rank order (collective; truncated at 255 characters).
std::vector<std::string> allgather_strings(const std::string &mine);

/// MPI_Get_processor_name of the calling rank.
std::string host_name();

/// The node layout (collective): nodes from MPI_COMM_TYPE_SHARED, or `emulate_nodes` > 0
/// contiguous pseudo-nodes. Also returns the calling rank's real local rank (it picks the GPU
/// even when nodes are emulated) and the number of ranks really on its node (they share its
/// memory). \throws InputError for an emulation that does not divide the ranks.
NodeLayout detect_layout(int emulate_nodes, int &local_rank_out, int &local_size_out);

/// NCCL_*, OMPI_* and UCX_* variables of the environment, for the context record.
std::map<std::string, std::string> captured_env();

} // namespace scalefit::bench
