#include "lines.hpp"

#include "text.hpp"

#include <algorithm>
#include <cctype>
#include <set>

namespace scalefit::ingest::detail {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_host_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_';
}

std::string_view ltrim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
    s.remove_prefix(1);
  return s;
}

std::optional<int> small_int(std::string_view digits) {
  if (digits.empty() || digits.size() > 8)
    return std::nullopt;
  int v = 0;
  for (char c : digits) {
    if (!is_digit(c))
      return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

/// `[J,R]<stdout>:` or `[J,R]<stderr>:`; returns the length consumed.
std::size_t tag_output(std::string_view s, int &rank) {
  if (s.size() < 6 || s[0] != '[')
    return 0;
  const auto close = s.find(']');
  if (close == std::string_view::npos || close > 24)
    return 0;
  const std::string_view inside = s.substr(1, close - 1);
  const auto comma = inside.find(',');
  if (comma == std::string_view::npos || !small_int(inside.substr(0, comma)))
    return 0;
  const auto r = small_int(inside.substr(comma + 1));
  if (!r)
    return 0;
  std::string_view rest = s.substr(close + 1);
  for (std::string_view tag : {"<stdout>:", "<stderr>:", "<stddiag>:"})
    if (rest.substr(0, tag.size()) == tag) {
      rank = *r;
      return close + 1 + tag.size();
    }
  return 0;
}

/// `R: ` (srun --label) or `[R] ` / `[R]: ` / `[host:R] `.
std::size_t rank_label(std::string_view s, int &rank, std::string &host) {
  std::size_t i = 0;
  if (!s.empty() && s[0] == '[') {
    const auto close = s.find(']');
    if (close == std::string_view::npos || close > 128)
      return 0;
    const std::string_view inside = s.substr(1, close - 1);
    const auto colon = inside.rfind(':');
    std::string_view h, num = inside;
    if (colon != std::string_view::npos) {
      h = inside.substr(0, colon);
      num = inside.substr(colon + 1);
      if (h.empty() || !std::all_of(h.begin(), h.end(), is_host_char))
        return 0;
    }
    const auto r = small_int(num);
    if (!r)
      return 0;
    i = close + 1;
    if (i < s.size() && s[i] == ':')
      ++i;
    if (i < s.size() && s[i] != ' ' && s[i] != '\t')
      return 0;
    rank = *r;
    host = std::string(h);
    return i;
  }
  while (i < s.size() && is_digit(s[i]))
    ++i;
  if (i == 0 || i > 7 || i + 1 >= s.size() || s[i] != ':' || (s[i + 1] != ' ' && s[i + 1] != '\t'))
    return 0;
  rank = *small_int(s.substr(0, i));
  return i + 1;
}

/// `host: ` (pdsh/clush); the host must hold a letter and be followed by ": ".
std::size_t host_label(std::string_view s, std::string &host) {
  std::size_t i = 0;
  bool letter = false;
  while (i < s.size() && is_host_char(s[i])) {
    letter |= std::isalpha(static_cast<unsigned char>(s[i])) != 0;
    ++i;
  }
  if (i == 0 || i > 128 || !letter || i + 1 >= s.size() || s[i] != ':' ||
      (s[i + 1] != ' ' && s[i + 1] != '\t'))
    return 0;
  // Words that end a sentence with a colon are not hosts ("Warning: ...", "Error: ...").
  static const std::set<std::string> words{"warning", "error", "note", "info", "debug",
                                           "abort",   "fatal", "real", "user", "sys"};
  if (words.count(to_lower(s.substr(0, i))))
    return 0;
  host = std::string(s.substr(0, i));
  return i + 1;
}

/// Ray's `(name, rank=R, pid=P[, ip=...]) ` (SkyPilot, Ray jobs).
std::size_t ray_prefix(std::string_view s, int &rank) {
  if (s.empty() || s[0] != '(')
    return 0;
  const auto close = s.find(')');
  if (close == std::string_view::npos || close > 200 || close + 1 >= s.size() ||
      (s[close + 1] != ' ' && s[close + 1] != '\t'))
    return 0;
  const std::string_view inside = s.substr(1, close - 1);
  if (inside.find("pid=") == std::string_view::npos)
    return 0;
  const auto r = inside.find("rank=");
  if (r != std::string_view::npos) {
    std::size_t e = r + 5;
    while (e < inside.size() && is_digit(inside[e]))
      ++e;
    if (const auto v = small_int(inside.substr(r + 5, e - r - 5)))
      rank = *v;
  }
  return close + 1;
}

/// `2024-05-01T12:00:00[.123][Z|+00:00] ` (kubectl logs --timestamps, journald exports).
std::size_t iso_timestamp(std::string_view s) {
  if (s.size() < 20)
    return 0;
  for (std::size_t k : {0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18})
    if (!is_digit(s[k]))
      return 0;
  if (s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != ' ') || s[13] != ':' ||
      s[16] != ':')
    return 0;
  std::size_t i = 19;
  while (i < s.size() && (is_digit(s[i]) || s[i] == '.' || s[i] == 'Z' || s[i] == '+' ||
                          s[i] == ':' || (s[i] == '-' && i > 19)))
    ++i;
  if (i >= s.size() || (s[i] != ' ' && s[i] != '\t'))
    return 0;
  return i;
}

} // namespace

CleanLine strip_prefixes(std::string_view line) {
  CleanLine out;
  std::string_view s = ltrim(line);
  bool tag = false, label = false, host = false, stamp = false, ray = false;
  for (int guard = 0; guard < 7 && !s.empty() && s.front() != '#'; ++guard) {
    int rank = -1;
    std::string h;
    std::size_t n = 0;
    if (!stamp && (n = iso_timestamp(s)) > 0) {
      stamp = true;
    } else if (!ray && (n = ray_prefix(s, rank)) > 0) {
      ray = true; // the Ray worker's rank is not the MPI rank: not kept
    } else if (!tag && (n = tag_output(s, rank)) > 0) {
      tag = true;
      out.prefix_rank = rank;
    } else if (!label && (n = rank_label(s, rank, h)) > 0) {
      label = true;
      if (!out.prefix_rank)
        out.prefix_rank = rank;
      if (!h.empty())
        out.prefix_host = h;
    } else if (!host && (n = host_label(s, h)) > 0) {
      host = true;
      out.prefix_host = h;
    } else {
      break;
    }
    s = ltrim(s.substr(n));
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  out.text = s;
  return out;
}

std::optional<NcclInfo> parse_nccl_info(std::string_view line) {
  auto p = line.find(" NCCL INFO");
  std::size_t tag_len = 10;
  if (p == std::string_view::npos) {
    p = line.find(" NCCL WARN");
    if (p == std::string_view::npos)
      return std::nullopt;
  }
  const auto colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon > p)
    return std::nullopt;
  const std::string_view host = line.substr(0, colon);
  if (!std::all_of(host.begin(), host.end(), is_host_char))
    return std::nullopt;
  NcclInfo info;
  info.host = std::string(host);
  info.body = ltrim(line.substr(p + tag_len));
  return info;
}

std::optional<long> info_int_field(std::string_view body, std::string_view field) {
  std::size_t from = 0;
  while (true) {
    const auto p = body.find(field, from);
    if (p == std::string_view::npos)
      return std::nullopt;
    from = p + field.size();
    const bool starts = p == 0 || body[p - 1] == ' ';
    if (!starts || from >= body.size() || body[from] != ' ')
      continue;
    std::size_t i = from;
    while (i < body.size() && body[i] == ' ')
      ++i;
    std::size_t j = i;
    while (j < body.size() && is_digit(body[j]) && j - i < 9)
      ++j;
    if (j == i || (j < body.size() && body[j] != ' ' && body[j] != ','))
      continue;
    long v = 0;
    for (std::size_t k = i; k < j; ++k)
      v = v * 10 + (body[k] - '0');
    return v;
  }
}

namespace {

/// The launcher `tok` names without path or Debian alternative suffix ("mpirun.openmpi" ->
/// "mpirun"), or "" when it names none.
std::string_view launcher_name(std::string_view tok) {
  const auto slash = tok.find_last_of('/');
  if (slash != std::string_view::npos)
    tok = tok.substr(slash + 1);
  // mpirun.openmpi, mpirun.mpich, mpiexec.hydra: Debian's alternatives keep the prefix.
  for (std::string_view base : {"mpirun", "mpiexec"})
    if (tok == base || (tok.size() > base.size() + 1 && tok.substr(0, base.size()) == base &&
                        tok[base.size()] == '.'))
      return base;
  // flux: Flux's `flux run` / `flux submit` (`flux mini run` before Flux 0.48); its subcommand
  // is not an option, so the options are read from the token after `flux` on.
  // ibrun: TACC's wrapper (Frontera, Stampede3, Lonestar6), `ibrun -n 48 -o 0 ./app`; without
  // -n it starts the Slurm allocation's tasks.
  for (std::string_view base :
       {"srun", "aprun", "jsrun", "orterun", "prterun", "mpirun_rsh", "flux", "ibrun"})
    if (tok == base)
      return base;
  return {};
}

std::optional<int> as_rank_count(std::string_view v) {
  const auto n = to_i64(std::string(v));
  if (!n || *n < 1 || *n > kMaxRecordRanks)
    return std::nullopt;
  return static_cast<int>(*n);
}

/// Reads the options in tokens [from, to). `N_is_nodes`: Slurm's -N (nodes) rather than Open
/// MPI's and aprun's (processes per node).
/// The value of option `name` at toks[j] (tokens before `to`): `name value` (j advances past
/// the value), `name=value`, or a short option with digits attached (`-n2`); nullopt otherwise.
std::optional<std::string> option_value(const std::vector<std::string> &toks, std::size_t &j,
                                        std::size_t to, std::string_view name) {
  const std::string &t = toks[j];
  if (t == name && j + 1 < to)
    return toks[++j];
  if (t.size() > name.size() + 1 && t.compare(0, name.size(), name) == 0 && t[name.size()] == '=')
    return t.substr(name.size() + 1);
  // Short options with the value attached: srun -n2 -N2.
  if (name.size() == 2 && t.size() > 2 && t.compare(0, 2, name) == 0 &&
      std::all_of(t.begin() + 2, t.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return t.substr(2);
  return std::nullopt;
}

LaunchShape read_options(const std::vector<std::string> &toks, std::size_t from, std::size_t to,
                         bool N_is_nodes) {
  LaunchShape s;
  const auto value = [&](std::size_t &j, std::string_view name) {
    return option_value(toks, j, to, name);
  };
  std::optional<int> slots;
  for (std::size_t j = from; j < to; ++j) {
    std::optional<std::string> v;
    if ((v = value(j, "-np")) || (v = value(j, "--np")) || (v = value(j, "-n")) ||
        (v = value(j, "--ntasks"))) {
      if (auto n = as_rank_count(*v))
        s.nranks = n;
    } else if ((v = value(j, "-N"))) {
      if (auto n = as_rank_count(*v))
        (N_is_nodes ? s.nnodes : s.per_node) = n;
    } else if ((v = value(j, "--nodes")) || (v = value(j, "-nnodes"))) {
      if (auto n = as_rank_count(*v))
        s.nnodes = n;
    } else if ((v = value(j, "-npernode")) || (v = value(j, "--npernode")) ||
               (v = value(j, "-ppn")) || (v = value(j, "--ppn")) ||
               (v = value(j, "--ntasks-per-node")) || (v = value(j, "-perhost")) ||
               (v = value(j, "--tasks-per-node"))) {
      if (auto n = as_rank_count(*v))
        s.per_node = n;
    } else if ((v = value(j, "--map-by")) || (v = value(j, "-map-by"))) {
      // ppr:K:node
      const std::string m = to_lower(*v);
      if (m.rfind("ppr:", 0) == 0) {
        const auto c2 = m.find(':', 4);
        if (c2 != std::string::npos && m.compare(c2 + 1, 4, "node") == 0)
          if (auto n = as_rank_count(m.substr(4, c2 - 4)))
            s.per_node = n;
      }
    } else if ((v = value(j, "-H")) || (v = value(j, "--host")) || (v = value(j, "-host")) ||
               (v = value(j, "-hosts")) || (v = value(j, "--hosts"))) {
      // host[:slots],host[:slots],...: distinct hosts are nodes; slots, when every host has
      // them, are the ranks a launcher without -np starts.
      std::set<std::string> hosts;
      long total = 0;
      bool all_slots = true;
      std::size_t b = 0;
      while (b <= v->size()) {
        auto e = v->find(',', b);
        if (e == std::string::npos)
          e = v->size();
        std::string h = v->substr(b, e - b);
        std::optional<int> k;
        if (const auto c = h.find(':'); c != std::string::npos) {
          k = as_rank_count(std::string_view(h).substr(c + 1));
          h = h.substr(0, c);
        }
        if (!h.empty()) {
          hosts.insert(h);
          if (k && total <= kMaxRecordRanks)
            total += *k;
          else
            all_slots = false;
        }
        b = e + 1;
      }
      if (!hosts.empty())
        s.nnodes = static_cast<int>(hosts.size());
      if (!hosts.empty() && all_slots && total <= kMaxRecordRanks)
        slots = static_cast<int>(total);
    }
  }
  if (!s.nranks && slots)
    s.nranks = slots;
  fill_missing(s, {});
  return s;
}

/// PBS/Torque resource list: select=N[:...:mpiprocs=K] or nodes=N[:ppn=K].
void read_pbs_resources(std::string_view list, LaunchShape &s) {
  std::size_t b = 0;
  while (b <= list.size()) {
    auto e = list.find_first_of(",:", b);
    if (e == std::string_view::npos)
      e = list.size();
    const std::string_view kv = list.substr(b, e - b);
    const auto eq = kv.find('=');
    if (eq != std::string_view::npos) {
      const std::string_view k = kv.substr(0, eq), v = kv.substr(eq + 1);
      if (k == "select" || k == "nodes") {
        if (auto n = as_rank_count(v))
          s.nnodes = n;
      } else if (k == "mpiprocs" || k == "ppn") {
        if (auto n = as_rank_count(v))
          s.per_node = n;
      }
    }
    b = e + 1;
  }
}

/// Distinct bare host names of an `mpirun_rsh` command in tokens [from, to): tokens that are not
/// options, not an option's value, not VAR=value settings. nullopt when there are none, and when
/// the command names a host file (`-hostfile`, `-machinefile`): its hosts are in that file, and
/// a word of a setting's value that spaces split (`MV2_CPU_MAPPING=[INSERT CORE #]`) is no host.
std::optional<int> rsh_hosts(const std::vector<std::string> &toks, std::size_t from,
                             std::size_t to) {
  // mpirun_rsh's options that take a value (the rest are flags).
  static const std::set<std::string> with_value{"-np", "-n", "-hostfile", "-machinefile",
                                                "-config", "-sg", "-tv", "-ppn"};
  std::set<std::string> hosts;
  for (std::size_t j = from; j < to; ++j) {
    const std::string &t = toks[j];
    if (t.empty() || t.find('=') != std::string::npos)
      continue;
    if (t[0] == '-') {
      if (t == "-hostfile" || t == "-machinefile")
        return std::nullopt;
      if (with_value.count(t))
        ++j;
      continue;
    }
    if (std::all_of(t.begin(), t.end(), is_host_char))
      hosts.insert(t);
  }
  if (hosts.empty() || hosts.size() > static_cast<std::size_t>(kMaxRecordRanks))
    return std::nullopt;
  return static_cast<int>(hosts.size());
}

/// IBM's jsrun (LSF; Summit, Sierra, Lassen) counts resource sets, not tasks: -n/--nrs resource
/// sets of -a/--tasks_per_rs tasks each (default 1), -r/--rs_per_host of them per node; or
/// -p/--np tasks in all (jsrun(1), IBM Spectrum LSF 10.1 "jsrun options"). Tokens [from, to).
LaunchShape read_jsrun(const std::vector<std::string> &toks, std::size_t from, std::size_t to) {
  LaunchShape s;
  std::optional<int> nrs, per_rs, rs_per_host, np;
  for (std::size_t j = from; j < to; ++j) {
    std::optional<std::string> v;
    const auto is = [&](std::string_view shrt, std::string_view lng) {
      return (v = option_value(toks, j, to, shrt)) || (v = option_value(toks, j, to, lng));
    };
    if (is("-n", "--nrs"))
      nrs = as_rank_count(*v);
    else if (is("-a", "--tasks_per_rs"))
      per_rs = as_rank_count(*v);
    else if (is("-r", "--rs_per_host"))
      rs_per_host = as_rank_count(*v);
    else if (is("-p", "--np"))
      np = as_rank_count(*v);
  }
  const long tasks_per_rs = per_rs.value_or(1);
  if (np)
    s.nranks = np;
  else if (nrs && *nrs * tasks_per_rs <= kMaxRecordRanks)
    s.nranks = static_cast<int>(*nrs * tasks_per_rs);
  if (nrs && rs_per_host) {
    s.nnodes = (*nrs + *rs_per_host - 1) / *rs_per_host;
    if (tasks_per_rs * *rs_per_host <= kMaxRecordRanks)
      s.per_node = static_cast<int>(tasks_per_rs * *rs_per_host);
  }
  return s;
}

} // namespace

bool is_launcher(std::string_view tok) { return !launcher_name(tok).empty(); }

LaunchShape launch_shape(const std::vector<std::string> &toks, std::size_t binary_index) {
  binary_index = std::min(binary_index, toks.size());
  for (std::size_t j = 0; j < binary_index; ++j) {
    const auto name = launcher_name(toks[j]);
    if (name.empty())
      continue;
    // Flux's -N is nodes as Slurm's, and `flux run -N4` without -n or --tasks-per-node starts
    // one task per node (flux-core doc/man1/common/job-param-common.rst: --nodes without
    // --ntasks sets the number of tasks to the number of nodes).
    if (name == "jsrun")
      return read_jsrun(toks, j + 1, binary_index);
    const bool slurm_like = name == "srun" || name == "flux";
    LaunchShape s = read_options(toks, j + 1, binary_index, slurm_like);
    if (slurm_like && !s.nranks && s.nnodes && !s.per_node)
      s.default_nranks = s.nnodes;
    if (name == "mpirun_rsh" && !s.nnodes)
      if (const auto hosts = rsh_hosts(toks, j + 1, binary_index))
        s.nnodes = hosts;
    return s;
  }
  return {};
}

LaunchShape allocation_shape(const std::vector<std::string> &toks) {
  if (toks.empty())
    return {};
  const std::size_t from = 1;
  std::string_view first = toks[0];
  if (first.size() > 1 && first.front() == '#')
    first.remove_prefix(1);
  if (first == "SBATCH")
    return read_options(toks, from, toks.size(), true);
  // The command may follow a prompt or environment settings: "$ salloc -N 2 ...".
  const auto base = [](std::string_view t) {
    const auto slash = t.find_last_of('/');
    return slash == std::string_view::npos ? t : t.substr(slash + 1);
  };
  std::size_t at = 0;
  while (at < toks.size() && base(toks[at]) != "salloc" && base(toks[at]) != "sbatch" &&
         base(toks[at]) != "qsub")
    ++at;
  if (at < toks.size() && base(toks[at]) != "qsub")
    return read_options(toks, at + 1, toks.size(), true);
  if (at < toks.size() || first == "PBS") {
    LaunchShape s;
    for (std::size_t j = first == "PBS" ? from : at + 1; j < toks.size(); ++j) {
      const std::string &t = toks[j];
      if (t == "-l" && j + 1 < toks.size())
        read_pbs_resources(toks[++j], s);
      else if (t.size() > 2 && t.compare(0, 2, "-l") == 0)
        read_pbs_resources(std::string_view(t).substr(2), s);
    }
    fill_missing(s, {});
    return s;
  }
  return {};
}

void fill_missing(LaunchShape &into, const LaunchShape &from) {
  if (!into.nranks)
    into.nranks = from.nranks;
  if (!into.nnodes)
    into.nnodes = from.nnodes;
  if (!into.per_node)
    into.per_node = from.per_node;
  if (!into.nranks && into.nnodes && into.per_node &&
      static_cast<long>(*into.nnodes) * *into.per_node <= kMaxRecordRanks)
    into.nranks = *into.nnodes * *into.per_node;
  if (!into.nnodes && into.nranks && into.per_node && *into.nranks % *into.per_node == 0)
    into.nnodes = *into.nranks / *into.per_node;
}

std::optional<std::pair<int, std::string>> nodes_from_launch(const LaunchShape &launch,
                                                             std::size_t map_hosts,
                                                             const LaunchShape &alloc, int nranks) {
  const auto per_node = [&](const LaunchShape &s) -> std::optional<int> {
    if (s.per_node && nranks % *s.per_node == 0)
      return nranks / *s.per_node;
    return std::nullopt;
  };
  const std::optional<int> mapped =
      map_hosts > 0 && map_hosts <= static_cast<std::size_t>(kMaxRecordRanks)
          ? std::optional<int>(static_cast<int>(map_hosts))
          : std::nullopt;
  const std::pair<std::optional<int>, const char *> sources[] = {
      {launch.nnodes, "launcher command line"},
      {per_node(launch), "launcher command line (ranks per node)"},
      {mapped, "job map (Open MPI's Data for node:, Slurm's cpu-bind report)"},
      {alloc.nnodes, "batch allocation (salloc/sbatch/#SBATCH/#PBS)"},
      {per_node(alloc), "batch allocation (ranks per node)"}};
  for (const auto &[nodes, from] : sources)
    if (nodes)
      return std::make_pair(*nodes, std::string(from));
  return std::nullopt;
}

const std::vector<std::string> &CommandJoiner::feed(const std::vector<std::string> &toks) {
  m_joined = std::move(m_held);
  m_held.clear();
  m_joined.insert(m_joined.end(), toks.begin(), toks.end());
  if (!m_joined.empty() && !m_joined.back().empty() && m_joined.back().back() == '\\') {
    m_joined.back().pop_back();
    if (m_joined.back().empty())
      m_joined.pop_back();
    if (m_joined.size() <= 512)
      m_held = std::move(m_joined);
    m_joined.clear();
  }
  return m_joined;
}

std::optional<std::string> job_map_host(const std::vector<std::string> &toks) {
  // "Data for node: nid001  Num slots: 4  Max slots: 0  Num procs: 4"
  // The first word may carry markup of a pasted web page ("<p>&nbsp;Data").
  if (toks.size() >= 4 && toks[0].size() >= 4 &&
      toks[0].compare(toks[0].size() - 4, 4, "Data") == 0 && toks[1] == "for" && toks[2] == "node:")
    return toks[3];
  // Slurm's --cpu-bind=verbose, one line per task: "cpu_bind=MASK - svail-15, task  0  0 [6916]:
  // mask 0x8000 set" (cpu-bind= since Slurm 17.11; the type may be MASK, MAP, LDOM, NONE ...).
  if (toks.size() >= 5 && toks[1] == "-" && toks[3] == "task" && toks[2].size() > 1 &&
      toks[2].back() == ',' &&
      (toks[0].find("cpu_bind=") != std::string::npos ||
       toks[0].find("cpu-bind=") != std::string::npos))
    return toks[2].substr(0, toks[2].size() - 1);
  return std::nullopt;
}

} // namespace scalefit::ingest::detail
