#!/usr/bin/env python3
"""F16 against F32 KV cache on held-out text: perplexity both ways, KL divergence, top-1.

Scores the text exactly as `frugal perplexity` does (non-overlapping chunks, the second half of
each scored), but from `frugal logits` of each chunk run with `--kv-type f32` and
`--kv-type f16`, so the two runs' distributions can be compared position by position:

  - perplexity of each (equal to `frugal perplexity`'s: same forward pass, same positions);
  - KL(P_f32 || P_f16) per scored position: mean, p99, max; top-1 agreement;
  - noise: the standard error of each perplexity from the chunk-to-chunk spread of the chunks'
    mean NLL (what the text sample can resolve), and the paired per-chunk NLL difference
    f16 - f32 with its standard error.

    .venv/bin/python bench/kv_type_quality.py -m models/smollm2-135m-instruct/...gguf \
        -f models/text/alice-wonderland-ch1-3.txt -t 2 [--max-tokens 4096] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import tempfile
from pathlib import Path

import numpy as np


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("-f", "--file", required=True)
    ap.add_argument("--frugal", default="build/frugal")
    ap.add_argument("-t", "--threads", default="2")
    ap.add_argument("--chunk", type=int, default=512)
    ap.add_argument("--max-tokens", type=int, default=0, help="0 = the whole text")
    ap.add_argument("--activations", default="int8", help="as served (default) or f32")
    ap.add_argument("--json", help="write the summary here too")
    a = ap.parse_args()

    text = Path(a.file).read_text()
    out = subprocess.run([a.frugal, "tokenize", "-m", a.model, "--no-special", text],
                         check=True, capture_output=True, text=True).stdout
    ids = json.loads(out.strip().splitlines()[0])
    if a.max_tokens > 0:
        ids = ids[:a.max_tokens]
    n_chunks = len(ids) // a.chunk
    kinds = ("f32", "f16")
    chunk_nll = {k: [] for k in kinds}
    kld, top1 = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for c in range(n_chunks):
            part = ids[c * a.chunk:(c + 1) * a.chunk]
            lp = {}
            for k in kinds:
                path = Path(tmp) / f"{k}.f32"
                subprocess.run([a.frugal, "logits", "-m", a.model, "-t", a.threads,
                                "--activations", a.activations, "--kv-type", k,
                                "--tokens", ",".join(map(str, part)), "-o", str(path)],
                               check=True)
                raw = np.fromfile(path, dtype="<f4").reshape(a.chunk, -1)
                lp[k] = log_softmax(raw[a.chunk // 2:a.chunk - 1])
                targets = np.array(part[a.chunk // 2 + 1:a.chunk])
                chunk_nll[k].append(-lp[k][np.arange(len(targets)), targets].mean())
            p32 = np.exp(lp["f32"])
            kld.extend((p32 * (lp["f32"] - lp["f16"])).sum(axis=-1).tolist())
            top1.extend((lp["f32"].argmax(-1) == lp["f16"].argmax(-1)).tolist())
            print(f"chunk {c + 1}/{n_chunks}: nll f32 {chunk_nll['f32'][-1]:.5f} "
                  f"f16 {chunk_nll['f16'][-1]:.5f}", flush=True)
    res = {"model": a.model, "chunks": n_chunks, "chunk": a.chunk,
           "tokens_scored": len(kld), "activations": a.activations, "threads": a.threads}
    for k in kinds:
        nll = np.array(chunk_nll[k])
        ppl = math.exp(nll.mean())  # chunks score equally many tokens
        res[f"ppl_{k}"] = ppl
        # Standard error of the perplexity from the chunk-to-chunk spread (delta method).
        res[f"ppl_{k}_se"] = ppl * nll.std(ddof=1) / math.sqrt(len(nll))
    d = np.array(chunk_nll["f16"]) - np.array(chunk_nll["f32"])
    res["ppl_diff"] = res["ppl_f16"] - res["ppl_f32"]
    res["paired_nll_diff_mean"] = float(d.mean())
    res["paired_nll_diff_se"] = float(d.std(ddof=1) / math.sqrt(len(d)))
    k = np.array(kld)
    res["kld_mean"] = float(k.mean())
    res["kld_p99"] = float(np.percentile(k, 99))
    res["kld_max"] = float(k.max())
    res["top1_agreement"] = float(np.mean(top1))
    print(json.dumps(res, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
