// AllToAllv: the count matrices (uniform, skewed), the layouts built from them, the plan cache,
// the check's expected values against an independent simulation, and the in-place N/A.
#include "scalefit/bench/alltoallv.hpp"
#include "scalefit/bench/collective.hpp"
#include "scalefit/bench/options.hpp"
#include "scalefit/core/error.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

using namespace scalefit;
using namespace scalefit::bench;

namespace {

std::size_t sum(const std::vector<std::size_t> &v) {
  return std::accumulate(v.begin(), v.end(), std::size_t{0});
}

const AlltoallvMatrix kBoth[] = {AlltoallvMatrix::uniform, AlltoallvMatrix::skewed};

} // namespace

TEST(Alltoallv, CoreNamesFactorAndCountsAsAlltoall) {
  EXPECT_EQ(op_name(Op::alltoallv), "alltoallv");
  EXPECT_EQ(parse_op("alltoallv"), Op::alltoallv);
  EXPECT_EQ(parse_op("AlltoAllv"), Op::alltoallv); // nccl-tests' testColl name
  EXPECT_EQ(parse_op("alltoall"), Op::alltoall);
  EXPECT_DOUBLE_EQ(busbw_factor(Op::alltoallv, 8), 7.0 / 8.0);
  EXPECT_DOUBLE_EQ(busbw_factor(Op::alltoallv, 1), 0.0);
  EXPECT_TRUE(count_divided_by_ranks(Op::alltoallv));
  // 1 MiB of float on 8 ranks: 32768 elements per peer; 1000 B on 3 ranks of int32 rounds down.
  EXPECT_EQ(count_per_rank(Op::alltoallv, 1 << 20, 4, 8), 32768u);
  EXPECT_EQ(count_per_rank(Op::alltoallv, 1000, 4, 3), 83u);
  EXPECT_EQ(effective_bytes(Op::alltoallv, 1000, 4, 3), 996u);
  EXPECT_FALSE(op_has_redop(Op::alltoallv));
  EXPECT_FALSE(op_has_root(Op::alltoallv));
  EXPECT_EQ(collective(Op::alltoallv).nccl_tests_name, "alltoallv_perf");
}

TEST(Alltoallv, MatrixNamesRoundTrip) {
  for (AlltoallvMatrix m : kBoth)
    EXPECT_EQ(parse_alltoallv_matrix(alltoallv_matrix_name(m)), m);
  EXPECT_EQ(alltoallv_matrix_name(AlltoallvMatrix::skewed), "skewed");
  EXPECT_FALSE(parse_alltoallv_matrix("zipf").has_value());
  EXPECT_FALSE(parse_alltoallv_matrix("Uniform").has_value());
}

TEST(Alltoallv, UniformRowIsCountToEveryPeer) {
  EXPECT_EQ(alltoallv_row(AlltoallvMatrix::uniform, 5, 4), (std::vector<std::size_t>{5, 5, 5, 5}));
  EXPECT_TRUE(alltoallv_row(AlltoallvMatrix::uniform, 5, 0).empty());
}

TEST(Alltoallv, SkewedRowHandValues) {
  // n = 2, count 3: 6 elements, weights 1 and 1/2 -> 4 to the next rank, 2 to itself.
  EXPECT_EQ(alltoallv_row(AlltoallvMatrix::skewed, 3, 2), (std::vector<std::size_t>{2, 4}));
  // n = 1: everything to itself.
  EXPECT_EQ(alltoallv_row(AlltoallvMatrix::skewed, 7, 1), (std::vector<std::size_t>{7}));
  // n = 4, count 25: 100 elements, weights 1, 1/2, 1/3, 1/4 (sum 25/12): 48, 24, 16, 12 exactly;
  // offset 1 most, 2, 3, then self.
  EXPECT_EQ(alltoallv_row(AlltoallvMatrix::skewed, 25, 4),
            (std::vector<std::size_t>{12, 48, 24, 16}));
  // n = 8, count 1: 8 elements, exact shares 2.94 1.47 0.98 0.74 0.59 0.49 0.42 0.37 by
  // popularity; floors 2 1 0 0 0 0 0 0, five more by largest remainder -> 3 1 1 1 1 1 0 0.
  EXPECT_EQ(alltoallv_row(AlltoallvMatrix::skewed, 1, 8),
            (std::vector<std::size_t>{0, 3, 1, 1, 1, 1, 1, 0}));
}

TEST(Alltoallv, SkewedRowSumsExactlyAndFallsOffAsZipf) {
  for (int n : {1, 2, 3, 5, 8, 16, 64})
    for (std::size_t c : {0u, 1u, 3u, 1000u, 1u << 20}) {
      const auto row = alltoallv_row(AlltoallvMatrix::skewed, c, n);
      ASSERT_EQ(row.size(), static_cast<std::size_t>(n));
      EXPECT_EQ(sum(row), static_cast<std::size_t>(n) * c) << "n=" << n << " c=" << c;
      // Popularity order: offset 1, 2, ..., n-1, then 0 (self), non-increasing.
      for (int q = 0; q + 1 < n; ++q)
        EXPECT_GE(row[static_cast<std::size_t>((q + 1) % n)],
                  row[static_cast<std::size_t>((q + 2) % n)])
            << "n=" << n << " c=" << c << " q=" << q;
      if (c >= 1000 && n > 1) {
        double h = 0;
        for (int k = 1; k <= n; ++k)
          h += 1.0 / k;
        const double total = static_cast<double>(n) * static_cast<double>(c);
        EXPECT_NEAR(static_cast<double>(row[1]), total / h, 1.0) << n;
        EXPECT_NEAR(static_cast<double>(row[0]), total / (n * h), 1.0) << n;
        EXPECT_GT(row[1], row[0]); // skewed: the favourite gets more than the least popular
      }
    }
}

TEST(Alltoallv, LayoutsAreConsistentAcrossRanks) {
  for (AlltoallvMatrix m : kBoth)
    for (int n = 1; n <= 9; ++n)
      for (std::size_t c : {0u, 1u, 7u, 100u}) {
        std::vector<AlltoallvLayout> ls;
        for (int r = 0; r < n; ++r)
          ls.push_back(alltoallv_layout(m, c, n, r));
        for (int r = 0; r < n; ++r) {
          const AlltoallvLayout &l = ls[static_cast<std::size_t>(r)];
          ASSERT_EQ(l.send_counts.size(), static_cast<std::size_t>(n));
          // Every rank sends and receives n * count: the size column is n * count * type size.
          EXPECT_EQ(sum(l.send_counts), n * c);
          EXPECT_EQ(sum(l.recv_counts), n * c);
          std::size_t so = 0, ro = 0;
          for (int p = 0; p < n; ++p) {
            const auto q = static_cast<std::size_t>(p);
            EXPECT_EQ(l.send_displs[q], so);
            EXPECT_EQ(l.recv_displs[q], ro);
            so += l.send_counts[q];
            ro += l.recv_counts[q];
            // What r receives from p is what p sends to r.
            EXPECT_EQ(l.recv_counts[q], ls[q].send_counts[static_cast<std::size_t>(r)])
                << alltoallv_matrix_name(m) << " n=" << n << " r=" << r << " p=" << p;
          }
        }
      }
}

TEST(Alltoallv, PlanIsCachedPerKey) {
  const AlltoallvPlan &a = alltoallv_plan(AlltoallvMatrix::skewed, 10, 4, 1);
  const auto before = a.layout.send_counts;
  const AlltoallvPlan &b = alltoallv_plan(AlltoallvMatrix::skewed, 10, 4, 1);
  EXPECT_EQ(&a, &b);
  EXPECT_EQ(b.layout.send_counts, before);
  const AlltoallvPlan &c = alltoallv_plan(AlltoallvMatrix::uniform, 10, 4, 1);
  EXPECT_EQ(c.matrix, AlltoallvMatrix::uniform);
  EXPECT_EQ(c.layout.send_counts, (std::vector<std::size_t>{10, 10, 10, 10}));
  const AlltoallvPlan &d = alltoallv_plan(AlltoallvMatrix::skewed, 10, 4, 2);
  EXPECT_EQ(d.rank, 2);
  EXPECT_EQ(d.layout.send_counts, alltoallv_layout(AlltoallvMatrix::skewed, 10, 4, 2).send_counts);
}

// The check's expected values against a direct simulation of the exchange: rank i's send buffer
// holds input(i, k) at k; its segment for peer j is M[i][j] elements, in peer order, with
// M[i][j] = row[(j - i) mod n]; rank me's result is the segments for me from sources 0..n-1.
TEST(Alltoallv, ExpectedMatchesASimulationOfTheMatrix) {
  const Collective &coll = collective(Op::alltoallv);
  for (AlltoallvMatrix m : kBoth)
    for (int n : {1, 2, 3, 4, 7})
      for (std::size_t c : {1u, 5u, 9u}) {
        const CheckPattern p = check_pattern(DType::float32, RedOp::sum, n);
        const auto row = alltoallv_row(m, c, n);
        const auto un = static_cast<std::size_t>(n);
        auto cnt = [&](std::size_t i, std::size_t j) { return row[(j + un - i) % un]; };
        for (int me = 0; me < n; ++me) {
          const auto ume = static_cast<std::size_t>(me);
          std::vector<double> want;
          for (std::size_t src = 0; src < un; ++src) {
            std::size_t start = 0;
            for (std::size_t j = 0; j < ume; ++j)
              start += cnt(src, j);
            for (std::size_t k = 0; k < cnt(src, ume); ++k)
              want.push_back(p.input(static_cast<int>(src), start + k));
          }
          ASSERT_EQ(want.size(), coll.recv_count(c, n));
          CollArgs a;
          a.count = c;
          a.rank = me;
          a.nranks = n;
          a.matrix = m;
          for (std::size_t j = 0; j < want.size(); ++j)
            ASSERT_EQ(coll.expected(p, a, j / c, j % c), want[j])
                << alltoallv_matrix_name(m) << " n=" << n << " c=" << c << " rank " << me
                << " j=" << j;
        }
      }
}

TEST(Alltoallv, InPlaceIsNotRunOnEitherBackend) {
  for (const char *b : {"mpi", "nccl"}) {
    EXPECT_NE(not_run_reason(b, Op::alltoallv, Placement::in_place).find("no in-place alltoallv"),
              std::string::npos)
        << b;
    EXPECT_EQ(not_run_reason(b, Op::alltoallv, Placement::out_of_place), "") << b;
  }
}

TEST(Alltoallv, ContextDescribesTheMatrixOnlyWhenMeasured) {
  EXPECT_TRUE(alltoallv_context({Op::allreduce, Op::alltoall}, AlltoallvMatrix::skewed).is_null());
  const auto u = alltoallv_context({Op::alltoallv}, AlltoallvMatrix::uniform);
  EXPECT_EQ(u["matrix"], "uniform");
  EXPECT_FALSE(u.contains("exponent"));
  const auto s = alltoallv_context(all_ops(), AlltoallvMatrix::skewed);
  EXPECT_EQ(s["matrix"], "skewed");
  EXPECT_DOUBLE_EQ(s["exponent"].get<double>(), kAlltoallvSkewExponent);
}

TEST(Alltoallv, MatrixOption) {
  EXPECT_EQ(parse_comm_args({"--ops", "alltoallv"}).alltoallv_matrix, AlltoallvMatrix::uniform);
  const CommOptions o = parse_comm_args({"--ops", "alltoallv", "--alltoallv-matrix", "skewed"});
  EXPECT_EQ(o.alltoallv_matrix, AlltoallvMatrix::skewed);
  EXPECT_EQ(o.ops, (std::vector<Op>{Op::alltoallv}));
  try {
    (void)parse_comm_args({"--alltoallv-matrix", "zipf"});
    FAIL() << "accepted --alltoallv-matrix zipf";
  } catch (const InputError &e) {
    EXPECT_NE(std::string(e.what()).find("--alltoallv-matrix"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("zipf"), std::string::npos) << e.what();
  }
}
