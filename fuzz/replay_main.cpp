// Stand-alone driver of one fuzz target without libFuzzer (fuzz/README.md): calls
// LLVMFuzzerTestOneInput on each file named on the command line, or on every file of each named
// directory. The normal test suite links it with each fuzz_<target>.cpp to replay
// tests/data/fuzz-regressions/<target>/ (inputs that once crashed) and the seed inputs, so the
// target's contract (return, or throw InputError) is checked by every build, with any compiler.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size);

namespace {

bool replay(const std::filesystem::path &file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", file.c_str());
    return false;
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::printf("replay: %s (%zu B)\n", file.c_str(), bytes.size());
  std::fflush(stdout);
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t *>(bytes.data()), bytes.size());
  return true;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
    return 2;
  }
  int done = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    std::error_code ec;
    if (std::filesystem::is_directory(arg, ec)) {
      for (const auto &entry : std::filesystem::directory_iterator(arg))
        if (entry.is_regular_file()) {
          if (!replay(entry.path())) return 2;
          ++done;
        }
    } else {
      if (!replay(arg)) return 2;
      ++done;
    }
  }
  std::printf("replay: %d input(s), each returned or was refused with InputError\n", done);
  return done > 0 ? 0 : 2;
}
