#!/usr/bin/env bash
# Writes docs/cli.md, the command-line reference, from the binaries' own --help (so the two can
# never disagree: tests/docs/cli_doc_sync.sh fails when they do).
# Usage: scripts/gen-cli-doc.sh [BUILD_DIR] [OUTPUT]   (defaults: build, docs/cli.md; - = stdout)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-docs/cli.md}
sf="$build/bin/scalefit" sb="$build/bin/scalefit-bench"
for b in "$sf" "$sb"; do
  [ -x "$b" ] || { echo "gen-cli-doc: $b not built" >&2; exit 2; }
done

# Subcommand names listed under "SUBCOMMANDS:" / "Subcommands:" of a --help text.
subcommands() {
  awk 'tolower($0) ~ /^subcommands:/ {on=1; next} on && /^ +[a-z]/ {print $1; next} on && !/^ / {on=0}'
}

section() { # section TITLE CMD...
  local title=$1
  shift
  printf '\n## `%s`\n\n```text\n' "$title"
  "$@" --help | sed -e 's/[[:space:]]*$//' -e "s|$build/bin/||g"
  printf '```\n'
}

emit() {
  cat <<'HEAD'
# Command-line reference

Generated from the binaries' `--help` by `bash scripts/gen-cli-doc.sh` (a test,
`docs.cli_reference_in_sync`, fails when this file and `--help` differ: rerun the script after
changing an option). The two binaries:

- `scalefit-bench` measures: `comm` (collectives, under `mpirun`/`srun`/`mpiexec`) and `kernels`
  (the GEMMs and attention of a transformer layer).
- `scalefit` works on measurements: `ingest` (nccl-tests/OSU logs), `fit`, `predict`, `estimate`,
  `search`, `compare`, `report`, `check` (measured curves against the system's links and a
  reference: [check.md](check.md)).

Exit codes of both: 0 success, 1 a correctness check (`-c`) found wrong elements or `scalefit
check` a failing curve, 2 bad input
(arguments, files; the message names file, line and field), 3 a library failed at run time.
HEAD
  section "scalefit" "$sf"
  local s t
  for s in $("$sf" --help | subcommands); do
    section "scalefit $s" "$sf" "$s"
    for t in $("$sf" "$s" --help | subcommands); do
      section "scalefit $s $t" "$sf" "$s" "$t"
    done
  done
  section "scalefit-bench" "$sb"
  for s in $("$sb" --help | subcommands); do
    section "scalefit-bench $s" "$sb" "$s"
  done
}

if [ "$out" = - ]; then
  emit
else
  emit >"$out.tmp"
  mv "$out.tmp" "$out"
  echo "gen-cli-doc: wrote $out"
fi
