"""`frugal quantize` spills each finished layer to a work directory and resumes an interrupted run
from the last finished layer (issue 48), black box.

SmolLM2-135M, GPTQ on a few calibration windows, at 2 threads: a run stopped after layer k (by
the test-only FRUGAL_QUANTIZE_STOP_AFTER_LAYERS, or killed with SIGKILL wherever it was) and
continued with --resume must write the very bytes of an uninterrupted run with the same
options. --max-size makes every INT4 tensor carry its INT4 g32 and INT8 alternatives, so those
and the errors the choice among them is made from go through the checkpoint too.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

ARGS = ["--method", "gptq", "--calib-samples", "2", "--seq-len", "32", "--no-gate",
        "--max-size", "103MB"]
CALIB = "Order 1299 ships today. The price is $12.50 per item, 3 items in stock.\n" * 40


def quantize(frugal, model, out, calib, *extra, env=None, threads=2, timeout=900):
    cmd = [str(frugal.binary.absolute()), "quantize", "-m", str(model), "-o", str(out),
           "--calib", str(calib), "-t", str(threads), *ARGS, *[str(a) for a in extra]]
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(cmd, capture_output=True, timeout=timeout, env=e, stdin=subprocess.DEVNULL)


def manifest(parts: Path) -> dict:
    return json.loads((parts / "manifest.json").read_text())


@pytest.fixture(scope="module")
def uninterrupted(frugal, smollm2_gguf, tmp_path_factory):
    d = tmp_path_factory.mktemp("resume_ref")
    calib = d / "calib.txt"
    calib.write_text(CALIB)
    out = d / "ref.gguf"
    p = quantize(frugal, smollm2_gguf, out, calib)
    assert p.returncode == 0, p.stderr.decode()[-3000:]
    # The work directory goes once the file is written; the plan says the output is spilled.
    assert not Path(str(out) + ".parts").exists()
    assert "spilled to the work directory" in p.stderr.decode()
    # Spilling changes nothing in the file: the same run with the output kept in memory.
    in_memory = d / "in_memory.gguf"
    p = quantize(frugal, smollm2_gguf, in_memory, calib, "--work-dir", "none")
    assert p.returncode == 0, p.stderr.decode()[-3000:]
    assert "held until written" in p.stderr.decode()
    assert in_memory.read_bytes() == out.read_bytes()
    return calib, out.read_bytes()


def test_stopped_run_resumes_to_the_same_bytes(frugal, smollm2_gguf, tmp_path, uninterrupted):
    calib, want = uninterrupted
    out = tmp_path / "q.gguf"
    parts = Path(str(out) + ".parts")
    k = 11
    p = quantize(frugal, smollm2_gguf, out, calib, env={"FRUGAL_QUANTIZE_STOP_AFTER_LAYERS": str(k)})
    assert p.returncode == 1, p.stderr.decode()[-2000:]
    assert f"stopped after {k} layers" in p.stderr.decode()
    assert not out.exists() and not Path(str(out) + ".tmp").exists()
    m = manifest(parts)
    assert m["layers_done"] == k and m["n_layer"] == 30
    assert m["run"]["method"] == "gptq" and m["run"]["threads"] == "2"
    assert (parts / m["states"]).exists()
    assert sorted(f.name for f in parts.glob("states-*")) == [m["states"]]  # only the latest
    assert all((parts / f"layer-{i:05d}.json").exists() for i in range(k))

    # Without --resume the checkpoint is not thrown away: exit 2, one line.
    p = quantize(frugal, smollm2_gguf, out, calib)
    err = p.stderr.decode()
    assert p.returncode == 2 and "--resume" in err and f"{k} of 30 layers" in err, err
    assert len([l for l in err.splitlines() if l.startswith("frugal: error:")]) == 1, err
    # --resume with other options: refused, naming the option; the checkpoint stays.
    p = quantize(frugal, smollm2_gguf, out, calib, "--resume", "--damp", "0.02")
    err = p.stderr.decode()
    assert p.returncode == 2 and "damp" in err, err
    assert len([l for l in err.splitlines() if l.startswith("frugal: error:")]) == 1, err
    assert manifest(parts)["layers_done"] == k
    p = quantize(frugal, smollm2_gguf, out, calib, "--resume", threads=1)
    assert p.returncode == 2 and "threads" in p.stderr.decode(), p.stderr.decode()

    p = quantize(frugal, smollm2_gguf, out, calib, "--resume")
    err = p.stderr.decode()
    assert p.returncode == 0, err[-3000:]
    assert f"{k} of 30 layers done by an earlier run" in err
    # The time estimate counts only the layers still to quantize.
    assert re.search(rf"plan: time ~\S+ per layer, ~\S+ for {30 - k} layers left \(", err), err
    assert f"layer {k - 1}/31" not in err and f"layer {k}/31" in err  # the finished ones not redone
    assert out.read_bytes() == want
    assert not parts.exists()


def test_killed_run_resumes_to_the_same_bytes(frugal, smollm2_gguf, tmp_path, uninterrupted):
    """SIGKILL in the middle of a layer (after layer 5 started): whatever was half written, the
    resumed run continues from the last finished layer and writes the same bytes."""
    calib, want = uninterrupted
    out = tmp_path / "q.gguf"
    parts = Path(str(out) + ".parts")
    cmd = [str(frugal.binary.absolute()), "quantize", "-m", str(smollm2_gguf), "-o", str(out),
           "--calib", str(calib), "-t", "2", *ARGS]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 600
        for line in proc.stderr:
            if b"layer 5/31" in line:
                time.sleep(0.3)  # into the layer's work
                break
            assert time.monotonic() < deadline
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not out.exists()
    done = manifest(parts)["layers_done"]
    assert 5 <= done < 30, done
    p = quantize(frugal, smollm2_gguf, out, calib, "--resume")
    assert p.returncode == 0, p.stderr.decode()[-3000:]
    assert f"{done} of 30 layers done by an earlier run" in p.stderr.decode()
    assert out.read_bytes() == want
    assert not parts.exists()


def test_work_dir_refusals(frugal, smollm2_gguf, tmp_path):
    calib = tmp_path / "calib.txt"
    calib.write_text(CALIB)
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    out = tmp_path / "q.gguf"
    p = quantize(frugal, smollm2_gguf, out, calib, "--work-dir", other)
    err = p.stderr.decode()
    assert p.returncode == 2 and "notes.txt" in err and err.count("\n") == 1, err
    assert (other / "notes.txt").read_text() == "mine" and not out.exists()
    p = quantize(frugal, smollm2_gguf, out, calib, "--work-dir", "none", "--resume")
    assert p.returncode == 2 and "--resume" in p.stderr.decode(), p.stderr.decode()


@pytest.mark.parametrize("method, target", [("awq", "frugal"), ("gptq", "vllm")])
def test_hf_source_resumes_to_the_same_output(frugal, tmp_path, method, target):
    """A Hugging Face source of arch llama (Q/K re-packed in llama.cpp's order for the GGUF, back
    in transformers' for vLLM), 4 layers, stopped after 2 and resumed: the same file, or the same
    folder file for file. AWQ folds its scales into the layers' norms, which the checkpoint must
    carry (they are written at the end)."""
    import synth

    hf = tmp_path / "hf"
    synth.write_hf_llama(str(hf), model_type="llama", dtype="BF16", tied=False, seed=6, n_layer=4,
                         n_embd=128, n_head=4, n_head_kv=2, n_ff=256)
    calib = tmp_path / "calib.txt"
    calib.write_text(CALIB)
    suffix = "" if target == "vllm" else ".gguf"
    ref, out = tmp_path / f"ref{suffix}", tmp_path / f"out{suffix}"

    def run(o, *extra, env=None):
        cmd = [str(frugal.binary.absolute()), "quantize", "-q", "-m", str(hf), "-o", str(o),
               "--method", method, "--target", target, "--calib", str(calib), "--calib-samples", "4",
               "--seq-len", "32", "--no-gate", "-t", "2", *extra]
        e = dict(os.environ)
        e.update(env or {})
        return subprocess.run(cmd, capture_output=True, timeout=300, env=e, stdin=subprocess.DEVNULL)

    p = run(ref)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    p = run(out, env={"FRUGAL_QUANTIZE_STOP_AFTER_LAYERS": "2"})
    assert p.returncode == 1 and "stopped after 2 layers" in p.stderr.decode(), p.stderr.decode()
    assert manifest(Path(str(out) + ".parts"))["layers_done"] == 2
    p = run(out, "--resume")
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    assert not Path(str(out) + ".parts").exists()
    if target == "vllm":
        names = sorted(f.name for f in ref.iterdir())
        assert names == sorted(f.name for f in out.iterdir())
        for n in names:
            assert (ref / n).read_bytes() == (out / n).read_bytes(), n
    else:
        assert ref.read_bytes() == out.read_bytes()


def test_keep_work_dir_and_resume_a_finished_run(frugal, tmp_path):
    """--keep-work-dir leaves the checkpoint of a finished run; --resume on it quantizes nothing
    again (every layer is read back) and writes the same file."""
    import synth

    src = tmp_path / "tiny.gguf"
    synth.write_gguf_llama(str(src), wtype="F16", n_layer=3, n_embd=64, n_ff=256)
    calib = tmp_path / "calib.txt"
    calib.write_text(CALIB)
    out = tmp_path / "q.gguf"
    parts = Path(str(out) + ".parts")
    base = [str(frugal.binary.absolute()), "quantize", "-m", str(src), "-o", str(out), "--method",
            "gptq", "--calib", str(calib), "--calib-samples", "4", "--seq-len", "32", "--no-gate",
            "-t", "2"]
    p = subprocess.run(base + ["--keep-work-dir"], capture_output=True, timeout=300)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    first = out.read_bytes()
    assert manifest(parts)["layers_done"] == 3
    out.unlink()
    p = subprocess.run(base + ["--resume"], capture_output=True, timeout=300)
    err = p.stderr.decode()
    assert p.returncode == 0, err[-2000:]
    assert "3 of 3 layers done by an earlier run" in err and "layer 0/4" not in err, err
    assert re.search(r"plan: time ~\S+ per layer, ~0s for 0 layers left \(", err), err
    assert out.read_bytes() == first
    assert not parts.exists()
