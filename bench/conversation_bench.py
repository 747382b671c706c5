#!/usr/bin/env python3
"""The workload Frugal exists for, against llama.cpp's own `llama-server`: a customer-service
bot whose every request carries a long store-policy system prompt and, from the second turn on,
the conversation so far (issue 46).

    scripts/build-llama-cpp.sh llama-server                      # once; cached
    .venv/bin/python bench/conversation_bench.py                 # SmolLM2-135M Q4_1
    .venv/bin/python bench/conversation_bench.py -m models/qwen2.5-coder-1.5b-instruct/Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf \\
        --rounds 2 --json /tmp/conv.json

Each server runs alone on the machine (never two at once), with the same GGUF file and thread
count: `frugal serve -t T` (prefix cache on, the default), `frugal serve -t T
--no-prefix-cache`, and `llama-server -t T -np CLIENTS -c CLIENTS*SLOT_CTX` (its slots keep
their prompt and reuse the longest common prefix). Rounds alternate the servers, so machine
noise hits all alike. In each run, CLIENTS clients take whole conversations from one shared list
(data/conversation/support_conversations.jsonl: 3 user turns each; --conversations N takes the
first N, wrapping with a numbered suffix) and run them turn after turn: each turn sends the
system prompt (data/conversation/store_policy_system.txt, ~600 tokens; --system FILE) and every
earlier question and answer, streams the answer (temperature 0, max_tokens --max-tokens), and
times the first content token (TTFT) and the end.

Reported per server: answers per minute (answers / the run's wall time), TTFT p50 and p95 per
turn, end-to-end p50, and the ratio to llama-server of the same round; medians over rounds.
The CPU is printed with the table. A manual benchmark: not part of CI.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from compare_llama_cpp import cpu_description  # noqa: E402

DEFAULT_MODEL = ROOT / "models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_SYSTEM = ROOT / "data/conversation/store_policy_system.txt"
DEFAULT_CONVERSATIONS = ROOT / "data/conversation/support_conversations.jsonl"
FRUGAL_LISTEN = re.compile(r"frugal serve: listening on (http://127\.0\.0\.1:\d+)")
LLAMA_LISTEN = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")


class Server:
    """One server process on 127.0.0.1, port chosen by the server (port 0)."""

    def __init__(self, name: str, cmd: list[str], listen: re.Pattern, log: Path):
        self.name, self.cmd, self.listen, self.log = name, cmd, listen, log
        self.proc: subprocess.Popen | None = None
        self.url = ""

    def start(self, timeout: float = 300) -> "Server":
        with open(self.log, "w") as f:
            self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=f,
                                         stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                sys.exit(f"{self.name} exited {self.proc.returncode} at start: "
                         f"{self.log.read_text(errors='replace')[-2000:]}")
            if not self.url:
                m = self.listen.search(self.log.read_text(errors="replace"))
                self.url = m.group(1) if m else ""
            if self.url:
                try:
                    if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                        return self
                except httpx.HTTPError:
                    pass
            time.sleep(0.1)
        self.stop()
        sys.exit(f"{self.name} not healthy within {timeout} s (log {self.log})")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


def chat_stream(client: httpx.Client, url: str, messages: list, max_tokens: int,
                model: str) -> dict:
    """One streamed chat completion: its text, TTFT and end time in seconds."""
    body = {"model": model, "messages": messages, "max_tokens": max_tokens, "temperature": 0,
            "stream": True}
    t0 = time.perf_counter()
    ttft = None
    text = []
    with client.stream("POST", url + "/v1/chat/completions", json=body) as r:
        if r.status_code != 200:
            raise RuntimeError(f"HTTP {r.status_code}: {r.read()[:300]!r}")
        for line in r.iter_lines():
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                break
            chunk = json.loads(data)
            if "error" in chunk:
                raise RuntimeError(f"stream error: {chunk['error']}")
            for choice in chunk.get("choices", []):
                piece = (choice.get("delta") or {}).get("content") or ""
                if piece:
                    if ttft is None:
                        ttft = time.perf_counter() - t0
                    text.append(piece)
    end = time.perf_counter() - t0
    return {"text": "".join(text), "ttft": ttft if ttft is not None else end, "e2e": end}


def run_workload(url: str, system: str, conversations: list[list[str]], clients: int,
                 max_tokens: int, model: str) -> dict:
    todo = list(enumerate(conversations))
    lock = threading.Lock()
    turns: list[dict] = []
    errors: list[str] = []

    def client_loop() -> None:
        with httpx.Client(timeout=httpx.Timeout(600, connect=10)) as c:
            while True:
                with lock:
                    if not todo:
                        return
                    idx, conv = todo.pop(0)
                messages = [{"role": "system", "content": system}]
                for t, question in enumerate(conv):
                    messages.append({"role": "user", "content": question})
                    try:
                        r = chat_stream(c, url, messages, max_tokens, model)
                    except (httpx.HTTPError, RuntimeError) as e:
                        with lock:
                            errors.append(f"conversation {idx} turn {t + 1}: {e}")
                        break
                    messages.append({"role": "assistant", "content": r["text"]})
                    with lock:
                        turns.append({"conversation": idx, "turn": t + 1, **r})

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client_loop) for _ in range(clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "answers": len(turns), "errors": errors, "turns": turns}


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]


def summarize(run: dict, n_turns: int) -> dict:
    s = {"answers": run["answers"], "errors": len(run["errors"]), "wall_s": run["wall_s"],
         "answers_per_min": 60.0 * run["answers"] / run["wall_s"]}
    for t in range(1, n_turns + 1):
        ttft = [x["ttft"] for x in run["turns"] if x["turn"] == t]
        s[f"ttft_p50_turn{t}_ms"] = 1e3 * pct(ttft, 0.5)
        s[f"ttft_p95_turn{t}_ms"] = 1e3 * pct(ttft, 0.95)
    s["e2e_p50_ms"] = 1e3 * pct([x["e2e"] for x in run["turns"]], 0.5)
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--conversations", type=int, default=12,
                    help="conversations per run (default 12: 36 answers)")
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--slot-ctx", type=int, default=2048,
                    help="llama-server context per slot (-c is this x --clients)")
    ap.add_argument("--system", type=Path, default=DEFAULT_SYSTEM)
    ap.add_argument("--conversations-file", type=Path, default=DEFAULT_CONVERSATIONS)
    ap.add_argument("--servers", default="frugal,frugal-no-prefix,llama-server",
                    help="comma-separated: frugal, frugal-no-prefix, llama-server")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--frugal", default=str(ROOT / "build/frugal"))
    ap.add_argument("--frugal-args", default="",
                    help="extra `frugal serve` options, e.g. \"--kv-block-tokens 8\"")
    ap.add_argument("--llama-server", default=os.environ.get(
        "FRUGAL_LLAMA_SERVER", str(ROOT / "third_party/llama.cpp/bin/llama-server")))
    ap.add_argument("--json", type=Path)
    ap.add_argument("--log-dir", type=Path, default=Path("/tmp"))
    a = ap.parse_args()

    system = a.system.read_text().strip()
    base = [json.loads(line)["turns"] for line in a.conversations_file.read_text().splitlines()
            if line.strip()]
    conversations = []
    for i in range(a.conversations):
        conv = list(base[i % len(base)])
        if i >= len(base):  # wrapped: the same questions from another customer
            conv[0] = f"{conv[0]} (customer {i // len(base) + 1})"
        conversations.append(conv)
    n_turns = max(len(c) for c in conversations)
    names = [s for s in a.servers.split(",") if s]
    for n in names:
        if n not in ("frugal", "frugal-no-prefix", "llama-server"):
            sys.exit(f"unknown server {n}")
    if "llama-server" in names and not Path(a.llama_server).exists():
        sys.exit(f"llama-server not found at {a.llama_server}: scripts/build-llama-cpp.sh "
                 "llama-server")

    def make(name: str) -> Server:
        log = a.log_dir / f"conversation_bench_{name}.log"
        if name == "llama-server":
            cmd = [a.llama_server, "-m", str(a.model), "--host", "127.0.0.1", "--port", "0",
                   "-t", str(a.threads), "-np", str(a.clients), "-c",
                   str(a.clients * a.slot_ctx), "--metrics"]
            return Server(name, cmd, LLAMA_LISTEN, log)
        cmd = [a.frugal, "serve", "-m", str(a.model), "--host", "127.0.0.1", "--port", "0",
               "-t", str(a.threads)]
        if name == "frugal-no-prefix":
            cmd.append("--no-prefix-cache")
        cmd += a.frugal_args.split()
        return Server(name, cmd, FRUGAL_LISTEN, log)

    cpu = cpu_description()
    print(f"CPU: {cpu['model_name']} (family {cpu['family']} {cpu['zen']}), "
          f"{os.cpu_count()} cores; model {a.model.name}; {a.threads} threads; {a.clients} "
          f"clients x {a.conversations} conversations of {n_turns} turns; max_tokens "
          f"{a.max_tokens}", file=sys.stderr)
    rounds: list[dict] = []
    for r in range(a.rounds):
        order = names if r % 2 == 0 else list(reversed(names))
        this = {}
        for name in order:
            srv = make(name).start()
            try:
                # One short untimed request: both engines' first-touch costs out of the run.
                with httpx.Client(timeout=300) as c:
                    model = c.get(srv.url + "/v1/models").json()["data"][0]["id"]
                    chat_stream(c, srv.url, [{"role": "user", "content": "Hello"}], 4, model)
                run = run_workload(srv.url, system, conversations, a.clients, a.max_tokens,
                                   model)
                if name.startswith("frugal"):
                    qd = httpx.get(srv.url + "/queue_depth",
                                   headers={"accept": "application/json"}, timeout=10).json()
                    run["prefix_cache_hits"] = qd.get("prefix_cache_hits")
                    run["prefix_cache_queries"] = qd.get("prefix_cache_queries")
            finally:
                srv.stop()
            s = summarize(run, n_turns)
            s.update({k: run[k] for k in ("prefix_cache_hits", "prefix_cache_queries")
                      if k in run})
            this[name] = {"summary": s, "errors": run["errors"], "turns": run["turns"]}
            print(f"round {r + 1} {name}: {s['answers_per_min']:.1f} answers/min, TTFT p50 "
                  + ", ".join(f"{s[f'ttft_p50_turn{t}_ms']:.0f}" for t in range(1, n_turns + 1))
                  + f" ms, errors {s['errors']}", file=sys.stderr)
        rounds.append(this)

    def med(name: str, key: str) -> float:
        return statistics.median(r[name]["summary"][key] for r in rounds)

    def ratio(name: str, key: str) -> float | None:
        if "llama-server" not in names:
            return None
        return statistics.median(r[name]["summary"][key] / r["llama-server"]["summary"][key]
                                 for r in rounds)

    keys = ["answers_per_min"] + [f"ttft_p50_turn{t}_ms" for t in range(1, n_turns + 1)]
    head = ["server", "answers/min"] + [f"TTFT p50 turn {t}" for t in range(1, n_turns + 1)] + \
        ["TTFT p95 (all turns, worst)", "e2e p50", "prefix hits / queried"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for n in names:
        cells = [n]
        for k in keys:
            v = med(n, k)
            rt = ratio(n, k)
            unit = "" if k == "answers_per_min" else " ms"
            fmt = f"{v:.1f}" if k == "answers_per_min" else f"{v:.0f}"
            cells.append(fmt + unit + (f" ({rt:.2f}x)" if rt is not None and n != "llama-server"
                                       else ""))
        p95 = max(med(n, f"ttft_p95_turn{t}_ms") for t in range(1, n_turns + 1))
        cells.append(f"{p95:.0f} ms")
        cells.append(f"{med(n, 'e2e_p50_ms'):.0f} ms")
        hits = [r[n]["summary"].get("prefix_cache_hits") for r in rounds]
        queries = [r[n]["summary"].get("prefix_cache_queries") for r in rounds]
        cells.append(f"{sum(hits)} / {sum(queries)}" if None not in hits else "-")
        print("| " + " | ".join(cells) + " |")
    if a.json:
        a.json.write_text(json.dumps({"cpu": cpu, "args": {k: str(v) for k, v in vars(a).items()},
                                      "rounds": rounds}, indent=1))


if __name__ == "__main__":
    main()
