#!/usr/bin/env python3
"""Frugal against llama.cpp's own C++ `llama-bench`, side by side in one run, on the same GGUF
files, thread count, prompt and decode lengths.

    scripts/build-llama-cpp.sh llama-bench llama-quantize      # once; cached
    .venv/bin/python bench/compare_llama_cpp.py                 # SmolLM2-135M in six types
    .venv/bin/python bench/compare_llama_cpp.py --types Q4_K_M,Q6_K --rounds 5 --json /tmp/c.json
    .venv/bin/python bench/compare_llama_cpp.py --file my-mixed.gguf --types ""
    .venv/bin/python bench/compare_llama_cpp.py -t 2 --busy 1    # under one competing busy process

llama.cpp's tools are the ones scripts/build-llama-cpp.sh builds from the llama.cpp source the
llama-cpp-python sdist vendors (Release, GGML_NATIVE); the Python bindings are not used. Files of
other types are made from the source GGUF with `llama-quantize --allow-requantize` (cached under
models/requant/). Each round runs every file once in each engine, alternating, so machine noise
hits both alike: `llama-bench -p P -n N -r 1` against `frugal bench --reps 1` with the same P and
N, each timing its second pass (both run one untimed warm-up first: llama-bench by default,
`frugal bench` since 2026-12-05; before, Frugal's timed prefill was its first, which pays the
first touches of its buffers: Qwen2.5-1.5B Q5_K_M prefill 283 against 333 tok/s, Zen 5).
Frugal decodes after its prompt, llama-bench from an empty context: the same for a short prompt;
for a long one, --depth times llama.cpp's decode after P tokens too (`-d P`, a second call).
Reported: per file, the medians over rounds of each engine's prefill and decode tokens/s, and
the median of the per-round ratios Frugal / llama.cpp. The CPU (model name, family, AVX-512 or
not) and Frugal's kernel level are printed with the table.

--busy N runs N competing busy processes (each a Python `while True: pass`, one core's worth of
load) through all the rounds, so both engines are measured on cores they share with another
program: how decode degrades when the machine is not the server's alone (issue 26).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = ROOT / "models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_TYPES = "Q4_0,Q4_1,Q8_0,Q4_K_M,Q5_K_M,Q6_K"


def cpu_description() -> dict:
    info = {}
    for line in open("/proc/cpuinfo"):
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("model name", "cpu family", "model", "flags") and key not in info:
            info[key] = value.strip()
        if len(info) == 4:
            break
    flags = set(info.get("flags", "").split())
    level = "avx512vnni" if "avx512_vnni" in flags else "avx512bw" if "avx512bw" in flags else \
        "avx2" if "avx2" in flags else "scalar"
    family = int(info.get("cpu family", "0"))
    zen = {23: "Zen 2", 25: "Zen 3/4", 26: "Zen 5"}.get(family, "")
    return {"model_name": info.get("model name", "?"), "family": family, "zen": zen,
            "best_level": level, "cores": os.cpu_count()}


def llama_bin(tool: str) -> Path:
    out = subprocess.run([str(ROOT / "scripts/build-llama-cpp.sh"), "--print-bin", tool],
                         check=True, capture_output=True, text=True).stdout.strip()
    return Path(out) / tool


def requantized(source: Path, qtype: str, quantize: Path) -> Path:
    if source.stem.upper().endswith("." + qtype) or source.stem.upper().endswith(qtype):
        return source
    out = ROOT / "models/requant" / f"{source.stem.rsplit('.', 1)[0]}.{qtype}.gguf"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        print(f"making {out.name} with llama-quantize ...", file=sys.stderr)
        subprocess.run([str(quantize), "--allow-requantize", str(source), str(tmp), qtype],
                       check=True, capture_output=True)
        tmp.rename(out)
    return out


def run_llama_bench(bench: Path, model: Path, threads: int, p: int, n: int,
                    depth: bool = False) -> tuple[float, float]:
    """llama-bench's prefill of p tokens and decode of n; with depth, the decode runs after p
    tokens already in the context (`-d p`, a second call), as `frugal bench`'s decode does."""
    def tests(*args: str) -> list[dict]:
        out = subprocess.run([str(bench), "-m", str(model), "-t", str(threads), *args,
                              "-r", "1", "-o", "json"],
                             check=True, capture_output=True, text=True).stdout
        return json.loads(out)

    runs = (tests("-p", str(p), "-n", "0") + tests("-p", "0", "-n", str(n), "-d", str(p))
            if depth else tests("-p", str(p), "-n", str(n)))
    prefill = decode = float("nan")
    for test in runs:
        if test.get("n_prompt", 0) > 0 and test.get("n_gen", 0) == 0:
            prefill = float(test["avg_ts"])
        elif test.get("n_gen", 0) > 0 and test.get("n_prompt", 0) == 0:
            decode = float(test["avg_ts"])
    return prefill, decode


def run_frugal(frugal: str, model: Path, threads: int, p: int, n: int) -> dict:
    out = subprocess.run([frugal, "bench", "-m", str(model), "--json", "--reps", "1",
                          "-t", str(threads), "--prompt-tokens", str(p), "--decode-tokens", str(n)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


@contextlib.contextmanager
def busy_processes(n: int) -> Iterator[None]:
    """n processes that each keep one core busy, for the duration of the block."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
             for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--source", default=str(DEFAULT_SOURCE),
                    help="the GGUF the other types are made from (default: SmolLM2-135M Q4_1)")
    ap.add_argument("--types", default=DEFAULT_TYPES,
                    help=f"llama-quantize types to compare (default {DEFAULT_TYPES}); '' for none")
    ap.add_argument("--file", action="append", default=[],
                    help="another GGUF to compare as it is (repeatable), e.g. Frugal's mixed file")
    ap.add_argument("--frugal", default=os.environ.get("FRUGAL_BIN", str(ROOT / "build/frugal")))
    ap.add_argument("-t", "--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("-p", "--prompt-tokens", type=int, default=128)
    ap.add_argument("-n", "--decode-tokens", type=int, default=32)
    ap.add_argument("--depth", action="store_true",
                    help="time llama.cpp's decode after the prompt's tokens (llama-bench -d P), "
                         "as Frugal's decode runs; by default llama-bench decodes from an empty "
                         "context (for long prompts: -p 2048 -n 16 --depth)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--busy", type=int, default=0, metavar="N",
                    help="run N competing busy processes (one core each) through every round")
    ap.add_argument("--mixed", action="store_true",
                    help="add Frugal's mixed files, made from the source by `frugal quantize "
                         "--method rtn` (speed does not depend on calibration): the default preset "
                         "in Frugal's formats (Frugal only, llama.cpp has no reader for them; its "
                         "ratios against llama.cpp's Q4_K_M of the same round, the nearest size), "
                         "and the same preset with --target llama.cpp (both engines)")
    ap.add_argument("--json", default="", help="write every round's figures here")
    a = ap.parse_args()
    if a.busy < 0:
        ap.error("--busy must be 0 or more")

    bench = llama_bin("llama-bench")
    files: list[Path] = []
    types = [t.strip().upper() for t in a.types.split(",") if t.strip()]
    if types:
        quantize = llama_bin("llama-quantize")
        files += [requantized(Path(a.source), t, quantize) for t in types]
    files += [Path(f) for f in a.file]
    frugal_only: dict[str, Path] = {}  # Frugal's own file -> the llama.cpp file it is held against
    if a.mixed:
        stem = Path(a.source).stem.rsplit(".", 1)[0]
        for target in ("frugal", "llama.cpp"):
            out = ROOT / "models/requant" / f"{stem}.frugal-mixed{'-llamacpp' if target != 'frugal' else ''}.gguf"
            if not out.exists():
                out.parent.mkdir(parents=True, exist_ok=True)
                print(f"making {out.name} with frugal quantize ...", file=sys.stderr)
                subprocess.run([a.frugal, "quantize", "-q", "-m", a.source, "-o", str(out),
                                "--method", "rtn", "--target", target, "--no-gate"], check=True)
            if target == "frugal":
                k_m = [f for f in files if f.stem.upper().endswith("Q4_K_M")]
                if not k_m:
                    ap.error("--mixed compares Frugal's own file with llama.cpp's Q4_K_M: keep Q4_K_M in --types")
                frugal_only[str(out)] = k_m[0]
            files.append(out)
    if not files:
        print("nothing to compare: give --types or --file", file=sys.stderr)
        return 2

    cpu = cpu_description()
    rows = {str(f): {"llama_prefill": [], "llama_decode": [], "frugal_prefill": [],
                     "frugal_decode": [], "prefill_ratio": [], "decode_ratio": []} for f in files}
    load = (f"under {a.busy} competing busy process{'es' if a.busy > 1 else ''} "
            f"(Python busy loops)" if a.busy else "no competing load")
    with busy_processes(a.busy):
        for r in range(a.rounds):
            llama_of: dict[str, tuple[float, float]] = {}
            for f in files:
                if str(f) in frugal_only:
                    lp, ld = llama_of[str(frugal_only[str(f)])]  # measured earlier this round
                else:
                    lp, ld = run_llama_bench(bench, f, a.threads, a.prompt_tokens, a.decode_tokens,
                                             a.depth)
                    llama_of[str(f)] = (lp, ld)
                fr = run_frugal(a.frugal, f, a.threads, a.prompt_tokens, a.decode_tokens)
                fp, fd = fr["prefill_tokens_per_s"], fr["decode_tokens_per_s"]
                row = rows[str(f)]
                for k, v in (("llama_prefill", lp), ("llama_decode", ld), ("frugal_prefill", fp),
                             ("frugal_decode", fd), ("prefill_ratio", fp / lp),
                             ("decode_ratio", fd / ld)):
                    row[k].append(v)
                print(f"round {r + 1}/{a.rounds} {f.name}: llama.cpp {lp:.0f}/{ld:.0f}, "
                      f"Frugal {fp:.0f}/{fd:.0f} tok/s (prefill/decode)", file=sys.stderr)

    med = lambda xs: statistics.median(xs)  # noqa: E731
    print(f"CPU: {cpu['model_name']} (family {cpu['family']}{', ' + cpu['zen'] if cpu['zen'] else ''}"
          f"), {cpu['cores']} cores, best kernel level {cpu['best_level']}"
          f"{' (FRUGAL_CPU=' + os.environ['FRUGAL_CPU'] + ')' if os.environ.get('FRUGAL_CPU') else ''}; "
          f"-t {a.threads} -p {a.prompt_tokens} -n {a.decode_tokens}"
          f"{' (llama.cpp decode at depth -d ' + str(a.prompt_tokens) + ')' if a.depth else ''}, medians of {a.rounds} "
          f"interleaved rounds, {load}\n")
    print("| file | llama.cpp decode | Frugal decode | ratio | llama.cpp prefill | Frugal prefill "
          "| ratio |\n|---|---:|---:|---:|---:|---:|---:|")
    for f in files:
        row = rows[str(f)]
        name = f.name + (f" (Frugal only; llama.cpp: {frugal_only[str(f)].name})"
                         if str(f) in frugal_only else "")
        print(f"| {name} | {med(row['llama_decode']):.1f} | {med(row['frugal_decode']):.1f} | "
              f"{med(row['decode_ratio']):.2f}x | {med(row['llama_prefill']):.1f} | "
              f"{med(row['frugal_prefill']):.1f} | {med(row['prefill_ratio']):.2f}x |")
    if a.json:
        Path(a.json).write_text(json.dumps({"cpu": cpu, "args": vars(a), "load": load, "rows": rows},
                                           indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
