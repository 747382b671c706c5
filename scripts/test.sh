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
mkdir -p build-fuzz/corpus-gguf build-fuzz/corpus-st
build-fuzz/fuzz/gguf_fuzz -max_total_time=30 -max_len=4096 -rss_limit_mb=2048 build-fuzz/corpus-gguf fuzz/seeds/gguf
build-fuzz/fuzz/safetensors_fuzz -max_total_time=30 -max_len=4096 -rss_limit_mb=2048 build-fuzz/corpus-st fuzz/seeds/safetensors
mkdir -p build-fuzz/corpus-e5 build-fuzz/corpus-text
build-fuzz/fuzz/e5_fuzz -max_total_time=30 -max_len=8192 -rss_limit_mb=2048 build-fuzz/corpus-e5 fuzz/seeds/e5
build-fuzz/fuzz/text_signals_fuzz -max_total_time=30 -max_len=4096 -rss_limit_mb=2048 build-fuzz/corpus-text fuzz/seeds/text_signals
mkdir -p build-fuzz/corpus-gateway
build-fuzz/fuzz/fuzz_gateway_request -max_total_time=30 -max_len=4096 -rss_limit_mb=2048 build-fuzz/corpus-gateway
mkdir -p build-fuzz/corpus-prometheus
build-fuzz/fuzz/prometheus_fuzz -max_total_time=30 -max_len=8192 -rss_limit_mb=2048 build-fuzz/corpus-prometheus fuzz/seeds/prometheus
echo "all tests passed"
