"""`frugal quantize` leaves its output on disk before it lets go of anything (common/durable.h).

A quantization may take hours; its checkpoint (OUTPUT.parts) is removed once the output is
written. If the output were only in the page cache at that moment, a power loss would leave a
renamed but empty or torn file and no checkpoint to resume from. Traced with strace (the system
calls as they happen, file descriptors shown with their paths), black box:
  - the GGUF: its .tmp file is fsync'ed before it is renamed to the output's name, the directory
    is fsync'ed after the rename, and only then is the work directory removed;
  - the vLLM folder (--target vllm): every shard and file in it and the folder itself are
    fsync'ed before the folder is renamed, the parent directory after.
"""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

import synth

DIMS = dict(n_embd=128, n_head=4, n_head_kv=2, n_ff=256)


def traced(frugal, tmp_path, *args) -> list[str]:
    if shutil.which("strace") is None:
        pytest.fail("strace is not installed (scripts/install-deps.sh installs it)")
    log = tmp_path / "strace.log"
    cmd = ["strace", "-f", "-qq", "-y", "-e",
           "trace=fsync,fdatasync,rename,renameat,renameat2,unlink,unlinkat,rmdir",
           "-o", str(log), str(frugal.binary.absolute()), "quantize", "-q", *map(str, args)]
    p = subprocess.run(cmd, capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()[-3000:]
    return log.read_text().splitlines()


def first(lines: list[str], pattern: str, after: int = -1) -> int:
    rx = re.compile(pattern)
    for i, line in enumerate(lines):
        if i > after and rx.search(line):
            return i
    raise AssertionError(f"no line matching {pattern!r} after line {after}:\n" + "\n".join(lines[-40:]))


def test_gguf_is_synced_before_rename_and_before_the_checkpoint_goes(frugal, tmp_path):
    src, out = tmp_path / "src.gguf", tmp_path / "out.gguf"
    synth.write_gguf_llama(str(src), seed=3, **DIMS)
    lines = traced(frugal, tmp_path, "-m", src, "-o", out, "--method", "rtn", "--no-gate", "-t", "1")
    o, t = re.escape(str(out)), re.escape(str(out) + ".tmp")
    sync_tmp = first(lines, rf"fsync\(\d+<{t}>\)")
    rename = first(lines, rf'rename(at2?)?\(.*"{t}".*"{o}"')
    sync_dir = first(lines, rf"fsync\(\d+<{re.escape(str(tmp_path))}>\)", after=rename)
    assert sync_tmp < rename < sync_dir
    # The work directory (out.gguf.parts: a checkpoint per layer) goes only after that.
    # (During the run only superseded files in it are unlinked; its manifest is replaced by
    # renames, so the manifest's unlink and the folder's rmdir are the removal.)
    parts = re.escape(str(out) + ".parts")
    assert first(lines, rf'unlink(at)?\(.*"{parts}/manifest\.json"(, 0)?\) += 0') > sync_dir
    assert first(lines, rf'(rmdir\(|unlinkat\(.*AT_REMOVEDIR).*"{parts}"') > sync_dir
    assert out.exists() and not (tmp_path / "out.gguf.parts").exists()


def test_vllm_folder_is_synced_before_it_takes_its_name(frugal, tmp_path):
    hf, out = tmp_path / "hf", tmp_path / "out"
    synth.write_hf_llama(str(hf), model_type="llama", dtype="BF16", seed=2, **DIMS)
    lines = traced(frugal, tmp_path, "-m", hf, "-o", out, "--target", "vllm", "--method", "rtn",
                   "--no-gate", "--shard-size", "200kB")
    tmp_dir = str(out) + ".tmp"
    rename = first(lines, rf'rename(at2?)?\(.*"{re.escape(tmp_dir)}".*"{re.escape(str(out))}"')
    files = sorted(p.name for p in out.iterdir())
    assert "model.safetensors.index.json" in files and "config.json" in files
    for name in files:
        i = first(lines, rf"fsync\(\d+<{re.escape(tmp_dir)}/{re.escape(name)}>\)")
        assert i < rename, name
    assert first(lines, rf"fsync\(\d+<{re.escape(tmp_dir)}>\)") < rename
    first(lines, rf"fsync\(\d+<{re.escape(str(tmp_path))}>\)", after=rename)
