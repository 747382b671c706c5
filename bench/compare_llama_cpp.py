#!/usr/bin/env python3
"""Frugal vs llama.cpp, side by side in one run, on the same GGUF, prompt and thread count.

    pip install llama-cpp-python        # builds llama.cpp from source (several minutes)
    python3 bench/compare_llama_cpp.py -m models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf

Both engines get the same prompt token ids ((i * 7919 + 13) % vocab, as `frugal bench` uses),
prefill them in one batch, then decode greedily. The two are interleaved rep by rep so machine
noise hits both alike; medians are reported, with the ratio Frugal / llama.cpp.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def time_llama_cpp(llm, vocab: int, prompt_tokens: int, decode_tokens: int) -> tuple[float, float]:
    import numpy as np

    prompt = [(i * 7919 + 13) % vocab for i in range(prompt_tokens)]
    llm.reset()
    t0 = time.perf_counter()
    llm.eval(prompt)
    t1 = time.perf_counter()
    for _ in range(decode_tokens):
        nxt = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        llm.eval([nxt])
    t2 = time.perf_counter()
    return prompt_tokens / (t1 - t0), decode_tokens / (t2 - t1)


def time_frugal(frugal: str, model: str, threads: int, prompt_tokens: int, decode_tokens: int,
                activations: str) -> dict:
    out = subprocess.run([frugal, "bench", "-m", model, "--json", "--reps", "1", "-t", str(threads),
                          "--prompt-tokens", str(prompt_tokens), "--decode-tokens", str(decode_tokens),
                          "--activations", activations],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", required=True)
    ap.add_argument("--frugal", default=os.environ.get("FRUGAL_BIN", "build/frugal"))
    ap.add_argument("-t", "--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--decode-tokens", type=int, default=32)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--activations", choices=["f32", "int8"], default="int8",
                    help="Frugal's matmul activations (llama.cpp always uses int8 for these types)")
    args = ap.parse_args()
    try:
        from llama_cpp import Llama
        import llama_cpp
    except ImportError:
        print("llama-cpp-python is not installed: pip install llama-cpp-python", file=sys.stderr)
        return 2
    llm = Llama(model_path=args.model, n_ctx=args.prompt_tokens + args.decode_tokens + 8,
                n_batch=args.prompt_tokens + args.decode_tokens + 8, n_threads=args.threads, n_threads_batch=args.threads,
                verbose=False)
    vocab = llm.n_vocab()
    rows = {"frugal_prefill": [], "frugal_decode": [], "llama_prefill": [], "llama_decode": []}
    for rep in range(args.reps):
        f = time_frugal(args.frugal, args.model, args.threads, args.prompt_tokens, args.decode_tokens,
                        args.activations)
        rows["frugal_prefill"].append(f["prefill_tokens_per_s"])
        rows["frugal_decode"].append(f["decode_tokens_per_s"])
        lp, ld = time_llama_cpp(llm, vocab, args.prompt_tokens, args.decode_tokens)
        rows["llama_prefill"].append(lp)
        rows["llama_decode"].append(ld)
        print(f"rep {rep + 1}/{args.reps}: frugal {f['prefill_tokens_per_s']:.1f}/{f['decode_tokens_per_s']:.1f}"
              f"  llama.cpp {lp:.1f}/{ld:.1f} tok/s (prefill/decode)", file=sys.stderr)
    med = {k: statistics.median(v) for k, v in rows.items()}
    result = {
        "model": args.model, "threads": args.threads, "prompt_tokens": args.prompt_tokens,
        "decode_tokens": args.decode_tokens, "reps": args.reps, "frugal_activations": args.activations,
        "llama_cpp_python": llama_cpp.__version__, **med,
        "prefill_ratio": med["frugal_prefill"] / med["llama_prefill"],
        "decode_ratio": med["frugal_decode"] / med["llama_decode"],
    }
    print("| engine | prefill tok/s | decode tok/s |\n|---|---|---|")
    print(f"| Frugal (--activations {args.activations}) | {med['frugal_prefill']:.1f} | {med['frugal_decode']:.1f} |")
    print(f"| llama.cpp ({llama_cpp.__version__}) | {med['llama_prefill']:.1f} | {med['llama_decode']:.1f} |")
    print(f"| ratio Frugal / llama.cpp | {result['prefill_ratio']:.2f}x | {result['decode_ratio']:.2f}x |")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
