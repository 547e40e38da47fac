// Google Benchmark: throughput of the nccl-tests and OSU readers on large synthetic logs (a long
// sweep with interleaved NCCL INFO lines, as a verbose NCCL_DEBUG=INFO run produces). Not a test;
// run build/bin/bench_ingest.
#include "scalefit/ingest/ingest.hpp"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

std::string make_nccl_log(int rows, int info_per_row) {
  const auto path = (std::filesystem::temp_directory_path() /
                     ("bench_ingest_nccl_" + std::to_string(rows) + ".txt"))
                        .string();
  std::ofstream out(path);
  out << "# nccl-tests version 2.18.3 nccl-headers=22807 nccl-library=22807\n"
         "# Collective test starting: all_reduce_perf\n#\n# Using devices\n";
  for (int r = 0; r < 8; ++r)
    out << "#  Rank  " << r << " Group  0 Pid  1 on node-a device  " << r
        << " [0000:01:00] NVIDIA H100\n";
  out << "#       size         count      type   redop    root     time   algbw   busbw  #wrong    "
         " "
         "time   algbw   busbw  #wrong\n";
  char buf[256];
  for (int i = 0; i < rows; ++i) {
    for (int k = 0; k < info_per_row; ++k)
      out << "node-a:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\n";
    const long size = 1024L * (i + 1);
    const double t = 10.0 + size * 1e-4;
    const double alg = size / (t * 1e-6) / 1e9;
    std::snprintf(
        buf, sizeof buf,
        "%12ld  %12ld  %8s  %6s  %6d  %7.2f  %6.2f  %6.2f  %6d  %7.2f  %6.2f  %6.2f  %6d\n", size,
        size / 4, "float", "sum", -1, t, alg, alg * 1.75, 0, t, alg, alg * 1.75, 0);
    out << buf;
  }
  out << "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1\n#\n"
         "# Collective test concluded: all_reduce_perf\n";
  return path;
}

void BM_read_nccl_tests(benchmark::State &state) {
  const std::string path = make_nccl_log(static_cast<int>(state.range(0)), 4);
  const auto bytes = std::filesystem::file_size(path);
  for (auto _ : state) {
    auto r = scalefit::ingest::read_nccl_tests(path);
    benchmark::DoNotOptimize(r.measurements.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["rows"] = static_cast<double>(state.range(0));
  std::filesystem::remove(path);
}
BENCHMARK(BM_read_nccl_tests)->Arg(100)->Arg(10000)->Unit(benchmark::kMillisecond);

void BM_read_osu(benchmark::State &state) {
  const auto path = (std::filesystem::temp_directory_path() / "bench_ingest_osu.txt").string();
  {
    std::ofstream out(path);
    out << "# OSU MPI Allreduce Latency Test v7.4\n# Datatype: MPI_FLOAT.\n"
           "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations\n";
    for (long i = 1; i <= state.range(0); ++i)
      out << 4 * i << "   " << 1.0 + i * 0.01 << "   1.0   2.0   1000\n";
  }
  const auto bytes = std::filesystem::file_size(path);
  for (auto _ : state) {
    auto r = scalefit::ingest::read_osu(path);
    benchmark::DoNotOptimize(r.measurements.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  std::filesystem::remove(path);
}
BENCHMARK(BM_read_osu)->Arg(10000)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
