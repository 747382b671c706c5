#!/usr/bin/env bash
# clang-tidy (Debian 12: version 14) with the agreed check set in .clang-tidy over every source
# file of src/, against build/compile_commands.json (scripts/build.sh makes it). Fails on any
# finding. About 10 s per file on one core: not part of scripts/test.sh; run it before a change
# lands. Arguments: files to check instead of all of src/.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/compile_commands.json ] || { echo "tidy: run scripts/build.sh first" >&2; exit 2; }
if [ $# -gt 0 ]; then files=("$@"); else mapfile -t files < <(git ls-files 'src/*.cc'); fi
run-clang-tidy -p build -j"$(nproc)" -quiet "${files[@]/#/$PWD/}" >/tmp/frugal-tidy.raw 2>&1 || true
grep -v -E '^[0-9]+ warnings? generated|^Suppressed|^Use -header-filter|^clang-tidy-14 |^Running' \
  /tmp/frugal-tidy.raw >/tmp/frugal-tidy.log || true
cat /tmp/frugal-tidy.log
if grep -q -E 'warning:|error:' /tmp/frugal-tidy.log; then
  echo "tidy: findings above"
  exit 1
fi
echo "tidy: ${#files[@]} files clean"
