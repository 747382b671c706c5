#!/usr/bin/env python3
"""The quantization table and plot of docs/quantization.md, in one run.

    .venv/bin/python bench/quant_table.py --out-dir /tmp/qt [--llama-python /tmp/llvenv/bin/python]

1. Exports the reference to F16 (`frugal quantize --preset f16`): the size baseline, and the
   source llama.cpp quantizes from.
2. Frugal: the mixed preset with RTN, GPTQ, AWQ and AWQ+GPTQ; all-INT4 g128 and all-INT8 with RTN
   and GPTQ. Quantization time is measured around each `frugal quantize`.
3. llama.cpp (when --llama-python names a Python with llama-cpp-python): Q4_0, Q4_K_M, Q5_K_M and
   Q8_0 from the same F16 export, through its llama_model_quantize.
4. `frugal eval` of every file against the reference on the held-out text and the numeric
   probes (float activations, so only the weights differ).
Writes results.json, a Markdown table (table.md) and a KLD-vs-size SVG plot.
Files already in --out-dir are reused, so an interrupted run continues.

--ref PATH starts from another reference, e.g. the dithered one of bench/dither_reference.py
(weights off every quantization grid), with --out-dir a fresh folder.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REF = ROOT / "models" / "smollm2-135m-instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf"
CALIB = ROOT / "tests" / "data" / "calib_cs.jsonl"
TEXT = ROOT / "tests" / "data" / "heldout_cs.txt"
PROBES = ROOT / "tests" / "data" / "numeric_probes.jsonl"

FRUGAL_RUNS = [  # (label, preset, method[, extra quantize args])
    ("mixed RTN", "mixed-int4-int8", "rtn"),
    ("mixed GPTQ", "mixed-int4-int8", "gptq"),
    ("mixed AWQ", "mixed-int4-int8", "awq"),
    ("mixed AWQ+GPTQ", "mixed-int4-int8", "awq+gptq"),
    ("all-INT4 RTN", "all-int4", "rtn"),
    ("all-INT4 GPTQ", "all-int4", "gptq"),
    ("all-INT8 RTN", "all-int8", "rtn"),
    ("all-INT8 GPTQ", "all-int8", "gptq"),
    # The mixed preset grown to llama.cpp's K-quant sizes: the file sizes of Q4_K_M (105.5 MB) and
    # Q5_K_M (112.1 MB) less the 1.8 MB of metadata, as --max-size bounds the tensor data.
    ("mixed GPTQ 103.6MB", "mixed-int4-int8", "gptq", ["--max-size", "103.6MB"]),
    ("mixed GPTQ 110.3MB", "mixed-int4-int8", "gptq", ["--max-size", "110.3MB"]),
    # g32 everywhere: on the Q4_1 reference INT4 g32 asymmetric is the reference's own grid, so
    # the FFN is copied exactly; this row measures how much that grid favours g32 formats.
    ("mixed RTN g32", "mixed-int4-int8", "rtn", ["--group-size", "32"]),
    ("mixed GPTQ g32", "mixed-int4-int8", "gptq", ["--group-size", "32"]),
    # INT4 g32 everywhere (5 bits/weight, attention included, as llama.cpp's K-quant files
    # store most of SmolLM2's matrices at 5 bits), grown to Q4_K_M's and Q5_K_M's sizes.
    ("all-INT4 GPTQ g32 103.6MB", "all-int4", "gptq", ["--group-size", "32", "--max-size", "103.6MB"]),
    ("all-INT4 GPTQ g32 110.3MB", "all-int4", "gptq", ["--group-size", "32", "--max-size", "110.3MB"]),
]
LLAMA_TYPES = [("Q4_0", 2), ("Q4_K_M", 15), ("Q5_K_M", 17), ("Q8_0", 7)]  # llama_ftype values

LLAMA_QUANTIZE = r"""
import sys, llama_cpp
src, dst, ftype = sys.argv[1], sys.argv[2], int(sys.argv[3])
p = llama_cpp.llama_model_quantize_default_params()
p.ftype = ftype
p.nthread = 2
rc = llama_cpp.llama_model_quantize(src.encode(), dst.encode(), p)
sys.exit(rc)
"""


def run(cmd, **kw):
    print("+", " ".join(str(c) for c in cmd), file=sys.stderr, flush=True)
    return subprocess.run([str(c) for c in cmd], check=True, **kw)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frugal", default=str(ROOT / "build" / "frugal"))
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--ref", default=str(REF), help="the full-precision reference every file starts from and is "
                    "compared against (default: SmolLM2 Q4_1, dequantized; see bench/dither_reference.py)")
    ap.add_argument("--llama-python", default="", help="a Python with llama-cpp-python (skip llama.cpp when empty)")
    ap.add_argument("--calib-samples", type=int, default=32)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--max-tokens", type=int, default=2048, help="held-out text tokens scored by eval")
    ap.add_argument("--only", default="", help="comma-separated labels to run (default all)")
    ap.add_argument("--no-eval", action="store_true", help="only make the files")
    ap.add_argument("--probes-for", default="all",
                    help="labels whose numeric fidelity is measured (comma-separated; 'all' or 'none')")
    ap.add_argument("--max-new-tokens", type=int, default=48)
    a = ap.parse_args()
    ref = Path(a.ref)
    out = Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / "results.json"
    results = json.loads(results_path.read_text()) if results_path.exists() else {}
    only = {s.strip() for s in a.only.split(",") if s.strip()}

    def save():
        results_path.write_text(json.dumps(results, indent=1))

    f16 = out / "f16.gguf"
    if not f16.exists():
        run([a.frugal, "quantize", "-q", "-m", ref, "-o", f16, "--preset", "f16", "--method", "rtn", "--no-gate"])
    f16_bytes = f16.stat().st_size

    files = []  # (label, kind, path)
    for label, preset, method, *extra in FRUGAL_RUNS:
        if only and label not in only:
            continue
        path = out / (re.sub(r"[^A-Za-z0-9_.-]", "", label.replace(" ", "_").replace("+", "p")) + ".gguf")
        if not path.exists() or label not in results:
            args = [a.frugal, "quantize", "-q", "--json", "-m", ref, "-o", path, "--preset", preset, "--method", method,
                    "--no-gate"]  # every file is evaluated below
            args += extra[0] if extra else []
            if method != "rtn":
                args += ["--calib", CALIB, "--calib-samples", a.calib_samples, "--seq-len", a.seq_len]
            t0 = time.perf_counter()
            rep = json.loads(run(args, capture_output=True).stdout)
            results[label] = {"kind": "frugal", "preset": preset, "method": method,
                              "quantize_s": time.perf_counter() - t0, "bits_per_weight": rep["bits_per_weight"]}
            save()
        files.append((label, "frugal", path))
    if a.llama_python:
        for name, ftype in LLAMA_TYPES:
            label = "llama.cpp " + name
            if only and label not in only:
                continue
            path = out / f"llama_{name}.gguf"
            if not path.exists() or label not in results:
                t0 = time.perf_counter()
                run([a.llama_python, "-c", LLAMA_QUANTIZE, f16, path, ftype], capture_output=True)
                results[label] = {"kind": "llama.cpp", "type": name, "quantize_s": time.perf_counter() - t0}
                save()
            files.append((label, "llama.cpp", path))

    def eval_many(todo, extra):
        """`frugal eval` of several files against one reference run: one JSON line each."""
        if not todo:
            return []
        args = [a.frugal, "eval", "-q", "--ref", ref, "--text", TEXT, "--json", *extra]
        for _, _, path in todo:
            args += ["-m", path]
        lines = [l for l in run(args, capture_output=True).stdout.decode().splitlines() if l.strip()]
        assert len(lines) == len(todo), lines
        return [json.loads(l) for l in lines]

    if not a.no_eval:
        for label, kind, path in files:
            results[label]["file_mb"] = path.stat().st_size / 1e6
            results[label]["size_vs_f16"] = path.stat().st_size / f16_bytes
        todo = [f for f in files if "kld_mean" not in results[f[0]]]
        for (label, _, _), ev in zip(todo, eval_many(todo, ["--max-tokens", a.max_tokens])):
            r = results[label]
            for k in ("ppl_ref", "ppl", "kld_mean", "kld_p99", "top1_agreement", "tokens_scored"):
                r[k] = ev.get(k)
            r["ppl_delta_pct"] = 100 * (ev["ppl"] / ev["ppl_ref"] - 1)
        save()
        # Numeric fidelity: every probe answered greedily by both models (the slow part; the
        # reference answers once for all files).
        want = {s.strip() for s in a.probes_for.split(",")}
        todo = [f for f in files if results[f[0]].get("numeric_fidelity") is None and ("all" in want or f[0] in want)]
        for (label, _, _), ev in zip(todo, eval_many(todo, ["--max-tokens", "64", "--probes", PROBES,
                                                            "--max-new-tokens", a.max_new_tokens])):
            results[label]["numeric_fidelity"] = ev["numeric_fidelity"]
            results[label]["probes"] = ev.get("probes")
        save()
    results["_f16_mb"] = f16_bytes / 1e6
    results["_ref"] = str(ref)
    save()
    (out / "table.md").write_text(table(results))
    (out / "kld_vs_size.svg").write_text(plot(results))
    print(table(results))
    return 0


def table(results: dict) -> str:
    rows = ["| model | file MB | bits/weight | vs F16 | ppl (ref) | ppl Δ | KLD mean | KLD p99 | top-1 | numeric | quantize s |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for label, r in results.items():
        if label.startswith("_") or "kld_mean" not in r:
            continue
        bpw = r.get("bits_per_weight")
        num = r.get("numeric_fidelity")
        rows.append(
            f"| {label} | {r['file_mb']:.1f} | {bpw:.2f} | {100 * r['size_vs_f16']:.1f}% | {r['ppl']:.3f} ({r['ppl_ref']:.3f}) | "
            f"{r['ppl_delta_pct']:+.2f}% | {r['kld_mean']:.4f} | {r['kld_p99']:.3f} | {r['top1_agreement']:.3f} | "
            f"{'n/a' if num is None else f'{num:.3f}'} | {r['quantize_s']:.0f} |"
            if bpw is not None else
            f"| {label} | {r['file_mb']:.1f} | – | {100 * r['size_vs_f16']:.1f}% | {r['ppl']:.3f} ({r['ppl_ref']:.3f}) | "
            f"{r['ppl_delta_pct']:+.2f}% | {r['kld_mean']:.4f} | {r['kld_p99']:.3f} | {r['top1_agreement']:.3f} | "
            f"{'n/a' if num is None else f'{num:.3f}'} | {r['quantize_s']:.0f} |")
    return "\n".join(rows) + "\n"


def plot(results: dict) -> str:
    """KLD (log scale) against file size: Frugal's points and llama.cpp's curve."""
    pts = [(l, r) for l, r in results.items() if not l.startswith("_") and "kld_mean" in r]
    if not pts:
        return "<svg xmlns='http://www.w3.org/2000/svg'/>"
    w, h, ml, mr, mt, mb = 760, 440, 70, 200, 30, 50
    xs = [r["file_mb"] for _, r in pts]
    ks = [max(r["kld_mean"], 1e-5) for _, r in pts]
    x0, x1 = min(xs) * 0.9, max(xs) * 1.05
    y0, y1 = math.log10(min(ks)) - 0.2, math.log10(max(ks)) + 0.2
    X = lambda v: ml + (v - x0) / (x1 - x0) * (w - ml - mr)
    Y = lambda v: mt + (y1 - math.log10(max(v, 1e-5))) / (y1 - y0) * (h - mt - mb)
    s = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' font-family='sans-serif' font-size='12'>",
         f"<rect width='{w}' height='{h}' fill='white'/>",
         f"<line x1='{ml}' y1='{h - mb}' x2='{w - mr}' y2='{h - mb}' stroke='black'/>",
         f"<line x1='{ml}' y1='{mt}' x2='{ml}' y2='{h - mb}' stroke='black'/>",
         f"<text x='{(w - mr + ml) / 2}' y='{h - 12}' text-anchor='middle'>file size (MB)</text>",
         f"<text x='16' y='{(h - mb + mt) / 2}' transform='rotate(-90 16 {(h - mb + mt) / 2})' text-anchor='middle'>"
         "KL divergence to the reference (nats, log)</text>"]
    for e in range(math.floor(y0), math.ceil(y1) + 1):
        if y0 <= e <= y1:
            s.append(f"<text x='{ml - 6}' y='{Y(10 ** e) + 4}' text-anchor='end'>1e{e}</text>")
            s.append(f"<line x1='{ml}' y1='{Y(10 ** e)}' x2='{w - mr}' y2='{Y(10 ** e)}' stroke='#ddd'/>")
    step = 20 if x1 - x0 > 100 else 10
    v = math.ceil(x0 / step) * step
    while v <= x1:
        s.append(f"<text x='{X(v)}' y='{h - mb + 16}' text-anchor='middle'>{v:.0f}</text>")
        v += step
    for kind, color in (("llama.cpp", "#d62728"), ("frugal", "#1f77b4")):
        line = sorted([(r["file_mb"], r["kld_mean"]) for l, r in pts if r["kind"] == kind])
        if kind == "frugal":  # Frugal's best at each size: the lower envelope of its points
            best = []
            for x, k in line:
                if not best or k < best[-1][1]:
                    best.append((x, k))
            line = best
        if len(line) > 1:
            s.append(f"<polyline fill='none' stroke='{color}' stroke-width='2' points='" +
                     " ".join(f"{X(x):.1f},{Y(k):.1f}" for x, k in line) + "'/>")
    for l, r in pts:
        color = "#d62728" if r["kind"] == "llama.cpp" else "#1f77b4"
        cx, cy = X(r["file_mb"]), Y(r["kld_mean"])
        s.append(f"<circle cx='{cx:.1f}' cy='{cy:.1f}' r='5' fill='{color}'/>")
        s.append(f"<text x='{cx + 8:.1f}' y='{cy + 4:.1f}' fill='{color}'>{l}</text>")
    s.append(f"<text x='{w - mr + 10}' y='{mt + 10}' fill='#1f77b4'>● Frugal (line: best so far)</text>")
    s.append(f"<text x='{w - mr + 10}' y='{mt + 28}' fill='#d62728'>● llama.cpp (line)</text>")
    s.append("</svg>")
    return "\n".join(s)


if __name__ == "__main__":
    sys.exit(main())
