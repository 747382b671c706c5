"""`frugal quantize` says what a run will cost before the long part (issue 48): the plan's
memory and time, the refusal when one layer cannot fit, and --max-memory's cap on the
calibration hidden states (windows dropped evenly)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import synth


def run(frugal, *args, env=None, timeout=300):
    cmd = [str(frugal.binary.absolute())] + [str(a) for a in args]
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(cmd, capture_output=True, timeout=timeout, env=e,
                          stdin=subprocess.DEVNULL)


def tiny(tmp_path: Path) -> tuple[Path, Path]:
    model = tmp_path / "tiny.gguf"
    synth.write_gguf_llama(str(model), wtype="F16", n_layer=2, n_embd=64, n_ff=256)
    calib = tmp_path / "calib.txt"
    calib.write_text("The order number is 4521 and it ships on Monday to Berlin. " * 40)
    return model, calib


PLAN_MEM = re.compile(r"plan: memory ~([\d.]+) GB for one layer \(source ([\d.]+) \+ "
                      r"calibration states ([\d.]+) \+ layer work ([\d.]+)\)")


def test_plan_comes_before_the_first_layer(frugal, tmp_path):
    model, calib = tiny(tmp_path)
    out = tmp_path / "q.gguf"
    p = run(frugal, "quantize", "-m", model, "-o", out, "--method", "gptq", "--calib", calib,
            "--calib-samples", "4", "--seq-len", "32", "--no-gate", "-t", "2")
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    lines = p.stderr.decode().splitlines()
    first_layer = next(i for i, l in enumerate(lines) if "layer 0/" in l)
    plan = [i for i, l in enumerate(lines) if l.startswith("plan: ")]
    assert len(plan) == 2 and all(i < first_layer for i in plan), lines
    m = PLAN_MEM.search(lines[plan[0]])
    assert m, lines[plan[0]]
    total, source, states, work = (float(x) for x in m.groups())
    assert abs(total - (source + states + work)) < 0.15
    assert re.search(r"plan: time ~\S+ per layer, ~\S+ for 2 layers \(probes: sgemm \d+ GFLOPS",
                     lines[plan[1]]), lines[plan[1]]
    assert "128 calibration tokens" in lines[plan[1]]
    # -q: no plan either.
    q = run(frugal, "quantize", "-q", "-m", model, "-o", tmp_path / "q2.gguf", "--method", "rtn",
            "--no-gate")
    assert q.returncode == 0 and "plan:" not in q.stderr.decode()


def test_refuses_when_one_layer_cannot_fit(frugal, tmp_path):
    model, calib = tiny(tmp_path)
    out = tmp_path / "q.gguf"
    p = run(frugal, "quantize", "-m", model, "-o", out, "--method", "gptq", "--calib", calib,
            "--calib-samples", "2", "--seq-len", "32", "--no-gate",
            env={"FRUGAL_MEM_AVAILABLE": "1000"})
    err = p.stderr.decode()
    assert p.returncode == 2, err
    error_lines = [l for l in err.splitlines() if l.startswith("frugal: error:")]
    assert len(error_lines) == 1 and "one layer needs about" in error_lines[0], err
    assert "MemAvailable is 0.0 GB" in error_lines[0]
    assert "layer 0/" not in err  # refused before the first layer
    assert not out.exists() and not Path(str(out) + ".tmp").exists()


def test_max_memory_drops_windows_evenly(frugal, tmp_path):
    model, calib = tiny(tmp_path)
    out = tmp_path / "q.gguf"
    # A window is 32 tokens x 64 floats x 4 bytes = 8192 bytes: 20 kB holds two of four.
    p = run(frugal, "quantize", "-m", model, "-o", out, "--method", "gptq", "--calib", calib,
            "--calib-samples", "4", "--seq-len", "32", "--no-gate", "--max-memory", "20kB")
    err = p.stderr.decode()
    assert p.returncode == 0, err
    assert "--max-memory kept 2 of 4 calibration windows" in err, err
    q = json.loads(frugal.ok("info", "--json", out).stdout)["quantization"]
    assert (q["calib_samples"], q["calib_tokens"]) == ("2", "64"), q
    # Not one window fits: exit 2, one line, nothing written.
    out2 = tmp_path / "q2.gguf"
    p = run(frugal, "quantize", "-m", model, "-o", out2, "--method", "gptq", "--calib", calib,
            "--calib-samples", "4", "--seq-len", "32", "--no-gate", "--max-memory", "1kB")
    assert p.returncode == 2 and "holds no calibration window" in p.stderr.decode()
    assert not out2.exists()
    p = run(frugal, "quantize", "-m", model, "-o", out2, "--max-memory", "lots", "--no-gate")
    assert p.returncode == 2 and "--max-memory: 'lots' is not a size" in p.stderr.decode()


def peak_rss_of(frugal, *args) -> tuple[int, str]:
    """Runs `frugal ARGS` in a child of a fresh Python, whose RUSAGE_CHILDREN max RSS is then
    that one process's peak resident set, in bytes."""
    code = ("import resource, subprocess, sys\n"
            "p = subprocess.run(sys.argv[1:], capture_output=True, stdin=subprocess.DEVNULL)\n"
            "sys.stderr.write(p.stderr.decode(errors='replace'))\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
            "sys.exit(p.returncode)\n")
    p = subprocess.run([sys.executable, "-c", code, str(frugal.binary.absolute())] +
                       [str(a) for a in args], capture_output=True, timeout=600)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    return int(p.stdout.decode().split()[-1]) * 1024, p.stderr.decode()


def test_source_is_resident_about_one_layer_at_a_time(frugal, tmp_path):
    # A finished layer's source pages go back to the kernel, so doubling the layers of an F16
    # source adds far less than their bytes to the peak resident set (without that, all of
    # them: the mapped file stays resident once read).
    peaks, sizes = [], []
    for n_layer in (8, 16):
        model = tmp_path / f"wide{n_layer}.gguf"
        synth.write_gguf_llama(str(model), wtype="F16", n_layer=n_layer, n_embd=512, n_head=8,
                               n_head_kv=4, n_ff=2048)
        rss, err = peak_rss_of(frugal, "quantize", "-m", model, "-o", tmp_path / "q.gguf",
                               "--method", "rtn", "--no-gate", "-t", "2")
        assert "are mapped and read a layer at a time" in err, err[-2000:]
        peaks.append(rss)
        sizes.append(model.stat().st_size)
    added_source = sizes[1] - sizes[0]  # 8 layers of ~8.4 MB
    assert added_source > 60e6, sizes
    # The quantized output (about a third of the F16 bytes) is still held until written.
    assert peaks[1] - peaks[0] < 0.6 * added_source, (peaks, sizes)
