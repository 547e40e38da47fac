// index.html, the data files, and running report/plot.py.
#include "scalefit/core/atomic_file.hpp"
#include "scalefit/core/error.hpp"
#include "scalefit/fitting/fit_file.hpp"
#include "scalefit/report/report.hpp"

#include <fmt/format.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#ifndef SCALEFIT_REPORT_SOURCE_SCRIPT
#define SCALEFIT_REPORT_SOURCE_SCRIPT ""
#endif

namespace scalefit::report {
namespace {

namespace fs = std::filesystem;

std::string esc(const std::string &s) {
  std::string o;
  for (char c : s) {
    switch (c) {
    case '&': o += "&amp;"; break;
    case '<': o += "&lt;"; break;
    case '>': o += "&gt;"; break;
    case '"': o += "&quot;"; break;
    default: o += c;
    }
  }
  return o;
}

/// Refuses a symbolic link at an output path in the report's directory: AtomicFile follows a
/// link (replacing its target), and a link planted in -o DIR must not redirect the report's
/// writes elsewhere. \throws InputError naming the path and -o (exit 2).
void refuse_link(const fs::path &path) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path, ec)))
    throw InputError("is a symbolic link: scalefit report writes no output through a link in "
                     "its directory (remove it, or choose another -o)",
                     path.string(), 0, "-o");
}

/// Writes `text` to `path` atomically (core's AtomicFile: readers never see half a file); never
/// through a symbolic link (refuse_link).
void write_atomic(const fs::path &path, const std::string &text) {
  refuse_link(path);
  AtomicFile out(path.string());
  out.write(text);
  out.commit();
}

/// What run_process saw: the exit status, or that the program could not be started at all.
struct ProcessResult {
  int status = -1;     ///< exit status; -1 when it did not exit normally (a signal)
  int exec_errno = 0;  ///< errno of a failed execvp (no such file, not executable); 0: it ran
};

/// Runs argv (PATH searched), waits. A failed exec is reported through a close-on-exec pipe, so
/// "cannot start" (the environment) is told apart from "ran and failed".
/// \throws RuntimeError when fork, pipe or waitpid fail.
ProcessResult run_process(const std::vector<std::string> &args) {
  std::vector<char *> argv;
  for (const std::string &a : args)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    throw RuntimeError(std::string("pipe failed: ") + std::strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw RuntimeError(std::string("fork failed: ") + std::strerror(e));
  }
  if (pid == 0) {
    ::close(fds[0]);
    execvp(argv[0], argv.data());
    const int e = errno;
    (void)!::write(fds[1], &e, sizeof e);
    _exit(127);
  }
  ::close(fds[1]);
  ProcessResult r;
  int e = 0;
  ssize_t n;
  while ((n = ::read(fds[0], &e, sizeof e)) < 0 && errno == EINTR) {
  }
  ::close(fds[0]);
  if (n == static_cast<ssize_t>(sizeof e))
    r.exec_errno = e;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      throw RuntimeError(std::string("waitpid failed: ") + std::strerror(errno));
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// Runs the plot script; a Python that cannot start or cannot import matplotlib is the
/// environment's problem (InputError naming `option`, exit 2); a script that fails under a
/// working Python is a bug (RuntimeError, exit 3).
void run_plot_script(const std::string &python, const std::string &option,
                     const std::string &script, const std::string &manifest) {
  const ProcessResult r = run_process({python, script, manifest});
  if (r.exec_errno != 0)
    throw InputError("cannot run '" + python + "': " + std::strerror(r.exec_errno) +
                         " (give a Python 3 with matplotlib; --data-only skips drawing)",
                     "", 0, option);
  if (r.status == 0)
    return;
  const ProcessResult probe = run_process({python, "-c", "import matplotlib"});
  if (probe.exec_errno != 0 || probe.status != 0)
    throw InputError("'" + python + "' does not import matplotlib (scripts/setup.sh installs "
                     "python3-matplotlib; --data-only skips drawing)",
                     "", 0, option);
  throw RuntimeError(fmt::format("{} {} exited with status {}", python, script, r.status));
}

std::string self_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

} // namespace

std::string find_python() {
  if (const char *env = std::getenv("SCALEFIT_PYTHON"); env && *env)
    return env;
  for (const char *py : {"python3", "/usr/bin/python3"}) {
    const std::string probe = std::string(py) + " -c 'import matplotlib' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0)
      return py;
  }
  return "python3"; // fails below with a message naming python3-matplotlib
}

std::string find_plot_script() {
  if (const char *env = std::getenv("SCALEFIT_REPORT_SCRIPT"); env && *env) {
    if (std::error_code ec; !fs::exists(env, ec))
      throw InputError("no such file (from $SCALEFIT_REPORT_SCRIPT)", env);
    return env;
  }
  std::vector<std::string> tried;
  const std::string dir = self_dir();
  if (!dir.empty())
    tried.push_back(dir + "/../share/scalefit/plot.py");
  tried.push_back(SCALEFIT_REPORT_SOURCE_SCRIPT);
  for (const std::string &t : tried)
    if (!t.empty() && fs::exists(t))
      return fs::weakly_canonical(t).string();
  throw InputError("cannot find report/plot.py (set SCALEFIT_REPORT_SCRIPT or --script)");
}

std::string check_html(const nlohmann::json &check) {
  if (check.is_null() || !check.contains("curves"))
    return "";
  std::string o;
  auto out = std::back_inserter(o);
  const nlohmann::json &sys = check["system"];
  const nlohmann::json &th = check["thresholds"];
  fmt::format_to(out,
                 "<h2>Check</h2>\n<p><code>scalefit check</code> against {} (docs/check.md): ok "
                 "&ge; {:g}% of expected, low &ge; {:g}%, failing below; run-to-run spread noted "
                 "noisy above {:g}%.</p>\n",
                 sys.is_null() ? std::string("no system")
                               : esc(fmt::format("system {} ({})", sys.value("name", ""),
                                                 sys.value("file", ""))),
                 th.value("low_pct", 0.0), th.value("fail_pct", 0.0), th.value("noisy_pct", 0.0));
  o += "<table><tr><th>op</th><th>group</th><th>dtype</th><th>peak busbw [GB/s]</th><th>at</th>"
       "<th>link</th><th>expected [GB/s]</th><th>% exp</th><th>reference</th><th>% ref</th>"
       "<th>spread [%]</th><th>verdict</th></tr>\n";
  auto num = [](const nlohmann::json &j, const char *k, const char *fmtstr) {
    return j.is_object() && j.contains(k) && j[k].is_number()
               ? fmt::format(fmt::runtime(fmtstr), j[k].get<double>())
               : std::string("-");
  };
  for (const nlohmann::json &c : check["curves"]) {
    const nlohmann::json &g = c["group"];
    const nlohmann::json &link = c["link"];
    const nlohmann::json &ref = c["reference"];
    const nlohmann::json &rep = c.contains("repeat") ? c["repeat"] : nlohmann::json();
    fmt::format_to(
        out,
        "<tr><td>{}</td><td>{} n={} ({}x{})</td><td>{}</td><td class=n>{:.2f}</td><td>{}</td>"
        "<td>{}</td><td class=n>{}</td><td class=n>{}</td><td>{}</td><td class=n>{}</td>"
        "<td class=n>{}</td><td>{}</td></tr>\n",
        esc(c.value("method", "").empty() ? c.value("op", "") : c.value("method", "")),
        esc(g.value("kind", "")), g.value("nranks", 0), g.value("nnodes", 0),
        g.value("ranks_per_node", 0), esc(c.value("dtype", "")), c.value("peak_busbw_gbps", 0.0),
        esc(size_label(c.value("peak_bytes", 0.0))),
        link.is_object() ? esc(link.value("link", "") + " " + link.value("algorithm", "")) : "-",
        num(link, "expected_busbw_gbps", "{:.1f}"), num(link, "pct_of_expected", "{:.1f}"),
        ref.is_object() ? esc(ref.value("file", "")) : "-", num(ref, "pct_of_reference", "{:.1f}"),
        rep.is_object() ? num(rep, "max_spread_pct", "{:.1f}") +
                              (rep.value("noisy", false) ? " noisy" : "")
                        : std::string("-"),
        esc(c.value("verdict", "")));
  }
  o += "</table>\n";
  if (!check["notes"].empty()) {
    o += "<ul>\n";
    for (const auto &n : check["notes"])
      fmt::format_to(out, "<li>{}</li>\n", esc(n.get<std::string>()));
    o += "</ul>\n";
  }
  return o;
}

std::string index_html(const Inputs &in, const std::vector<Plot> &plots, const std::string &title,
                       const nlohmann::json &check) {
  std::string o;
  auto out = std::back_inserter(o);
  fmt::format_to(out, R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{0}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1400px; color: #222; }}
h1 {{ font-size: 1.6em; }} h2 {{ font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccc; }}
table {{ border-collapse: collapse; font-size: 0.85em; }}
td, th {{ border: 1px solid #ccc; padding: 2px 6px; text-align: left; }}
td.n {{ text-align: right; font-variant-numeric: tabular-nums; }}
figure {{ margin: 1.5em 0; }} figure img {{ max-width: 100%; border: 1px solid #eee; }}
figcaption {{ color: #444; font-size: 0.9em; max-width: 1100px; }}
code {{ font-size: 0.9em; }}
</style></head>
<body data-images-loaded="pending">
<h1>{0}</h1>
<p>Written by <code>scalefit report</code> on {1}. Pictures are the PNG files beside this page;
the numbers behind each are in <code>data/&lt;name&gt;.json</code>.</p>
)",
                 esc(title), esc(utc_now_iso8601()));

  o += "<h2>Inputs</h2>\n<table><tr><th>file</th><th>what</th><th>system</th><th>details</th></tr>\n";
  for (std::size_t i = 0; i < in.comm.size(); ++i) {
    const RecordSet &rs = in.comm[i];
    const ContextRecord *c = rs.contexts.empty() ? nullptr : &rs.contexts.front();
    fmt::format_to(out, "<tr><td>{}</td><td>comm ({} points)</td><td>{}</td><td>{}</td></tr>\n",
                   esc(in.comm_files[i]), rs.measurements.size(), c ? esc(c->system) : "",
                   c ? esc(fmt::format("backend {}, {} ranks on {} nodes{}; {}", c->backend,
                                       c->nranks, c->nnodes,
                                       c->emulated_nodes ? " (emulated)" : "",
                                       c->command_line))
                     : "");
  }
  for (const KernelsFile &k : in.kernels)
    fmt::format_to(out, "<tr><td>{}</td><td>kernels ({} kernels)</td><td>{}</td><td>{}</td></tr>\n",
                   esc(k.path), k.kernels.size(), esc(k.context.value("system", "")),
                   esc(k.context.value("device", "") + ", " + k.context.value("library", "") +
                       "; " + k.context.value("command_line", "")));
  for (const auto &f : in.fits)
    fmt::format_to(out, "<tr><td>{}</td><td>fit file ({} curves)</td><td>{}</td><td>{}</td></tr>\n",
                   esc(f->path), f->entries.size(),
                   esc(f->system.count("name") ? f->system.at("name") : ""),
                   esc(f->schema + ", " + f->tool + ", " + f->created));
  for (const EstimateInput &e : in.estimates)
    fmt::format_to(out, "<tr><td>{}</td><td>{}</td><td></td><td></td></tr>\n", esc(e.path),
                   esc(e.kind));
  o += "</table>\n";

  bool any_fit = false;
  for (const auto &f : in.fits)
    any_fit = any_fit || !f->entries.empty();
  if (any_fit) {
    o += "<h2>Fitted curves</h2>\n<table><tr><th>entry</th><th>model</th><th>points</th>"
         "<th>sizes</th><th>latency [us]</th><th>peak busbw [GB/s]</th><th>MAPE [%]</th>"
         "<th>LOO MAPE [%]</th><th>excluded</th></tr>\n";
    for (const auto &f : in.fits)
      for (const fitting::FitEntry &e : f->entries)
        fmt::format_to(out,
                       "<tr><td>{}</td><td>{}</td><td class=n>{}</td><td>{} &ndash; {}</td>"
                       "<td class=n>{:.2f}</td><td class=n>{:.2f}</td><td class=n>{:.2f}</td>"
                       "<td class=n>{}</td><td class=n>{}</td></tr>\n",
                       esc(e.id), esc(fitting::model_label(e.model)), e.points,
                       esc(size_label(e.min_bytes)), esc(size_label(e.max_bytes)), e.latency_us(),
                       e.peak_busbw_gbps, e.quality.mape_pct,
                       e.quality.loo_mape_pct >= 0
                           ? fmt::format("{:.2f}", e.quality.loo_mape_pct)
                           : std::string("-"),
                       e.excluded.size());
    o += "</table>\n";
  }

  o += check_html(check);

  std::string section;
  for (const Plot &p : plots) {
    const std::string sec = p.kind == "bandwidth" || p.kind == "latency" || p.kind == "scaling"
                                ? "Collectives"
                            : p.kind == "kernels" || p.kind == "attention" ? "Kernels"
                                                                            : "Estimates";
    if (sec != section) {
      fmt::format_to(out, "<h2>{}</h2>\n", sec);
      section = sec;
    }
    fmt::format_to(out,
                   "<figure id=\"{0}\"><img src=\"{0}.png\" width=\"{1}\" height=\"{2}\" "
                   "alt=\"{3}\"><figcaption><b>{3}.</b> {4} <a href=\"data/{0}.json\">data</a>"
                   "</figcaption></figure>\n",
                   esc(p.name), p.width_px, p.height_px, esc(p.title), esc(p.caption));
  }
  if (plots.empty())
    o += "<p>No plots: the inputs hold nothing to draw.</p>\n";
  // Records, once the page has loaded, how many images decoded (the render test reads it).
  o += R"(<script>
window.addEventListener("load", function () {
  var imgs = document.images, ok = 0;
  for (var i = 0; i < imgs.length; i++) if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++;
  document.body.setAttribute("data-images-loaded", ok + "/" + imgs.length);
});
</script>
</body></html>
)";
  return o;
}

std::vector<Plot> write_report(const Inputs &in, const ReportOptions &opt) {
  if (opt.out_dir.empty())
    throw InputError("no output directory", "", 0, "-o");
  const fs::path dir = opt.out_dir;
  std::error_code ec;
  fs::create_directories(dir / "data", ec);
  if (ec)
    throw InputError("cannot create directory: " + ec.message(), (dir / "data").string());
  refuse_link(dir / "data");
  std::vector<Plot> plots = build_plots(in);
  for (const Plot &p : plots) // every output checked before anything is written
    for (const fs::path &f : {dir / "data" / (p.name + ".json"), dir / (p.name + ".png")})
      refuse_link(f);
  for (const char *f : {"plots.json", "index.html"})
    refuse_link(dir / f);
  nlohmann::json manifest = nlohmann::json::array();
  for (const Plot &p : plots) {
    nlohmann::json j = {{"name", p.name},         {"kind", p.kind},
                        {"title", p.title},       {"width_px", p.width_px},
                        {"height_px", p.height_px}, {"data", p.data}};
    write_atomic(dir / "data" / (p.name + ".json"), j.dump() + "\n");
    manifest.push_back({{"name", p.name},
                        {"kind", p.kind},
                        {"data_file", "data/" + p.name + ".json"},
                        {"png", p.name + ".png"},
                        {"width_px", p.width_px},
                        {"height_px", p.height_px}});
  }
  write_atomic(dir / "plots.json", manifest.dump(1) + "\n");
  if (!opt.data_only && !plots.empty()) {
    std::error_code ec;
    if (!opt.script.empty() && !fs::is_regular_file(opt.script, ec))
      throw InputError("no such file (the plot script)", opt.script, 0, "--script");
    const std::string script = opt.script.empty() ? find_plot_script() : opt.script;
    const char *env = std::getenv("SCALEFIT_PYTHON");
    const std::string option = !opt.python.empty()   ? "--python"
                               : env && *env          ? "$SCALEFIT_PYTHON"
                                                      : "--python (none found)";
    const std::string python = opt.python.empty() ? find_python() : opt.python;
    run_plot_script(python, option, script, (dir / "plots.json").string());
    for (const Plot &p : plots)
      if (!fs::exists(dir / (p.name + ".png")))
        throw RuntimeError("the plot script wrote no " + (dir / (p.name + ".png")).string());
  }
  if (!opt.check.is_null())
    write_atomic(dir / "data" / "check.json", opt.check.dump(1) + "\n");
  write_atomic(dir / "index.html", index_html(in, plots, opt.title, opt.check));
  return plots;
}

} // namespace scalefit::report
