#!/usr/bin/env python3
"""Frugal's calibrated quantization written for stock llama.cpp (`frugal quantize --target
llama.cpp`) against llama.cpp's own `llama-quantize` with an importance matrix made from the same
calibration text, judged by llama.cpp's own `llama-perplexity --kl-divergence` against the same
reference logits (issue 27). Every file has the same GGUF type per tensor (so the same size):

  Q4_0 row   every block matrix Q4_0, token_embd Q8_0 (Frugal: int4_sym g32; llama-quantize
             Q4_0 --pure --token-embedding-type q8_0)
  mixed row  attention Q8_0, FFN Q4_1, token_embd Q8_0 (Frugal's mixed preset at g32;
             llama-quantize Q4_1 --pure with attn_*=q8_0 and --token-embedding-type q8_0)
  Q4_K_M row llama-quantize's own Q4_K_M mix (Q4_K / Q6_K, with its fallbacks Q5_0 / Q8_0 where
             rows do not divide into 256); Frugal gets a recipe with one rule per tensor naming
             the type llama-quantize chose (q4_k, q6_k, q5_0, ..., on Frugal's own grids)

    scripts/build-llama-cpp.sh llama-quantize llama-imatrix llama-perplexity   # once; cached
    .venv/bin/python bench/dither_reference.py --frugal build/frugal \
        -m models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf -o /tmp/kld/ref.gguf
    .venv/bin/python bench/llamacpp_target_kld.py --ref /tmp/kld/ref.gguf --out-dir /tmp/kld

The reference is an F16 model off every quantization grid (bench/dither_reference.py: the
shipped SmolLM2 is Q4_1, whose own grid would favour Q4_1). Calibration: tests/data/calib_cs.jsonl
(Frugal reads it as chat; llama-imatrix reads the same prompts and answers as plain text).
Frugal takes --calib-samples windows of 256 tokens of it (default 32; every window, as
`frugal quantize` does by default, takes an hour a method here), llama-imatrix all of it.
Evaluation: tests/data/heldout_cs.txt, which neither side calibrates on. Files already in
--out-dir are reused. Prints a Markdown table and writes results.json.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CALIB = ROOT / "tests" / "data" / "calib_cs.jsonl"
TEXT = ROOT / "tests" / "data" / "heldout_cs.txt"
ATTN = ["attn_q", "attn_k", "attn_v", "attn_output"]

RECIPES = {
    "Q4_0": ('name: q4_0\nrules:\n  - {match: "blk.*.weight", type: int4_sym, group_size: 32}\n'
             '  - {match: "*.weight", type: int8, group_size: 32}\n'),
    "mixed": None,  # the mixed-int4-int8 preset, groups of 32
    "Q4_K_M": "from llama-quantize's file",  # recipe_like() below
}

# GGUF type -> Frugal recipe type (with --target llama.cpp each is written as that GGUF type).
RECIPE_TYPE = {"Q4_K": "q4_k", "Q5_K": "q5_k", "Q6_K": "q6_k", "Q5_0": "q5_0", "Q5_1": "q5_1",
               "Q8_0": "int8, group_size: 32", "Q4_0": "int4_sym, group_size: 32",
               "Q4_1": "int4, group_size: 32", "F16": "f16", "F32": "f32"}


def recipe_like(gguf_file: Path) -> str:
    """A recipe with one rule per 2-D tensor: the type llama-quantize gave it."""
    import gguf  # noqa: PLC0415 (only this row needs it)
    rules = []
    for t in gguf.GGUFReader(gguf_file).tensors:
        if len(t.shape) < 2:
            continue
        rules.append(f'  - {{match: "{t.name}", type: {RECIPE_TYPE[t.tensor_type.name]}}}')
    return "name: like-" + gguf_file.stem + "\nrules:\n" + "\n".join(rules) + "\n"


def llama_bin(tool: str) -> str:
    out = subprocess.run([str(ROOT / "scripts/build-llama-cpp.sh"), "--print-bin", tool],
                         check=True, capture_output=True, text=True).stdout.strip()
    return str(Path(out) / tool)


def run(cmd, log: Path) -> str:
    print("$", " ".join(str(c) for c in cmd), file=sys.stderr)
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    log.write_text(p.stdout + p.stderr)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): see {log}")
    return p.stdout + p.stderr


def kld(perplexity: str, model: Path, base: Path, ctx: int, out: Path) -> dict:
    text = run([perplexity, "-m", model, "-f", TEXT, "-c", ctx, "-t", "2",
                "--kl-divergence-base", base, "--kl-divergence"], out)
    def grab(pattern):
        m = re.search(pattern, text)
        return float(m.group(1)) if m else float("nan")
    return {"ppl": grab(r"Mean PPL\(Q\)\s*:\s*([0-9.]+)"),
            "kld": grab(r"Mean\s+KLD:\s*([0-9.]+)"),
            "kld_p99": grab(r"99\.0%\s*KLD:\s*([0-9.]+)"),
            "same_top": grab(r"Same top p:\s*([0-9.]+)"),
            "mb": model.stat().st_size / 1e6}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", required=True, help="the F16 reference (bench/dither_reference.py)")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--frugal", default=str(ROOT / "build" / "frugal"))
    ap.add_argument("--methods", default="gptq,awq+gptq", help="Frugal's methods to compare")
    ap.add_argument("-c", "--ctx", type=int, default=512, help="llama-perplexity context")
    ap.add_argument("--rows", default=",".join(RECIPES), help="which rows: " + ", ".join(RECIPES))
    ap.add_argument("--calib-samples", type=int, default=32,
                    help="Frugal's calibration windows of 256 tokens (0 = all)")
    a = ap.parse_args()
    out = Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ref = Path(a.ref)
    quantize, imatrix, perplexity = (llama_bin(t) for t in
                                     ("llama-quantize", "llama-imatrix", "llama-perplexity"))

    base = out / "ref.kld"
    if not base.exists():
        run([perplexity, "-m", ref, "-f", TEXT, "-c", a.ctx, "-t", "2",
             "--kl-divergence-base", base], out / "ref.log")
    calib_txt = out / "calib.txt"
    with open(CALIB) as f, open(calib_txt, "w") as g:
        for line in f:
            item = json.loads(line)
            g.write(item.get("text") or f"{item.get('prompt', '')}\n{item.get('answer', '')}")
            g.write("\n\n")
    imat = out / "imatrix.gguf"
    if not imat.exists():
        run([imatrix, "-m", ref, "-f", calib_txt, "-o", imat, "-c", "256", "-t", "2"],
            out / "imatrix.log")

    files = {}
    for row in a.rows.split(","):
        recipe = RECIPES[row]
        lc = out / f"llamacpp-{row}.gguf"
        if not lc.exists() and row == "Q4_K_M":
            run([quantize, "--imatrix", imat, ref, lc, "Q4_K_M"], out / f"{lc.stem}.log")
        elif not lc.exists():
            base_type = "Q4_0" if row == "Q4_0" else "Q4_1"
            extra = [] if row == "Q4_0" else [x for t in ATTN for x in ("--tensor-type", f"{t}=q8_0")]
            run([quantize, "--imatrix", imat, "--pure", "--token-embedding-type", "q8_0",
                 "--output-tensor-type", "q8_0", *extra, ref, lc, base_type], out / f"{lc.stem}.log")
        if row == "Q4_K_M":
            recipe = recipe_like(lc)
        files[f"{row}: llama-quantize + imatrix"] = lc
        for method in a.methods.split(","):
            calib = "" if a.calib_samples == 32 else (
                "-calib-all" if a.calib_samples == 0 else f"-calib{a.calib_samples}")
            fq = out / f"frugal-{row}-{method.replace('+', '-')}{calib}.gguf"
            if not fq.exists():
                args = ["--preset", "mixed-int4-int8"]
                if recipe is not None:
                    rf = out / f"{row}.yaml"
                    rf.write_text(recipe)
                    args = ["--recipe", rf]
                run([a.frugal, "quantize", "-q", "-m", ref, "-o", fq, "--target", "llama.cpp",
                     "--method", method, "--calib", CALIB, "--calib-samples", a.calib_samples,
                     "--no-gate", *args], out / f"{fq.stem}.log")
            windows = "every window" if a.calib_samples == 0 else f"{a.calib_samples} windows"
            files[f"{row}: Frugal {method} ({windows} of 256 tokens)"] = fq

    results = {name: kld(perplexity, path, base, a.ctx, out / f"{path.stem}.kld.log")
               for name, path in files.items()}
    (out / "results.json").write_text(json.dumps(results, indent=1))
    print("| file | MB | PPL | KLD mean | KLD p99 | same top-1 % |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | {r['mb']:.1f} | {r['ppl']:.3f} | {r['kld']:.4f} | {r['kld_p99']:.4f} | "
              f"{r['same_top']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
