#!/bin/sh
# docs/cli.md must be exactly what scripts/gen-cli-doc.sh makes from the binaries' --help.
# Usage: cli_doc_sync.sh SOURCE_DIR BUILD_DIR
set -eu
src=$1 build=$2
tmp=$(mktemp /tmp/scalefit_cli_md_XXXXXX)
trap 'rm -f "$tmp"' EXIT
bash "$src/scripts/gen-cli-doc.sh" "$build" - >"$tmp"
if ! diff -u "$src/docs/cli.md" "$tmp"; then
  echo "FAIL: docs/cli.md differs from --help (diff above: - docs, + --help)."
  echo "Regenerate it: bash scripts/gen-cli-doc.sh $build"
  exit 1
fi
echo "docs/cli.md matches --help"
