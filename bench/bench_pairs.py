#!/usr/bin/env python3
"""`frugal bench` of two builds or settings side by side, interleaved, with medians and ratios.

    python3 bench/bench_pairs.py -m models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf \
        --side avx2 'FRUGAL_CPU=avx2 build/frugal' --side avx512vnni build/frugal --pairs 10

Each side is a label and a command (leading VAR=VALUE words are environment variables; words
after a `--` are flags for `frugal bench` itself, e.g. 'build/frugal -- --kv-type f32'). Every
pair runs both sides once, `frugal bench --json --reps R` each, in alternating order so that a
drift of the shared machine hits both alike. Prints, per metric, each side's median over the
pairs and the median, min and max of the per-pair ratios (second side / first): timings on a
shared machine are noisy, ratios measured side by side much less so.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys

METRICS = ["prefill_tokens_per_s", "decode_tokens_per_s", "batch8_decode_tokens_per_s",
           "batch8_speedup", "weight_read_gbps", "memory_read_gbps", "roofline_fraction"]


def run_side(cmd: str, model: str, reps: int) -> dict:
    words = shlex.split(cmd)
    flags = []
    if "--" in words:
        cut = words.index("--")
        words, flags = words[:cut], words[cut + 1:]
    env = dict(os.environ)
    while words and "=" in words[0] and not words[0].startswith(("/", ".")):
        k, v = words.pop(0).split("=", 1)
        env[k] = v
    out = subprocess.run([*words, "bench", "-m", model, "--json", "--reps", str(reps), *flags],
                         env=env,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--side", nargs=2, action="append", metavar=("LABEL", "COMMAND"), required=True)
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    if len(a.side) != 2:
        sys.exit("bench_pairs.py: give exactly two --side LABEL COMMAND")
    (la, ca), (lb, cb) = a.side
    runs = {la: [], lb: []}
    for i in range(a.pairs):
        order = [(la, ca), (lb, cb)] if i % 2 == 0 else [(lb, cb), (la, ca)]
        for label, cmd in order:
            runs[label].append(run_side(cmd, a.model, a.reps))
        print(f"pair {i + 1}/{a.pairs} done", file=sys.stderr)
    print(f"| metric ({a.pairs} pairs, --reps {a.reps}) | {la} median | {lb} median | ratio median (min-max) |")
    print("|---|---:|---:|---|")
    for k in METRICS:
        ratios = [b[k] / x[k] for x, b in zip(runs[la], runs[lb])]
        print(f"| {k} | {statistics.median(r[k] for r in runs[la]):.3f} | "
              f"{statistics.median(r[k] for r in runs[lb]):.3f} | "
              f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
