// Reader of scalefit's NCCL profiler plugin, and the TUNING-line parser (see nccl_profiler.hpp).
#include "scalefit/bench/nccl_profiler.hpp"

#include "nccl_profiler_abi.h"

#include <dlfcn.h>
#include <strings.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <system_error>

namespace scalefit::bench {

namespace {

namespace fs = std::filesystem;

// NCCL copies the plugin name into a 255-byte buffer (MAX_STR_LEN, src/plugin/plugin_open.cc).
constexpr std::size_t k_nccl_max_plugin_name = 255;

struct PluginState {
  std::mutex mutex;
  bool installed = false;
  ProfilerStatus status;
  void *handle = nullptr; // ours, never closed
  scalefit_profiler_query_v1_fn query = nullptr;
  scalefit_profiler_reset_v1_fn reset = nullptr;
};

PluginState &state() {
  static PluginState s;
  return s;
}

ProfilerStatus absent(std::string why) {
  ProfilerStatus s;
  s.source = ProfilerStatus::Source::absent;
  s.detail = std::move(why);
  return s;
}

std::string dl_error() {
  const char *e = dlerror();
  return e != nullptr ? e : "unknown dlopen error";
}

bool same_file(const std::string &a, const std::string &b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec) && !ec;
}

// Binds the query functions of an open handle; false when one is missing.
bool bind(PluginState &s, void *handle) {
  auto query = reinterpret_cast<scalefit_profiler_query_v1_fn>(
      dlsym(handle, SCALEFIT_PROFILER_QUERY_SYMBOL));
  auto reset = reinterpret_cast<scalefit_profiler_reset_v1_fn>(
      dlsym(handle, SCALEFIT_PROFILER_RESET_SYMBOL));
  if (query == nullptr || reset == nullptr)
    return false;
  s.handle = handle;
  s.query = query;
  s.reset = reset;
  return true;
}

// The plugin's functions, binding them on first use from a copy NCCL (or anyone) already loaded
// from our path: RTLD_NOLOAD opens nothing new. Caller holds s.mutex.
bool bound(PluginState &s) {
  if (s.query != nullptr)
    return true;
  const std::string path = profiler_plugin_path();
  if (path.empty())
    return false;
  void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (h == nullptr)
    return false;
  if (!bind(s, h)) {
    dlclose(h);
    return false;
  }
  return true; // the handle is kept: the library's records stay after NCCL closes its own
}

// Opens `path` and binds it into `s` (kept open). Caller holds s.mutex.
bool open_and_bind(PluginState &s, const std::string &path) {
  void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr)
    return false;
  if (!bind(s, h)) {
    dlclose(h);
    return false;
  }
  return true;
}

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// Consumes `lit` at the front of `s`.
bool eat(std::string_view &s, std::string_view lit) {
  if (s.substr(0, lit.size()) != lit)
    return false;
  s.remove_prefix(lit.size());
  return true;
}

// Consumes a non-empty run of name characters.
bool eat_name(std::string_view &s, std::string &out) {
  std::size_t n = 0;
  while (n < s.size() && is_name_char(s[n]))
    ++n;
  if (n == 0)
    return false;
  out.assign(s.substr(0, n));
  s.remove_prefix(n);
  return true;
}

// Consumes a non-empty run of decimal digits (at most 19, so it fits).
bool eat_uint(std::string_view &s, std::uint64_t &out) {
  std::size_t n = 0;
  std::uint64_t v = 0;
  while (n < s.size() && n < 19 && std::isdigit(static_cast<unsigned char>(s[n])) != 0)
    v = v * 10 + static_cast<std::uint64_t>(s[n++] - '0');
  if (n == 0 || (n < s.size() && std::isdigit(static_cast<unsigned char>(s[n])) != 0))
    return false;
  out = v;
  s.remove_prefix(n);
  return true;
}

} // namespace

namespace detail {

ProfilerStatus probe_profiler_plugin(const std::string &path, const char *nccl_profiler_plugin) {
  const bool user_set = nccl_profiler_plugin != nullptr && *nccl_profiler_plugin != '\0';
  if (user_set) {
    const std::string value = nccl_profiler_plugin;
    if (strcasecmp(value.c_str(), "none") == 0) // NCCL compares the same way
      return absent("NCCL_PROFILER_PLUGIN=" + value + " disables NCCL's profiler plugins");
    if (path.empty() || !same_file(value, path)) {
      ProfilerStatus st;
      st.source = ProfilerStatus::Source::user;
      st.detail = value;
      return st;
    }
    // The user named our own plugin: use it as if we had.
  }
  if (path.empty())
    return absent("cannot locate scalefit-bench (/proc/self/exe unreadable); set "
                  "SCALEFIT_NCCL_PROFILER to the plugin's path");
  if (path.size() >= k_nccl_max_plugin_name)
    return absent("plugin path has " + std::to_string(path.size()) +
                  " characters; NCCL truncates NCCL_PROFILER_PLUGIN at 254: " + path);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return absent("no plugin file " + path);
  dlerror();
  void *h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr)
    return absent("cannot load " + path + ": " + dl_error());
  const bool complete = dlsym(h, "ncclProfiler_v5") != nullptr &&
                        dlsym(h, SCALEFIT_PROFILER_QUERY_SYMBOL) != nullptr &&
                        dlsym(h, SCALEFIT_PROFILER_RESET_SYMBOL) != nullptr;
  dlclose(h);
  if (!complete)
    return absent(path + " does not export ncclProfiler_v5 and scalefit's query functions");
  ProfilerStatus st;
  st.source = ProfilerStatus::Source::scalefit;
  st.detail = path;
  return st;
}

} // namespace detail

std::string ProfilerStatus::describe() const {
  switch (source) {
  case Source::scalefit:
    return "scalefit plugin " + detail;
  case Source::user:
    return "user plugin " + detail;
  case Source::absent:
    break;
  }
  return "absent: " + detail;
}

std::string profiler_plugin_path() {
  std::error_code ec;
  if (const char *env = std::getenv("SCALEFIT_NCCL_PROFILER"); env != nullptr && *env != '\0') {
    const fs::path p = fs::absolute(env, ec);
    return ec ? std::string(env) : p.string();
  }
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec || exe.empty())
    return {};
  return (exe.parent_path() / k_profiler_plugin_file).string();
}

ProfilerStatus install_profiler_plugin(const std::string &path) {
  PluginState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.installed)
    return s.status;
  s.installed = true;
  const char *user = std::getenv("NCCL_PROFILER_PLUGIN");
  ProfilerStatus st = detail::probe_profiler_plugin(path, user);
  if (st.active()) {
    if (!open_and_bind(s, path))
      st = absent("cannot load " + path + ": " + dl_error());
    else if ((user == nullptr || *user == '\0') &&
             setenv("NCCL_PROFILER_PLUGIN", path.c_str(), 1) != 0)
      st = absent("setenv(NCCL_PROFILER_PLUGIN) failed");
  }
  s.status = st;
  return st;
}

ProfilerStatus profiler_status() {
  PluginState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.status;
}

std::optional<CollChoice> last_collective(const std::string &comm_name) {
  PluginState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!bound(s))
    return std::nullopt;
  scalefit_profiler_choice_v1 raw{};
  if (s.query(comm_name.c_str(), &raw) == 0)
    return std::nullopt;
  CollChoice c;
  c.func = raw.func;
  c.algo = raw.algo;
  c.proto = raw.proto;
  c.channels = raw.channels;
  c.datatype = raw.datatype;
  c.count = raw.count;
  c.seen = raw.seen;
  return c;
}

void reset_collectives(const std::string &comm_name) {
  PluginState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (bound(s))
    s.reset(comm_name.c_str());
}

void reset_all_collectives() {
  PluginState &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (bound(s))
    s.reset(nullptr);
}

std::optional<CollChoice> parse_nccl_tuning_line(std::string_view line) {
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())) != 0)
    line.remove_suffix(1);
  // NCCL's prefix ends with "NCCL INFO "; a bare message (already cut) is accepted too.
  constexpr std::string_view info = "NCCL INFO ";
  if (const std::size_t at = line.find(info); at != std::string_view::npos)
    line.remove_prefix(at + info.size());
  CollChoice c;
  std::uint64_t bytes = 0, lo = 0, hi = 0;
  if (!eat_name(line, c.func) || !eat(line, ": ") || !eat_uint(line, bytes) ||
      !eat(line, " Bytes -> Algo ") || !eat_name(line, c.algo) || !eat(line, " proto ") ||
      !eat_name(line, c.proto) || !eat(line, " channel{Lo..Hi}={") || !eat_uint(line, lo) ||
      !eat(line, "..") || !eat_uint(line, hi) || !eat(line, "}") || !line.empty() || hi < lo ||
      hi - lo >= 1024)
    return std::nullopt;
  c.bytes = bytes;
  c.channels = static_cast<int>(hi - lo + 1);
  c.seen = 1;
  return c;
}

std::string choice_column(const std::optional<CollChoice> &choice, const ProfilerStatus &status) {
  if (choice)
    return choice->algo + "/" + choice->proto + "/" + std::to_string(choice->channels);
  if (status.source == ProfilerStatus::Source::user)
    return "unknown (user plugin " + status.detail + ")";
  return "unknown";
}

} // namespace scalefit::bench
