#!/usr/bin/env python3
"""`frugal serve` vs llama.cpp's server (llama-cpp-python), same GGUF, same threads, same load.

    python3 -m venv /tmp/llvenv
    /tmp/llvenv/bin/pip install 'llama-cpp-python[server]'      # builds llama.cpp (minutes)
    python3 bench/compare_servers.py --llama-python /tmp/llvenv/bin/python --json cmp.json

The two servers run one after the other, never together (they would share the cores): each is
started on a free 127.0.0.1 port, loaded with bench/serve_load.py (streaming chat completions,
temperature 0, closed loop) at each concurrency level, then stopped. A markdown table of output
tokens/s and time to first token, with the ratio Frugal / llama.cpp, goes to stdout; the full
reports to --json.

llama-cpp-python's server runs one request at a time (one Llama object behind a lock): at
concurrency C the other C-1 requests wait, so its TTFT grows with C while its tok/s stays at
single-stream speed. It is started with `--interrupt_requests False`: by default a newly
arrived request cuts the stream in progress short, which would corrupt the comparison.

A manual benchmark: not part of CI.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import serve_load  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = ROOT / "models" / "smollm2-135m-instruct" / "SmolLM2-135M-Instruct.Q4_1.gguf"
LISTEN_RE = re.compile(r"^frugal serve: listening on http://([0-9.]+):([0-9]+)\s*$")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, name: str, cmd: list[str], log_path: Path):
        self.name, self.cmd, self.log_path = name, cmd, log_path
        self.proc: subprocess.Popen | None = None
        self.url: str | None = None

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-3000:]
        except OSError:
            return ""


def start_frugal(binary: str, model: str, threads: int, ctx: int, extra: list[str],
                 logdir: Path, timeout: float = 120) -> Server:
    cmd = [binary, "serve", "-m", model, "--host", "127.0.0.1", "--port", "0",
           "--threads", str(threads), "--ctx", str(ctx), *extra]
    srv = Server("frugal", cmd, logdir / "frugal.log")
    log = open(srv.log_path, "w")
    srv.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=log, text=True, bufsize=1)
    found = threading.Event()

    def read():
        for line in srv.proc.stdout:
            m = LISTEN_RE.match(line)
            if m and not found.is_set():
                srv.url = f"http://{m.group(1)}:{m.group(2)}"
                found.set()
            log.write(line)
            log.flush()

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + timeout
    while not found.wait(0.1):
        if srv.proc.poll() is not None or time.monotonic() > deadline:
            srv.stop()
            raise RuntimeError(f"{' '.join(cmd)} did not start:\n{srv.log_tail()}")
    return srv


def start_llama(python: str, model: str, threads: int, ctx: int, logdir: Path,
                timeout: float = 180) -> Server:
    port = free_port()
    cmd = [python, "-m", "llama_cpp.server", "--model", model, "--n_threads", str(threads),
           "--n_threads_batch", str(threads), "--n_ctx", str(ctx), "--host", "127.0.0.1",
           "--port", str(port), "--interrupt_requests", "False"]
    srv = Server("llama.cpp", cmd, logdir / "llama.log")
    log = open(srv.log_path, "w")
    srv.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT)
    srv.url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while True:
        if srv.proc.poll() is not None:
            raise RuntimeError(f"{' '.join(cmd)} exited {srv.proc.returncode}:\n{srv.log_tail()}")
        try:
            if httpx.get(srv.url + "/v1/models", timeout=2).status_code == 200:
                return srv
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            srv.stop()
            raise RuntimeError(f"{' '.join(cmd)} not ready in {timeout} s:\n{srv.log_tail()}")
        time.sleep(0.5)


def llama_cpp_version(python: str) -> str:
    try:
        return subprocess.run([python, "-c", "import llama_cpp; print(llama_cpp.__version__)"],
                              capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def git_describe() -> str:
    try:
        rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True).stdout
        return rev + ("-dirty" if dirty.strip() else "")
    except OSError:
        return "?"


def cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def ms(s) -> str:
    return "-" if s is None else f"{s * 1000:.0f} ms"


def markdown(reports: dict, levels: list[int]) -> str:
    rows = ["| server | concurrency | output tok/s | TTFT p50 | TTFT p95 | E2E p50 | errors "
            "| tokens from | tok/s ratio frugal/llama.cpp |",
            "|---|---:|---:|---:|---:|---:|---:|---|---:|"]
    by = {name: {s["concurrency"]: s for s in rep["levels"]} for name, rep in reports.items()}
    for c in levels:
        f = by.get("frugal", {}).get(c)
        ll = by.get("llama.cpp", {}).get(c)
        ratio = (f"{f['output_tok_per_s'] / ll['output_tok_per_s']:.2f}x"
                 if f and ll and ll["output_tok_per_s"] > 0 else "-")
        for name, s in (("frugal", f), ("llama.cpp", ll)):
            if s is None:
                continue
            rows.append(f"| {name} | {c} | {s['output_tok_per_s']:.1f} | {ms(s['ttft_p50_s'])} | "
                        f"{ms(s['ttft_p95_s'])} | {ms(s['e2e_p50_s'])} | {s['errors']} | "
                        f"{s['token_count_source']} | {ratio if name == 'frugal' else ''} |")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", default=str(DEFAULT_MODEL))
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=2048)
    ap.add_argument("--frugal", default=os.environ.get("FRUGAL_BIN", str(ROOT / "build/frugal")))
    ap.add_argument("--frugal-arg", action="append", default=[],
                    help="extra argument for `frugal serve` (repeatable), e.g. --frugal-arg=--max-batch=16")
    ap.add_argument("--llama-python", default="/tmp/llvenv/bin/python",
                    help="a Python with llama-cpp-python[server] installed")
    ap.add_argument("--skip-llama", action="store_true")
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--requests-per-level", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--prompt-file")
    ap.add_argument("--json", help="write both reports and the settings here")
    args = ap.parse_args()
    levels = [int(x) for x in args.concurrency.split(",") if x.strip()]
    prompts = serve_load.read_prompts(args.prompt_file) if args.prompt_file else None
    logdir = Path(tempfile.mkdtemp(prefix="compare_servers_"))

    starters = [("frugal", lambda: start_frugal(args.frugal, args.model, args.threads, args.ctx,
                                                args.frugal_arg, logdir))]
    if not args.skip_llama:
        starters.append(("llama.cpp", lambda: start_llama(args.llama_python, args.model,
                                                          args.threads, args.ctx, logdir)))
    reports, commands = {}, {}
    for name, start in starters:
        print(f"{name}: starting", file=sys.stderr, flush=True)
        srv = start()
        commands[name] = " ".join(srv.cmd)
        try:
            print(f"{name}: {srv.url}; load {levels}", file=sys.stderr, flush=True)
            reports[name] = serve_load.run_load(srv.url, levels, args.requests_per_level,
                                                args.max_tokens, prompts, repeats=args.repeats)
        finally:
            srv.stop()
        print(f"{name}: stopped (log {srv.log_path})", file=sys.stderr, flush=True)

    notes = [
        f"model {args.model}, {args.threads} threads, context {args.ctx}, on {cpu_name()} "
        f"({os.cpu_count()} logical CPUs); servers run one after the other.",
        f"load: streaming chat completions, temperature 0, max_tokens {args.max_tokens}, "
        f"{args.requests_per_level} requests per level, closed loop; {args.repeats} run(s) per "
        "level, medians.",
        "output tok/s = output tokens / wall time of the level; 'tokens from' says whether "
        "they were counted from the usage chunk or as content chunks.",
        "llama.cpp (llama-cpp-python server) handles one request at a time: concurrent requests "
        "wait on its lock (run with --interrupt_requests False so that waiting requests do not "
        "cut the running stream short).",
    ]
    result = {"frugal_commit": git_describe(),
              "llama_cpp_python": None if args.skip_llama else llama_cpp_version(args.llama_python),
              "model": args.model, "threads": args.threads, "ctx": args.ctx,
              "levels": levels, "max_tokens": args.max_tokens,
              "requests_per_level": args.requests_per_level, "repeats": args.repeats,
              "commands": commands, "notes": notes, "reports": reports}
    print(markdown(reports, levels))
    print()
    for n in notes:
        print(f"- {n}")
    print(f"- frugal {result['frugal_commit']}; llama-cpp-python {result['llama_cpp_python']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
