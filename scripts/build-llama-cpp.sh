#!/usr/bin/env bash
# Builds llama.cpp's own C++ tools (llama-server, llama-bench, llama-cli, llama-quantize,
# llama-perplexity, llama-imatrix) from the llama.cpp source that the llama-cpp-python sdist on
# PyPI vendors: the speed anchor of docs/benchmarks.md and the real engine of the gateway's fleet
# tests (tests/python/test_fleet_llamacpp.py). Release, native CPU flags (GGML_NATIVE), no
# network at build time (no prebuilt web UI, no libcurl, no OpenSSL).
#
#   scripts/build-llama-cpp.sh            # all six -> third_party/llama.cpp/bin/llama-server, ...
#   scripts/build-llama-cpp.sh llama-server  # only these (scripts/test.sh: the fleet tests)
#   scripts/build-llama-cpp.sh --print-bin   # the folder of the binaries (builds when needed)
#   FRUGAL_LLAMA_CPP_DIR=/x scripts/build-llama-cpp.sh   # another place (default: <repo>/third_party/llama.cpp)
#   FRUGAL_LLAMA_CPP_ISA=avx2 scripts/build-llama-cpp.sh llama-bench
#       # AVX2 + FMA + F16C only, no AVX-512 (default <repo>/third_party/llama.cpp-avx2): what an
#       # AVX2-only machine runs, measured on an AVX-512 one next to FRUGAL_CPU=avx2
#   scripts/build-llama-cpp.sh --print-config  # the ISA, compiler flags and stamp it would build
#       # with, one `key: value` a line; builds nothing (tests fake the CPU's flags with it)
#
# AMX: on a CPU whose flags list amx_tile (Intel Sapphire/Emerald/Granite Rapids), the native
# build is made without AMX (-mno-amx-tile -mno-amx-int8 -mno-amx-bf16 ..., every AMX flag the
# compiler knows, and GGML_AMX_*=OFF). GGML_NATIVE's -march=native would compile ggml's AMX
# matrix path, and on such machines every tool built that way died with SIGILL at its first
# matrix product (issue 44: `tileloadd` with no tile configuration on that thread), which no
# probe of the flags can foresee. The log says which it chose and the stamp records it (amx=off),
# so a build cached from a machine without AMX is rebuilt. FRUGAL_LLAMA_CPP_CPU_FLAGS replaces
# /proc/cpuinfo's flags line (space-separated), so the rule can be tested on any machine.
#
# After a build, and on a cached one, each tool must run `--version`: a binary that crashes at
# start (an instruction this CPU lacks) is an error here, naming the signal, not in a test.
#
# Cached: the sdist is pinned by SHA-256 (kept under <dir>/cache), and the binaries are stamped
# with the sdist's hash, the compiler and the CPU's flags; when the stamp matches and the asked
# tools are there, nothing is downloaded or rebuilt (a tool not built yet is added to the build). Another CPU (native flags) or another version means a
# rebuild. The folder is git-ignored; nothing of llama.cpp is committed.
#
# Exit status: 0 the tools are there; 1 a download, hash check or build failed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ISA="${FRUGAL_LLAMA_CPP_ISA:-native}"
case "$ISA" in
  native)
    DIR="${FRUGAL_LLAMA_CPP_DIR:-$ROOT/third_party/llama.cpp}"
    ISA_FLAGS=(-DGGML_NATIVE=ON) ;;
  avx2)
    DIR="${FRUGAL_LLAMA_CPP_DIR:-$ROOT/third_party/llama.cpp-avx2}"
    ISA_FLAGS=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
      -DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_VBMI=OFF
      -DGGML_AVX512_BF16=OFF -DGGML_AVX_VNNI=OFF) ;;
  *) echo "build-llama-cpp: error: FRUGAL_LLAMA_CPP_ISA is native or avx2, not $ISA" >&2; exit 2 ;;
esac
VERSION=0.3.36
SDIST="llama_cpp_python-$VERSION.tar.gz"
SDIST_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
log() { echo "build-llama-cpp: $*" >&2; }
die() { echo "build-llama-cpp: error: $*" >&2; exit 1; }

ALL_TARGETS=(llama-server llama-bench llama-cli llama-quantize llama-perplexity llama-imatrix)
print_bin=0
TARGETS=()
print_config=0
for a in "$@"; do
  case "$a" in
    --print-bin) print_bin=1 ;;
    --print-config) print_config=1 ;;
    llama-*)
      [[ " ${ALL_TARGETS[*]} " == *" $a "* ]] || die "unknown tool $a (one of: ${ALL_TARGETS[*]})"
      TARGETS+=("$a")
      ;;
    *) die "unknown argument $a (usage: scripts/build-llama-cpp.sh [--print-bin|--print-config] [TOOL...])" ;;
  esac
done
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=("${ALL_TARGETS[@]}")

# What a build depends on besides the source: the compiler and the CPU (GGML_NATIVE).
if [ -n "${FRUGAL_LLAMA_CPP_CPU_FLAGS:-}" ]; then
  all_cpu_flags="$FRUGAL_LLAMA_CPP_CPU_FLAGS"
else
  all_cpu_flags="$(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2-)"
fi
# shellcheck disable=SC2086  # one flag a word
cpu_flags="$(printf '%s\n' $all_cpu_flags | grep -E '^(avx|f16c|fma|sse|bmi|amx)' | sort | tr '\n' ' ')"
isa_tag=""
[ "$ISA" = native ] || isa_tag=" isa=$ISA"  # native builds keep the stamp they always had

# AMX off where the CPU has it (see the header); a machine without AMX builds as it always did.
amx_tag=""
amx_note="this CPU has no AMX"
if [[ " $all_cpu_flags " == *" amx_tile "* ]]; then
  if [ "$ISA" = native ]; then
    no_amx=()
    # Every AMX extension this compiler knows: -march=native turns on each the CPU lists, and
    # -mno-amx-tile alone leaves amx-int8 and amx-bf16 on (GCC 12).
    for ext in amx-tile amx-int8 amx-bf16 amx-fp16 amx-complex amx-fp8 amx-tf32 amx-transpose \
        amx-avx512 amx-movrs; do
      if echo 'int main(void) { return 0; }' | cc -mno-$ext -x c -fsyntax-only - 2>/dev/null &&
          echo 'int main() { return 0; }' | c++ -mno-$ext -x c++ -fsyntax-only - 2>/dev/null; then
        no_amx+=("-mno-$ext")
      fi
    done
    ISA_FLAGS+=(-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
      "-DCMAKE_C_FLAGS=${no_amx[*]}" "-DCMAKE_CXX_FLAGS=${no_amx[*]}")
    amx_tag=" amx=off"
    amx_note="this CPU has AMX (amx_tile): building without ggml's AMX path (${no_amx[*]}); ggml's AMX kernels died with SIGILL at the first matrix product on such machines (issue 44)"
  else
    amx_note="this CPU has AMX; the $ISA build has none"
  fi
fi
stamp_text="sdist=$SDIST_SHA256 cxx=$(c++ --version | head -n1) cpu=$cpu_flags$isa_tag$amx_tag"
stamp_file="$DIR/bin/.stamp"

if [ "$print_config" = 1 ]; then
  echo "isa: $ISA"
  echo "dir: $DIR"
  if [ -n "$amx_tag" ]; then echo "amx: off"; else echo "amx: none"; fi
  echo "note: $amx_note"
  printf 'cmake-flag: %s\n' "${ISA_FLAGS[@]}"
  echo "stamp: $stamp_text"
  exit 0
fi

PY="$("$ROOT/scripts/python-with-pip.sh")" ||
  die "no Python with pip (run scripts/install-deps.sh)"
command -v cmake >/dev/null || die "cmake not found (run scripts/install-deps.sh)"

# Each tool must start on this CPU: `TOOL --version` exits 0. A signal (SIGILL: an instruction
# this CPU lacks) is named, so a broken build is an error here rather than a hang or an
# assertion deep in a test.
check_runs() {  # TOOL...
  local t rc out sig
  for t in "$@"; do
    rc=0
    out="$(timeout 30 "$DIR/bin/$t" --version 2>&1)" || rc=$?
    [ "$rc" = 0 ] && continue
    if [ "$rc" = 124 ]; then
      die "$t --version did not finish in 30 s ($DIR/bin/$t)"
    elif [ "$rc" -gt 128 ]; then
      sig="$(kill -l $((rc - 128)) 2>/dev/null || echo $((rc - 128)))"
      die "$t crashed at start: killed by SIG$sig$([ "$sig" = ILL ] && echo ' (illegal instruction: built for an instruction this CPU cannot run)') ($amx_note; binary $DIR/bin/$t; delete $DIR/bin to rebuild)"
    fi
    die "$t --version exited $rc: $(echo "$out" | tail -n 3)"
  done
}

if [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp_text" ]; then
  ok=1
  for t in "${TARGETS[@]}"; do [ -x "$DIR/bin/$t" ] || ok=0; done
  if [ "$ok" = 1 ]; then
    check_runs "${TARGETS[@]}"
    log "cached: $DIR/bin (llama-cpp-python $VERSION's llama.cpp; $amx_note)"
    [ "$print_bin" = 1 ] && echo "$DIR/bin"
    exit 0
  fi
fi

mkdir -p "$DIR/cache"
if [ ! -f "$DIR/cache/$SDIST" ] || [ "$(sha256sum "$DIR/cache/$SDIST" | cut -d' ' -f1)" != "$SDIST_SHA256" ]; then
  log "downloading $SDIST from PyPI ..."
  tmp="$(mktemp -d "$DIR/cache/dl.XXXXXX")"
  # --no-build-isolation: pip must not build the package to read its metadata (that would pull
  # scikit-build-core and compile); only the tarball is wanted.
  if ! "$PY" -m pip download --no-deps --no-binary :all: --no-build-isolation --disable-pip-version-check \
      -q -d "$tmp" "llama-cpp-python==$VERSION" >&2 2>/dev/null; then
    # Older pips insist on preparing metadata; let it, with isolation.
    "$PY" -m pip download --no-deps --no-binary :all: --disable-pip-version-check -q -d "$tmp" \
      "llama-cpp-python==$VERSION" >&2 || { rm -rf "$tmp"; die "pip download llama-cpp-python==$VERSION failed"; }
  fi
  [ -f "$tmp/$SDIST" ] || { rm -rf "$tmp"; die "pip download did not produce $SDIST"; }
  got="$(sha256sum "$tmp/$SDIST" | cut -d' ' -f1)"
  [ "$got" = "$SDIST_SHA256" ] || { rm -rf "$tmp"; die "SHA-256 mismatch for $SDIST: expected $SDIST_SHA256, got $got"; }
  mv -f "$tmp/$SDIST" "$DIR/cache/$SDIST"
  rm -rf "$tmp"
fi

SRC="$DIR/src"
if [ ! -f "$SRC/.sdist-$SDIST_SHA256" ]; then
  log "extracting vendor/llama.cpp ..."
  rm -rf "$SRC" "$SRC.tmp"
  mkdir -p "$SRC.tmp"
  tar -xzf "$DIR/cache/$SDIST" -C "$SRC.tmp" --strip-components=3 "llama_cpp_python-$VERSION/vendor/llama.cpp"
  touch "$SRC.tmp/.sdist-$SDIST_SHA256"
  mv "$SRC.tmp" "$SRC"
fi

log "building ${TARGETS[*]} (Release, ISA $ISA; $amx_note) ..."
start=$(date +%s)
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$SRC" -B "$DIR/build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release "${ISA_FLAGS[@]}" \
  -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_NUMBER=0 >"$DIR/cmake.log" 2>&1 || { tail -n 30 "$DIR/cmake.log" >&2; die "cmake configure failed (log: $DIR/cmake.log)"; }
cmake --build "$DIR/build" --config Release -j"$(nproc)" --target "${TARGETS[@]}" >"$DIR/build.log" 2>&1 ||
  { tail -n 40 "$DIR/build.log" >&2; die "build failed (log: $DIR/build.log)"; }

mkdir -p "$DIR/bin"
# Binaries of another stamp (version, compiler, CPU) must not sit beside the new ones.
if [ ! -f "$stamp_file" ] || [ "$(cat "$stamp_file")" != "$stamp_text" ]; then
  rm -f "$DIR"/bin/llama-*
fi
for t in "${TARGETS[@]}"; do
  [ -x "$DIR/build/bin/$t" ] || die "$t was not built"
  cp -f "$DIR/build/bin/$t" "$DIR/bin/$t"
done
check_runs "${TARGETS[@]}"
echo "$stamp_text" >"$stamp_file"
log "built in $(($(date +%s) - start)) s: $DIR/bin"
[ "$print_bin" = 1 ] && echo "$DIR/bin"
exit 0
