#!/usr/bin/env bash
# Installs every build and test dependency of Frugal on Debian 12: Debian packages through apt,
# Python packages through pip. Idempotent; safe to run on every CI start.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev clang-format clang-tidy
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libyaml-cpp-dev libboost-dev libhnswlib-dev libpcre2-dev libutf8proc-dev libeigen3-dev libopenblas-dev libopenblas0-pthread libhiredis-dev libssl-dev openssl
  python3 python3-pip python3-venv unzip ca-certificates
  chromium
  strace
)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: apt packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

# Python side: reference implementations and black-box tests (never in the serving path).
# A venv in .venv keeps this working on Debian's externally-managed Python as on any other.
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -r scripts/requirements-test.txt
