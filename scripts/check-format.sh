#!/usr/bin/env bash
# Fails when a tracked C++ file differs from what clang-format (Debian 12: version 14) makes of it
# with the repository's .clang-format. Fix with: scripts/check-format.sh --fix
set -euo pipefail
cd "$(dirname "$0")/.."
# Tracked files and new ones not yet added (never ignored ones such as build/).
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cc' '*.h' '*.inc')
if [ "${1:-}" = "--fix" ]; then
  clang-format -i "${files[@]}"
  exit 0
fi
if ! clang-format --dry-run -Werror "${files[@]}" 2>/tmp/frugal-format.log; then
  grep -E '^[^ ].*: (error|warning):' /tmp/frugal-format.log | cut -d: -f1 | sort -u |
    sed 's/^/  not formatted: /'
  echo "check-format: run scripts/check-format.sh --fix (clang-format $(clang-format --version | grep -o '[0-9][0-9.]*' | head -1))"
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
