#!/usr/bin/env bash
# Prints the Python that the download scripts use: the project's .venv when it has pip, else the
# system python3 when it has pip. Exit status 1 (nothing printed) when neither has.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
for cand in "$ROOT/.venv/bin/python" python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -m pip --version >/dev/null 2>&1; then
    echo "$cand"
    exit 0
  fi
done
exit 1
