"""`frugal serve --simulate SPEC`, black box: a worker whose real scheduler batches requests while
each step sleeps a latency model instead of running the model (engine/simulate.h).

Checked: the worker labels itself a test instrument everywhere; an answer is exactly max_tokens
long and takes at least the modelled decode steps; streaming works with the official `openai`
client; concurrent requests share steps like a GPU batch (and /queue_depth shows them running,
with a per-token decode latency near decode_ms / batch); the spec's max_batch overrides
--max-batch; a bad spec exits 2 with one line. SmolLM2 only provides the tokenizer and chat
template; its weights are never read, so the file runs in a few seconds.
"""

from __future__ import annotations

import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import BIN, FrugalServer

DECODE_MS = 20
PREFILL_MS = 0.2
SPEC = f"decode_ms={DECODE_MS},prefill_ms={PREFILL_MS}"
ANSWER = " This is a simulated answer from a Frugal test worker."
HTTP_TIMEOUT = httpx.Timeout(60, connect=10)

SIM_LISTEN_RE = re.compile(r"^frugal serve: SIMULATED worker \(test instrument; no model runs: ([^)]*)\) "
                           r"listening on http://([0-9.]+):([0-9]+)\s*$")


class SimulatedServer(FrugalServer):
    """FrugalServer waiting for the simulated worker's start-up line instead of the real one's."""

    spec_line = ""

    def _read_stdout(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self.stdout_lines.append(line)
            m = SIM_LISTEN_RE.match(line)
            if m and not self._listening.is_set():
                self.spec_line = m.group(1)
                self.host, self.port = m.group(2), int(m.group(3))
                self._listening.set()


@pytest.fixture(scope="module")
def start_sim(smollm2_gguf, tmp_path_factory):
    servers = []

    def start(*args) -> SimulatedServer:
        log = tmp_path_factory.getbasetemp() / f"frugal_simulate_{len(servers)}.log"
        srv = SimulatedServer(BIN, smollm2_gguf, args, log)
        servers.append(srv)
        return srv.start(timeout=60)

    yield start
    for srv in servers:
        assert srv.stop() == 0, f"simulated worker did not exit 0 on SIGTERM\n{srv.log_tail()}"


@pytest.fixture(scope="module")
def sim(start_sim):
    return start_sim("--simulate", SPEC)


def completion(srv, max_tokens: int, client: httpx.Client | None = None, **extra) -> tuple[httpx.Response, float]:
    body = {"prompt": "Tell me about simulators.", "max_tokens": max_tokens, **extra}
    t0 = time.monotonic()
    r = (client or httpx).post(srv.base_url + "/v1/completions", json=body, timeout=HTTP_TIMEOUT)
    return r, time.monotonic() - t0


def queue_depth_json(srv) -> dict:
    r = httpx.get(srv.base_url + "/queue_depth", headers={"Accept": "application/json"}, timeout=HTTP_TIMEOUT)
    assert r.status_code == 200, r.text[:500]
    return r.json()


def assert_labelled(r: httpx.Response, what: str) -> None:
    assert r.headers.get("x-frugal-simulated") == "true", (
        f"{what}: no 'X-Frugal-Simulated: true' header; headers {dict(r.headers)}")


def test_labelled_as_a_test_instrument_everywhere(sim):
    assert sim.spec_line == "prefill_ms=0.2,decode_ms=20,batch_slowdown=0.01,jitter=0", sim.stdout_lines
    base = sim.base_url
    with httpx.Client(timeout=HTTP_TIMEOUT) as h:
        models = h.get(base + "/v1/models")
        assert_labelled(models, "/v1/models")
        assert [m.get("simulated") for m in models.json()["data"]] == [True], models.text

        qd = h.get(base + "/queue_depth", headers={"Accept": "application/json"})
        assert_labelled(qd, "/queue_depth (JSON)")
        assert qd.json()["simulated"] is True, qd.text
        # Seeded from the spec, not from a warm-up of the model.
        assert qd.json()["decode_ms_per_token"] == pytest.approx(DECODE_MS), qd.text
        assert qd.json()["prefill_ms_per_token"] == pytest.approx(PREFILL_MS), qd.text
        assert_labelled(h.get(base + "/queue_depth"), "/queue_depth (plain)")

        m = h.get(base + "/metrics")
        assert_labelled(m, "/metrics")
        fams = {f.name: f for f in text_string_to_metric_families(m.text)}
        assert [s.value for s in fams["frugal_simulated"].samples] == [1.0], m.text[:2000]

        for path in ("/health", "/ready", "/no/such/route"):
            assert_labelled(h.get(base + path), path)
        bad = h.post(base + "/v1/completions", json={"prompt": "x", "max_tokens": -1})
        assert bad.status_code == 400, bad.text
        assert_labelled(bad, "a 400 error")
        # An error the HTTP layer makes by itself, before any route runs: 413 beyond the 1 MiB
        # default body limit.
        big = h.post(base + "/v1/completions", content=b"x" * (2 << 20), headers={"Content-Type": "application/json"})
        assert big.status_code == 413, big.status_code
        assert_labelled(big, "the HTTP layer's 413")

        body = {"prompt": "x", "max_tokens": 3, "stream": True}
        with h.stream("POST", base + "/v1/completions", json=body) as s:
            assert s.status_code == 200
            assert_labelled(s, "an SSE stream")
            assert '"system_fingerprint":"frugal-simulated"' in s.read().decode()


def test_answer_is_exactly_max_tokens_and_takes_the_modelled_steps(sim):
    r, elapsed = completion(sim, 10)
    assert r.status_code == 200, r.text
    assert_labelled(r, "completion")
    j = r.json()
    assert j["system_fingerprint"] == "frugal-simulated", j
    assert j["usage"]["completion_tokens"] == 10, j
    assert j["choices"][0]["finish_reason"] == "length", j
    assert ANSWER.startswith(j["choices"][0]["text"]) and len(j["choices"][0]["text"]) > 20, j
    # The prefill step yields the first token, then 9 decode steps of at least decode_ms each.
    assert elapsed >= 9 * DECODE_MS / 1e3, f"10 tokens in {elapsed * 1e3:.0f} ms"

    # Longer than the canned text: it cycles, never ending by itself.
    r, _ = completion(sim, 40)
    assert r.json()["usage"]["completion_tokens"] == 40, r.text
    assert r.json()["choices"][0]["text"].startswith(ANSWER + ANSWER[:5]), r.text


def test_stop_string_ends_the_canned_answer(sim):
    r, _ = completion(sim, 30, stop=["answer"])
    j = r.json()
    assert j["choices"][0]["finish_reason"] == "stop", j
    assert j["choices"][0]["text"] == " This is a simulated ", j


def test_streaming_with_the_openai_client(sim):
    with openai.OpenAI(base_url=sim.base_url + "/v1", api_key="x", max_retries=0, timeout=60) as client:
        model = client.models.list().data[0].id
        messages = [{"role": "user", "content": "Hello?"}]
        whole = client.chat.completions.create(model=model, messages=messages, max_tokens=12)
        assert whole.system_fingerprint == "frugal-simulated"
        assert whole.usage.completion_tokens == 12
        pieces, finish, usage, fingerprints = [], None, None, set()
        stream = client.chat.completions.create(model=model, messages=messages, max_tokens=12, stream=True,
                                                stream_options={"include_usage": True})
        for chunk in stream:
            fingerprints.add(chunk.system_fingerprint)
            if chunk.usage:
                usage = chunk.usage
            for c in chunk.choices:
                pieces.append(c.delta.content or "")
                finish = c.finish_reason or finish
    assert fingerprints == {"frugal-simulated"}
    assert "".join(pieces) == whole.choices[0].message.content
    assert finish == "length"
    assert usage is not None and usage.completion_tokens == 12


def test_concurrent_requests_share_steps_like_a_gpu_batch(sim):
    n, max_tokens = 8, 32
    # One pooled client: a client per request costs the test more CPU than the worker's steps.
    h = httpx.Client(timeout=HTTP_TIMEOUT, limits=httpx.Limits(max_connections=2 * n))
    r, single = completion(sim, max_tokens, h)
    assert r.status_code == 200, r.text

    snapshots: list[dict] = []
    done = threading.Event()

    def poll():
        while not done.is_set():
            snapshots.append(queue_depth_json(sim))
            time.sleep(0.01)

    poller = threading.Thread(target=poll)
    poller.start()
    t0 = time.monotonic()
    try:
        with ThreadPoolExecutor(n) as ex:
            results = list(ex.map(lambda _: completion(sim, max_tokens, h)[0], range(n)))
    finally:
        done.set()
        poller.join(10)
        h.close()
    together = time.monotonic() - t0
    for r in results:
        assert r.status_code == 200, r.text
        assert r.json()["usage"]["completion_tokens"] == max_tokens, r.text
    # One at a time would take n x single; a batch takes about one single's steps, slowed by
    # batch_slowdown (7% at 8) and a few prefill steps.
    assert together < 2.5 * single, (
        f"{n} concurrent requests took {together:.2f} s, one alone {single:.2f} s: not batched")
    full = [s for s in snapshots if s["running"] == n]
    assert full, f"/queue_depth never showed {n} running: {[s['running'] for s in snapshots]}"
    assert all(s["backlog_ms"] > 0 for s in full), full
    # Machine time per token at batch n (the last report at the full batch: the moving average
    # has seen a score of batched steps by then).
    want = DECODE_MS * (1 + 0.01 * (n - 1)) / n
    got = full[-1]["decode_ms_per_token"]
    assert want / 2 <= got <= want * 2, f"decode_ms_per_token {got:.2f} at batch {n}; the model says {want:.2f}"


def test_spec_max_batch_overrides_the_flag(start_sim):
    srv = start_sim("--simulate", "decode_ms=5,max_batch=2", "--max-batch", "16", "--ctx", "256")
    assert "max_batch=2" in srv.spec_line
    # No --kv-blocks: max_batch full contexts of 256 positions in 16-position blocks.
    assert queue_depth_json(srv)["kv_blocks_total"] == 2 * 256 // 16
    running: list[int] = []
    done = threading.Event()

    def poll():
        while not done.is_set():
            running.append(queue_depth_json(srv)["running"])
            time.sleep(0.005)

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        with ThreadPoolExecutor(4) as ex:
            results = list(ex.map(lambda _: completion(srv, 30)[0], range(4)))
    finally:
        done.set()
        poller.join(10)
    assert [r.status_code for r in results] == [200] * 4
    assert max(running) == 2, running


@pytest.mark.parametrize("spec", ["decode_ms=fast", "prefill_ms=-1", "jitter=1", "speed=3", "max_batch=0"])
def test_bad_spec_exits_2_with_one_line(frugal, smollm2_gguf, spec):
    p = frugal.run("serve", "-m", smollm2_gguf, "--port", "0", "--simulate", spec, timeout=30)
    err = p.stderr.decode()
    assert p.returncode == 2, f"exit {p.returncode}; stderr {err!r}"
    assert p.stdout == b"", p.stdout
    assert err.count("\n") == 1 and err.startswith("frugal: error: simulation spec: "), err


def test_help_documents_simulate(frugal):
    out = frugal.ok("serve", "--help").stdout.decode()
    assert "--simulate" in out and "TEST INSTRUMENT" in out, out
