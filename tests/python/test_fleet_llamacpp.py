"""The gateway in front of real engines: two of llama.cpp's own `llama-server`s and one
`frugal serve`, all on SmolLM2-135M-Instruct (GGUF Q4_1).

llama-server is built from the llama.cpp source that the llama-cpp-python sdist on PyPI vendors,
by scripts/build-llama-cpp.sh (cached; scripts/test.sh runs it before ctest). FRUGAL_LLAMA_SERVER
names another binary.

Checked through the gateway's public interface (/status.json, /v1/models, X-Frugal-Worker):
  kinds        each worker's kind is detected at its first poll (llamacpp from its /metrics,
               frugal from /queue_depth), with the load signals each gives
  by model     a model only the Frugal worker serves goes only there; the llama.cpp model never
               goes to it; /v1/models lists each model once
  under load   while 8 clients stream through the gateway, /status.json shows each llama-server's
               own reported queue (requests_processing + requests_deferred) above zero
  saturated    a llama-server kept busy by clients that bypass the gateway gets less of the
               gateway's traffic than the idle one (its /metrics queue, costed by the pool)
  SIGKILL      one llama-server killed while clients stream: every stream is continued on the
               other one (an assistant prefix) and ends with [DONE], no error, full length
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from conftest import ROOT
from test_gateway import (ADMIN_TOKEN, HTTP, Procs, admin, metric_sum, metrics, sse_events,
                          wait_for, wait_models)

LLAMA_SERVER = Path(os.environ.get("FRUGAL_LLAMA_SERVER",
                                   ROOT / "third_party" / "llama.cpp" / "bin" / "llama-server"))
LISTEN_RE = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")
LLAMA_MODEL = "smollm2-llamacpp"  # the alias both llama-servers serve
FRUGAL_MODEL = "smollm2-frugal"  # what only the Frugal worker serves


def exit_text(returncode: int) -> str:
    """How a process ended, in words: a signal by name (SIGILL says what it means), or the code.
    A shell reports a signal as 128 + N; Popen as -N."""
    sig = -returncode if returncode < 0 else returncode - 128 if 128 < returncode < 160 else 0
    if not sig:
        return f"exited {returncode}"
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = f"signal {sig}"
    text = f"killed by {name}"
    if name == "SIGILL":
        text += (" (illegal instruction: the binary uses an instruction this CPU cannot run; "
                 "rebuild it on this machine with scripts/build-llama-cpp.sh, which leaves out "
                 "AMX where the CPU has it)")
    return text


class LlamaServer:
    """`llama-server -m MODEL --port 0 ...`; start() waits for its listening line and a healthy
    /health (the model loaded); kill() is SIGKILL; stop() SIGTERM then SIGKILL. A server that
    dies before it is healthy fails the test at once with how it died ("llama-server crashed at
    start: killed by SIGILL ...") and its log's tail."""

    def __init__(self, model: Path, log_path: Path, *extra, binary: Path | None = None,
                 metrics: bool = True):
        self.cmd = [str(binary or LLAMA_SERVER), "-m", str(model), "--host", "127.0.0.1", "--port", "0",
                    "--alias", LLAMA_MODEL, *(["--metrics"] if metrics else []), "-np", "2",
                    "-t", "1", "-c", "4096", *[str(e) for e in extra]]
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None
        self.url = ""

    def tail(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:] if self.log_path.exists() else ""

    def start(self, timeout: float = 120) -> "LlamaServer":
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"llama-server crashed at start: {exit_text(self.proc.returncode)}\n"
                            f"`{' '.join(self.cmd)}`\n{self.tail()}")
            m = LISTEN_RE.search(self.tail() if not self.url else "")
            if m:
                self.url = m.group(1)
            if self.url:
                try:
                    if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                        return self
                except httpx.HTTPError:
                    pass
            time.sleep(0.05)
        self.stop()
        pytest.fail(f"`{' '.join(self.cmd)}` not healthy within {timeout} s\n{self.tail()}")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@pytest.fixture(scope="module")
def llama_server_bin() -> Path:
    assert LLAMA_SERVER.exists(), (
        f"llama-server not found at {LLAMA_SERVER}: build it with scripts/build-llama-cpp.sh "
        "(scripts/test.sh does) or set FRUGAL_LLAMA_SERVER")
    return LLAMA_SERVER


class Fleet:
    def __init__(self, smollm2_gguf: Path, tmp: Path):
        self.tmp = tmp
        self.model = smollm2_gguf
        self.procs = Procs(smollm2_gguf, tmp)
        self.llama: dict[str, LlamaServer] = {}
        self.gateway = None

    def start(self) -> "Fleet":
        for name in ("l1", "l2"):
            self.llama[name] = LlamaServer(self.model, self.tmp / f"{name}.log").start()
        self.frugal = self.procs._new(["serve", "-m", self.model, "--host", "127.0.0.1", "--port",
                                       "0", "-t", "1", "--served-model-name", FRUGAL_MODEL], "f")
        self.frugal.start()
        # No kinds given: the gateway finds them at the first poll.
        self.gateway = self.procs.gateway(
            "--worker", f"l1={self.llama['l1'].url}", "--worker", f"l2={self.llama['l2'].url}",
            "--worker", f"f={self.frugal.url}", "--no-cache", "--health-interval-ms", "100",
            "--admin-token", ADMIN_TOKEN)
        wait_models(self.gateway.url, LLAMA_MODEL, timeout=20)
        wait_models(self.gateway.url, FRUGAL_MODEL, timeout=20)
        return self

    @property
    def url(self) -> str:
        return self.gateway.url

    def status(self) -> dict:
        r = httpx.get(self.url + "/status.json", timeout=HTTP)
        assert r.status_code == 200, r.text
        return {w["name"]: w for w in r.json()["workers"]}

    def stop(self) -> None:
        self.procs.stop_all()
        for s in self.llama.values():
            s.stop()


@pytest.fixture(scope="module")
def fleet(llama_server_bin, smollm2_gguf, tmp_path_factory):
    f = Fleet(smollm2_gguf, tmp_path_factory.mktemp("fleet"))
    try:
        yield f.start()
    finally:
        f.stop()


def completion(model: str, prompt: str, max_tokens: int, **kw) -> dict:
    # ignore_eos (llama.cpp's and Frugal's): every answer is exactly max_tokens long.
    return {"model": model, "messages": [{"role": "user", "content": prompt}],
            "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True, **kw}


def stream(url: str, body: dict, timeout: float = 120) -> dict:
    """A streamed chat completion: status, worker, [DONE] seen, error events, ids, usage, text."""
    body = {**body, "stream": True, "stream_options": {"include_usage": True}}
    lines = []
    with httpx.stream("POST", url + "/v1/chat/completions", json=body,
                      timeout=httpx.Timeout(timeout, connect=5)) as r:
        status, worker = r.status_code, r.headers.get("x-frugal-worker")
        for line in r.iter_lines():
            lines.append(line)
    events = sse_events(lines)
    chunks = [json.loads(e) for e in events if e != "[DONE]"]
    usage = [c["usage"] for c in chunks if c.get("usage")]
    text = "".join((c["choices"][0].get("delta") or {}).get("content") or ""
                   for c in chunks if c.get("choices"))
    return {"status": status, "worker": worker, "done": bool(events) and events[-1] == "[DONE]",
            "errors": [c for c in chunks if "error" in c], "ids": {c.get("id") for c in chunks},
            "usage": usage[-1] if usage else None, "text": text}


def test_kinds_are_detected_with_their_signals(fleet):
    st = wait_for(lambda: (s := fleet.status()) and all(w["load_known"] for w in s.values()) and s,
                  10, "every worker's load known")
    assert {n: w["kind"] for n, w in st.items()} == {"l1": "llamacpp", "l2": "llamacpp",
                                                     "f": "frugal"}
    for n in ("l1", "l2"):
        assert st[n]["load_source"] == "llamacpp /metrics", st[n]
        assert st[n]["state"] == "healthy", st[n]
        # Its own counts, not the gateway's guesses: 0 and 0 while idle, never null.
        assert st[n]["reported"]["running"] == 0 and st[n]["reported"]["waiting"] == 0, st[n]
    assert st["f"]["load_source"] == "frugal /queue_depth", st["f"]


def test_models_route_only_to_workers_that_serve_them(fleet):
    r = httpx.get(fleet.url + "/v1/models", timeout=HTTP)
    ids = [m["id"] for m in r.json()["data"]]
    assert sorted(ids) == sorted([LLAMA_MODEL, FRUGAL_MODEL]), ids  # each once
    for i in range(6):
        r = httpx.post(fleet.url + "/v1/chat/completions",
                       json=completion(FRUGAL_MODEL, f"Say hello {i}.", 4), timeout=HTTP)
        assert r.status_code == 200, r.text
        assert r.headers["x-frugal-worker"] == "f"
        assert r.json()["model"] == FRUGAL_MODEL
    got = set()
    for i in range(6):
        r = httpx.post(fleet.url + "/v1/chat/completions",
                       json=completion(LLAMA_MODEL, f"Say hello {i}.", 4), timeout=HTTP)
        assert r.status_code == 200, r.text
        got.add(r.headers["x-frugal-worker"])
    assert got <= {"l1", "l2"} and got, got
    r = httpx.post(fleet.url + "/v1/chat/completions", json=completion("no-such-model", "Hi", 2),
                   timeout=HTTP)
    assert r.status_code == 404, r.text


def test_status_shows_each_llama_servers_real_queue_under_load(fleet):
    peak = {"l1": 0, "l2": 0}
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            for n, w in fleet.status().items():
                if n in peak:
                    rep = w["reported"]
                    peak[n] = max(peak[n], (rep["running"] or 0) + (rep["waiting"] or 0))
            time.sleep(0.03)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        with ThreadPoolExecutor(8) as ex:
            results = list(ex.map(
                lambda i: stream(fleet.url, completion(LLAMA_MODEL, f"Tell me story {i}.", 32)),
                range(16)))
    finally:
        stop.set()
        sampler.join()
    bad = [r for r in results if r["status"] != 200 or not r["done"] or r["errors"]]
    assert not bad, bad[:2]
    assert {r["worker"] for r in results} == {"l1", "l2"}
    # What each llama-server said of itself in /metrics, relayed by /status.json.
    assert peak["l1"] > 0 and peak["l2"] > 0, peak


def test_a_saturated_llama_server_gets_less_traffic(fleet):
    busy = fleet.llama["l2"]
    stop = threading.Event()

    def hog(i):  # a client of l2 that does not go through the gateway
        while not stop.is_set():
            r = httpx.post(busy.url + "/v1/chat/completions",
                           json=completion(LLAMA_MODEL, f"Write a long essay {i}.", 96),
                           timeout=120)
            assert r.status_code == 200, r.text

    hogs = ThreadPoolExecutor(6)
    futures = [hogs.submit(hog, i) for i in range(6)]
    try:
        wait_for(lambda: (fleet.status()["l2"]["reported"]["waiting"] or 0) >= 2, 30,
                 "l2 reports requests deferred")
        with ThreadPoolExecutor(4) as ex:
            results = list(ex.map(
                lambda i: stream(fleet.url, completion(LLAMA_MODEL, f"Question {i}?", 12)),
                range(16)))
        st = fleet.status()
    finally:
        stop.set()
        hogs.shutdown(wait=True)
    for f in futures:
        f.result()
    assert all(r["status"] == 200 and r["done"] and not r["errors"] for r in results), results[:2]
    workers = [r["worker"] for r in results]
    # Busy, l2's backlog comes from its /slots (what each slot has left), which /metrics lacks.
    assert st["l2"]["load_source"] == "llamacpp /metrics + /slots", st["l2"]
    assert st["l2"]["reported"]["backlog_ms"] > 0, st["l2"]
    assert workers.count("l2") <= 3, (workers, st["l2"]["backlog_ms"], st["l2"]["reported"])
    assert workers.count("l1") >= 13, workers


def test_a_name_reused_for_another_engine_is_detected_afresh(fleet):
    def kind_of(name):
        w = fleet.status().get(name)
        return w and w["load_known"] and w["kind"]

    for url, kind in ((fleet.llama["l2"].url, "llamacpp"), (fleet.frugal.url, "frugal")):
        r = admin(fleet.url, "POST", "/admin/workers", body={"name": "x", "url": url})
        assert r.status_code == 201, r.text
        wait_for(lambda: kind_of("x") == kind, 10, f"x detected as {kind}")
        r = admin(fleet.url, "DELETE", "/admin/workers/x")
        assert r.status_code == 200, r.text


def test_a_llama_server_without_metrics_is_served_not_ejected(fleet):
    """llama-server's default has no /metrics (it answers 501): the gateway must take it as an
    OpenAI-compatible worker whose load it cannot read, and route to it, not eject it."""
    bare = LlamaServer(fleet.model, fleet.tmp / "bare.log", metrics=False).start()
    try:
        r = admin(fleet.url, "POST", "/admin/workers", body={"name": "bare", "url": bare.url})
        assert r.status_code == 201, r.text
        w = wait_for(lambda: (s := fleet.status().get("bare")) and s["kind"] != "auto" and s, 10,
                     "bare detected")
        assert w["kind"] == "openai" and w["state"] == "healthy", w
        time.sleep(0.5)  # several polls at 100 ms: still there
        w = fleet.status()["bare"]
        assert w["state"] == "healthy" and w["ejections"] == 0, w
        served = set()
        for _ in range(6):
            r = stream(fleet.url, completion(LLAMA_MODEL, "Say hi.", 4))
            assert r["status"] == 200 and r["done"] and not r["errors"], r
            served.add(r["worker"])
        assert "bare" in served, served
    finally:
        admin(fleet.url, "DELETE", "/admin/workers/bare")
        bare.stop()


def test_sigkill_of_a_llama_server_under_streaming_load_loses_nothing(fleet):
    """Runs last in this module: it kills l1."""
    victim = fleet.llama["l1"]
    max_tokens = 48
    killed = threading.Event()

    def killer():
        # Wait until l1 is mid-answer on at least one stream, then SIGKILL it.
        wait_for(lambda: (fleet.status()["l1"]["reported"]["running"] or 0) > 0, 30,
                 "l1 busy")
        time.sleep(0.3)
        victim.kill()
        killed.set()

    t = threading.Thread(target=killer)
    t.start()
    with ThreadPoolExecutor(4) as ex:
        results = list(ex.map(
            lambda i: stream(fleet.url, completion(LLAMA_MODEL, f"Tell me tale {i}.", max_tokens)),
            range(8)))
    t.join()
    assert killed.is_set()
    bad = [r for r in results if r["status"] != 200 or not r["done"] or r["errors"]]
    assert not bad, bad[:2]
    for r in results:
        assert len(r["ids"]) == 1, r  # one stream, even when continued elsewhere
        assert r["usage"] and r["usage"]["completion_tokens"] == max_tokens, r
    m = metrics(fleet.url)
    assert metric_sum(m, "frugal_gateway_stream_errors_total") == 0
    assert metric_sum(m, "frugal_gateway_stream_continuations_total") >= 1
