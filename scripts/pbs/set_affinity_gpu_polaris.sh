#!/usr/bin/env bash
# GPU affinity on Polaris (ALCF's documented wrapper, written out here): one GPU per local rank,
# in reverse order so that rank 0's GPU is the one nearest its CPU cores under
# `--cpu-bind depth --depth 8`. mpiexec sets PMI_LOCAL_RANK; OpenMPI's local rank is used
# elsewhere. Usage: mpiexec ... set_affinity_gpu_polaris.sh COMMAND ARGS...
num_gpus=${NUM_GPUS:-4}
local_rank=${PMI_LOCAL_RANK:-${OMPI_COMM_WORLD_LOCAL_RANK:-${SLURM_LOCALID:-0}}}
export CUDA_VISIBLE_DEVICES=$((num_gpus - 1 - local_rank % num_gpus))
exec "$@"
