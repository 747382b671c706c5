#!/usr/bin/env bash
# Every test: install, build, fetch models, build llama-server, ctest (unit, model, Redis, pytest
# black-box, the gateway over real llama-servers), then the unit and Redis tests under
# ASan+UBSan and a short fuzz of the file parsers.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh

echo "== clang-format over every tracked C++ file"
./scripts/check-format.sh
./scripts/build.sh
./scripts/get-models.sh
# llama.cpp's own llama-server, from the llama-cpp-python sdist's vendored source (cached): the
# real engine of the gateway's fleet test (tests/python/test_fleet_llamacpp.py).
./scripts/build-llama-cpp.sh llama-server

echo "== ctest (unit, model, integration)"
ctest --test-dir build --output-on-failure -j2

echo "== unit tests with kernels forced to each lower level (the default run used the CPU's best)"
# A level above what this CPU has is refused with a warning and the CPU's best runs instead.
for level in scalar avx2 avx512bw; do
  echo "-- FRUGAL_CPU=$level"
  FRUGAL_CPU=$level ctest --test-dir build -L unit --output-on-failure -j2
  # Prefix caching changes no logits row on the real model at this level either (about 100 s
  # at scalar, 2 s at the others).
  FRUGAL_CPU=$level build/tests/frugal_model_tests --gtest_filter='PrefixCacheModelTest.*' \
    --gtest_brief=1
done

# The ISA-specific kernel objects must define no weak symbols (src/kernels/x86/x86_variant.h).
no_weak_symbols() {
  for o in "$@"; do
    weak=$(nm -C --defined-only "$o" | awk '$2 ~ /^[WVu]$/')
    if [ -n "$weak" ]; then echo "$o defines weak symbols (the linker may pick its ISA's copy for any caller):"; echo "$weak"; exit 1; fi
  done
}
echo "== no weak symbols in the x86 kernel objects"
no_weak_symbols build/CMakeFiles/frugal_kernels.dir/src/kernels/x86/*.o

echo "== unit tests and the Redis cache tests under ASan+UBSan"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DFRUGAL_SANITIZE=ON >/dev/null
ninja -C build-asan -j"$(nproc)" frugal_unit_tests frugal_redis_tests
# Unoptimized, nothing is inlined: the AVX-512 objects must still define no weak symbols.
no_weak_symbols build-asan/CMakeFiles/frugal_kernels.dir/src/kernels/x86/avx512*.o
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir build-asan -L unit --output-on-failure -j2
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --test-dir build-asan -R '^RedisCacheTest\.' --output-on-failure -j2

echo "== fuzz the GGUF, safetensors and E5S1 parsers, the cache verifier's text reading, the gateway request parsing and the engines' /metrics reading (libFuzzer, 30 s each)"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DFRUGAL_FUZZ=ON -DFRUGAL_BUILD_TESTS=OFF >/dev/null
ninja -C build-fuzz -j"$(nproc)" gguf_fuzz safetensors_fuzz e5_fuzz text_signals_fuzz fuzz_gateway_request \
  prometheus_fuzz
# Two fuzzers at a time (one per core): each runs its 30 s; a crash fails the run with its log.
run_fuzz() {  # NAME MAX_LEN SEEDS_DIR|""
  local name=$1 max_len=$2 seeds=$3
  mkdir -p "build-fuzz/corpus-$name"
  build-fuzz/fuzz/"$name" -max_total_time=30 -max_len="$max_len" -rss_limit_mb=2048 \
    "build-fuzz/corpus-$name" $seeds >"build-fuzz/$name.log" 2>&1 ||
    { echo "fuzz target $name failed:"; tail -n 60 "build-fuzz/$name.log"; return 1; }
  echo "-- $name: $(grep -Eo 'Done [0-9]+ runs in [0-9]+ second' "build-fuzz/$name.log" | tail -n 1)"
}
fuzz_pair() {
  run_fuzz $1 $2 "$3" & local a=$!
  run_fuzz $4 $5 "$6" & local b=$!
  local rc=0
  wait $a || rc=1
  wait $b || rc=1
  return $rc
}
fuzz_pair gguf_fuzz 4096 fuzz/seeds/gguf safetensors_fuzz 4096 fuzz/seeds/safetensors
fuzz_pair e5_fuzz 8192 fuzz/seeds/e5 text_signals_fuzz 4096 fuzz/seeds/text_signals
fuzz_pair fuzz_gateway_request 4096 "" prometheus_fuzz 8192 fuzz/seeds/prometheus
echo "all tests passed"
