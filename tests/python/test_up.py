"""`frugal up`: the whole stack from one command, stopped cleanly by Ctrl-C (SIGINT)."""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import threading

import httpx
import pytest

from conftest import BIN, MINILM_DIR, SMOLLM2_GGUF, require_file

LISTEN = re.compile(r"listening on (http://[^\s:]+:\d+)")
WORKER = re.compile(r"worker (w\d+) at (http://[^\s:]+:(\d+)) \(pid (\d+)")


class Up:
    def __init__(self, *args):
        self.p = subprocess.Popen([str(BIN), "up", "--port", "0", *map(str, args)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.url = None
        found = threading.Event()

        def read():
            for line in self.p.stdout:
                self.lines.append(line)
                m = LISTEN.search(line)
                if m and not self.url:
                    self.url = m.group(1)
                    found.set()
            found.set()

        self.err_lines: list[str] = []

        def read_err():
            for line in self.p.stderr:
                self.err_lines.append(line)

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        self.err_reader = threading.Thread(target=read_err, daemon=True)
        self.err_reader.start()
        found.wait(240)
        if not self.url:
            self.p.kill()
            self.p.wait(30)
            self.err_reader.join(10)
            pytest.fail(f"frugal up did not start: {''.join(self.err_lines)}")

    def stop(self, sig=signal.SIGINT):
        self.p.send_signal(sig)
        self.p.wait(60)
        self.reader.join(10)
        self.err_reader.join(10)
        return self.p.returncode, "".join(self.err_lines)


def refused(url: str) -> bool:
    host, port = url[len("http://"):].rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
        return False
    except OSError:
        return True


def test_up_serves_through_the_gateway_and_stops_everything_on_ctrl_c():
    require_file(SMOLLM2_GGUF)
    up = Up("--workers", 2, "-m", SMOLLM2_GGUF, "--simulate", "decode_ms=2", "--no-cache", "--health-interval-ms", 100)
    try:
        with httpx.Client(base_url=up.url, timeout=30) as c:
            for _ in range(100):
                models = c.get("/v1/models").json()["data"]
                if models:
                    break
                threading.Event().wait(0.05)
            assert [m["id"] for m in models] == [SMOLLM2_GGUF.stem]
            seen = set()
            for _ in range(8):
                r = c.post("/v1/chat/completions", json={"model": SMOLLM2_GGUF.stem, "max_tokens": 3,
                                                         "messages": [{"role": "user", "content": "hi"}]})
                assert r.status_code == 200, r.text
                assert r.headers["x-frugal-cache"] == "miss"
                seen.add(r.headers["x-frugal-worker"])
                assert r.json()["usage"]["completion_tokens"] == 3
            assert seen == {"w0", "w1"}, "both local workers take traffic"
    finally:
        rc, err = up.stop()
    assert rc == 0, err
    workers = WORKER.findall(err)
    assert len(workers) == 2, err
    for _, url, _, _ in workers:
        assert refused(url), f"worker {url} still answers after Ctrl-C"
    assert "stopping the gateway, then 2 workers" in err


def test_up_asks_twice_and_the_second_answer_comes_from_the_cache():
    require_file(SMOLLM2_GGUF)
    require_file(MINILM_DIR / "model.safetensors")
    up = Up("--workers", 1, "-m", SMOLLM2_GGUF, "-t", 1, "--cache-model", MINILM_DIR,
            "--ask", "How do I return an item?")
    try:
        for _ in range(600):
            if sum("[HTTP" in line for line in up.lines) >= 2:
                break
            threading.Event().wait(0.1)
    finally:
        rc, err = up.stop(signal.SIGTERM)
    assert rc == 0, err
    out = "".join(up.lines)
    status = re.findall(r"\[HTTP (\d+), cache (\w+), \d+ ms\]", out)
    assert status == [("200", "miss"), ("200", "hit")], out
    answers = re.findall(r"> How do I return an item\?\n(.*?)\n\[HTTP", out, re.S)
    assert len(answers) == 2 and answers[0] == answers[1] and answers[0].strip(), out


def test_up_refuses_a_missing_model_with_exit_2():
    r = subprocess.run([str(BIN), "up", "--port", "0", "-m", "/nonexistent/model.gguf", "--no-cache"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("frugal: error: model not found"), r.stderr


def test_up_starts_a_dead_worker_again_on_its_port():
    require_file(SMOLLM2_GGUF)
    up = Up("--workers", 2, "-m", SMOLLM2_GGUF, "--simulate", "decode_ms=2", "--no-cache", "--health-interval-ms", 100,
            "--admin-token", "t")
    try:
        admin = {"Authorization": "Bearer t"}
        with httpx.Client(base_url=up.url, timeout=30) as c:
            def states():
                return {w["name"]: (w["state"], w["url"]) for w in c.get("/admin/workers", headers=admin).json()["workers"]}

            def wait(pred, what):
                for _ in range(300):
                    s = states()
                    if pred(s):
                        return s
                    threading.Event().wait(0.05)
                pytest.fail(f"{what}: {states()}")

            before = wait(lambda s: all(st == "healthy" for st, _ in s.values()), "both healthy")
            pid = next(int(m[3]) for m in WORKER.findall("".join(up.err_lines)) if m[0] == "w0")
            os.kill(pid, signal.SIGKILL)
            # The restart may beat the gateway's three failed checks, so ejection is not awaited:
            # what counts is a new process on the old address that the gateway uses again.
            for _ in range(300):
                if "worker w0 back at" in "".join(up.err_lines):
                    break
                threading.Event().wait(0.05)
            err = "".join(up.err_lines)
            assert "worker w0 back at " + before["w0"][1] in err, err
            new_pid = int(re.search(r"worker w0 back at \S+ \(pid (\d+)\)", err).group(1))
            assert new_pid != pid
            after = wait(lambda s: s["w0"][0] == "healthy", "w0 restarted and restored")
            assert after["w0"][1] == before["w0"][1], "restarted on the same address"
            r = c.post("/v1/chat/completions", json={"model": SMOLLM2_GGUF.stem, "max_tokens": 2,
                                                     "messages": [{"role": "user", "content": "hi"}]})
            assert r.status_code == 200, r.text
    finally:
        rc, err = up.stop()
    assert rc == 0, err
    assert "w0 (pid" in err and "was killed by signal 9" in err and "worker w0 back at" in err, err


def test_follow_up_turns_go_where_their_conversation_is():
    """Prefix-aware routing (issue 46): through `frugal up --workers 2`, every follow-up turn of a
    conversation lands on the worker that served its first turn (X-Frugal-Worker), and that
    worker finds the conversation's blocks in its prefix cache (usage.cached_tokens covers at least
    the earlier turn's whole blocks)."""
    require_file(SMOLLM2_GGUF)
    system = ("You are the support assistant of a kitchenware shop. Shipping costs 4.90 EUR and is "
              "free from 49 EUR; returns within 30 days; refunds in 5 to 7 days. ") * 4
    up = Up("--workers", 2, "-t", 1, "--no-cache", "-m", SMOLLM2_GGUF, "--health-interval-ms", 100)
    try:
        with httpx.Client(timeout=120) as c:
            model = c.get(up.url + "/v1/models").json()["data"][0]["id"]
            for conv in range(6):
                messages = [{"role": "system", "content": system}]
                home = None
                prompt_before = 0
                # The first message carries the customer's order history (about 2000
                # characters, their own): what makes the conversation's KV worth going back to.
                history = " ".join(f"Order {conv}-{i}: {i + 1} pans and {i + 2} mugs, paid by card."
                                   for i in range(40))
                for turn, q in enumerate([f"My orders: {history} How much is shipping?",
                                          "And for 60 EUR?", "How long do refunds take?"]):
                    messages.append({"role": "user", "content": q})
                    r = c.post(up.url + "/v1/chat/completions",
                               json={"model": model, "messages": messages, "max_tokens": 12,
                                     "temperature": 0})
                    assert r.status_code == 200, r.text
                    worker = r.headers["x-frugal-worker"]
                    usage = r.json()["usage"]
                    if turn == 0:
                        home = worker
                    else:
                        assert worker == home, f"conversation {conv} turn {turn + 1}"
                        cached = usage["prompt_tokens_details"]["cached_tokens"]
                        assert cached >= prompt_before // 16 * 16, (conv, turn, usage)
                    prompt_before = usage["prompt_tokens"]
                    messages.append({"role": "assistant",
                                     "content": r.json()["choices"][0]["message"]["content"]})
            metrics = c.get(up.url + "/metrics").text
            routed = [line for line in metrics.splitlines()
                      if line.startswith("frugal_gateway_prefix_routed ")]
            assert routed and float(routed[0].split()[1]) >= 12, routed
    finally:
        rc, err = up.stop()
    assert rc == 0, err
