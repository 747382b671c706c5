"""`frugal gateway`, black box: the front door over simulated workers (`frugal serve --simulate`).

Checked, through the official `openai` client and raw HTTP (httpx):
  proxy        non-stream and stream answers equal a worker's own; X-Frugal-Cache / -Worker
               headers; /v1/models; /v1/completions
  cache        (needs MiniLM) miss then hit, a near-paraphrase streamed back from the cache as
               SSE, the number guard, non-deterministic / no-cache / other-system-prompt bypasses,
               invalidation through the admin API
  bad input    400 / 404 / 405 / 413 as OpenAI-shaped JSON; API keys (401) and their token
               buckets (429 + Retry-After)
  admin API    401 / 403, list, add (gets traffic), drain (gets none), remove, bad add 400 / 409
  routing      round_robin alternates; a worker with a full queue (503) is retried elsewhere
  failures     a worker SIGKILLed under load: every request answered, the worker ejected, and
               restored once something listens on its port again; SIGKILLed under streaming
               load: every stream continued on the other worker, none lost; a stream broken
               midway with no other worker ends with an SSE error event and [DONE]
  telemetry    /metrics families, /status.json
  CLI          bad flags or config: exit 2 with one `frugal: error:` line

The simulated workers read only SmolLM2's tokenizer and chat template; their answers are canned
text exactly max_tokens long (finish_reason "length"). Tests skip only when a model file is
missing; a missing or misbehaving binary fails them.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import BIN, ROOT

LISTEN_RE = re.compile(r"listening on (http://[^\s:]+:\d+)")
STARTUP_TIMEOUT_S = 120
HTTP = httpx.Timeout(30, connect=5)
ADMIN_TOKEN = "test-admin-token"
SIM_SPEC = "decode_ms=10,prefill_ms=0.1"


# ---------------------------------------------------------------------------------------------
# processes


class Proc:
    """A `frugal` subprocess that prints `listening on http://HOST:PORT` once it serves.

    start() waits for that line (pytest.fail when the process exits first or the line does not
    come within the timeout, unless `must=False`, which returns False instead); stop() always
    ends the process: SIGTERM, a few seconds, then SIGKILL.
    """

    def __init__(self, args, log_path: Path):
        self.cmd = [str(BIN)] + [str(a) for a in args]
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.lines: list[str] = []
        self._listening = threading.Event()
        self._reader: threading.Thread | None = None
        self._log = None

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def tail(self, n: int = 2000) -> str:
        err = self.log_path.read_text(errors="replace")[-n:] if self.log_path.exists() else ""
        return f"--- stdout ---\n{''.join(self.lines)[-n:]}\n--- stderr ---\n{err}"

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)
            m = LISTEN_RE.search(line)
            if m and not self._listening.is_set():
                self.url = m.group(1)
                self._listening.set()

    def start(self, timeout: float = STARTUP_TIMEOUT_S, must: bool = True) -> bool:
        assert BIN.exists(), f"frugal binary not found at {BIN}; build it or set FRUGAL_BIN"
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(self.cmd, cwd=ROOT, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=self._log, text=True, bufsize=1)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + timeout
        while not self._listening.wait(0.02):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                why = (f"exited {self.proc.returncode}" if self.proc.poll() is not None
                       else f"printed no listening line within {timeout} s")
                self.stop()
                if not must:
                    return False
                pytest.fail(f"`{' '.join(self.cmd)}` {why}\n{self.tail()}")
        return True

    def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, grace: float = 5) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(grace)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(10)
            if self._reader is not None:
                self._reader.join(2)
            if self.proc.stdout is not None:
                self.proc.stdout.close()
        if self._log is not None:
            self._log.close()
            self._log = None


class Procs:
    """Starts simulated workers and gateways; stop_all() ends every one it started."""

    def __init__(self, model: Path, log_dir: Path):
        self.model = model
        self.log_dir = log_dir
        self.all: list[Proc] = []

    def _new(self, args, tag: str) -> Proc:
        p = Proc(args, self.log_dir / f"{tag}_{len(self.all)}.log")
        self.all.append(p)
        return p

    def sim(self, *extra, spec: str = SIM_SPEC, port: int = 0, must: bool = True) -> Proc | None:
        """A simulated worker; with must=False, None when it did not start (port taken)."""
        p = self._new(["serve", "-m", self.model, "--host", "127.0.0.1", "--port", port,
                       "--simulate", spec, *extra], "sim")
        return p if p.start(must=must) else None

    def gateway(self, *args, must: bool = True) -> Proc:
        """`frugal gateway --port 0 ARGS`; with must=False, the Proc even when it did not start."""
        p = self._new(["gateway", "--port", "0", "--shutdown-grace", "2", *args], "gateway")
        p.start(must=must)
        return p

    def stop_all(self) -> None:
        for p in reversed(self.all):
            p.stop()


@pytest.fixture(scope="module")
def mod_procs(smollm2_gguf, tmp_path_factory):
    procs = Procs(smollm2_gguf, tmp_path_factory.mktemp("gateway_mod"))
    yield procs
    procs.stop_all()


@pytest.fixture
def procs(smollm2_gguf, tmp_path):
    procs = Procs(smollm2_gguf, tmp_path)
    yield procs
    procs.stop_all()


@pytest.fixture(scope="module")
def workers(mod_procs):
    """Two simulated workers shared by the module's gateways: {"a": Proc, "b": Proc}."""
    return {"a": mod_procs.sim(), "b": mod_procs.sim()}


def worker_flags(ws: dict) -> list[str]:
    out = []
    for name, p in ws.items():
        out += ["--worker", f"{name}={p.url}"]
    return out


@pytest.fixture(scope="module")
def model_id(workers) -> str:
    r = httpx.get(workers["a"].url + "/v1/models", timeout=HTTP)
    assert r.status_code == 200, r.text
    ids = [m["id"] for m in r.json()["data"]]
    assert len(ids) == 1, ids
    return ids[0]


@pytest.fixture(scope="module")
def gw(mod_procs, workers, model_id) -> str:
    """round_robin over a and b, no cache, no admin token, no API keys."""
    g = mod_procs.gateway(*worker_flags(workers), "--policy", "round_robin", "--no-cache",
                          "--health-interval-ms", "200")
    wait_models(g.url, model_id)
    return g.url


# ---------------------------------------------------------------------------------------------
# helpers


def wait_for(pred, timeout: float, what: str, interval: float = 0.02):
    """Polls pred() until it returns something truthy; fails with `what` after timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"{what} (not within {timeout} s; last: {last!r})")


def wait_models(url: str, model: str, timeout: float = 10) -> None:
    """The gateway learns model ids at its first poll of a worker."""
    def known():
        r = httpx.get(url + "/v1/models", timeout=HTTP)
        return r.status_code == 200 and model in [m["id"] for m in r.json()["data"]]
    wait_for(known, timeout, f"{url}/v1/models does not list {model}")


def chat(model: str, content: str = "Hello there", max_tokens: int = 8, system: str | None = None,
         **kw) -> dict:
    msgs = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": content}]
    return {"model": model, "messages": msgs, "max_tokens": max_tokens, **kw}


def post(url: str, body, path: str = "/v1/chat/completions", headers=None, **kw) -> httpx.Response:
    if isinstance(body, (dict, list)):
        return httpx.post(url + path, json=body, headers=headers, timeout=HTTP, **kw)
    return httpx.post(url + path, content=body, headers={"Content-Type": "application/json",
                                                         **(headers or {})}, timeout=HTTP, **kw)


def content_of(r: httpx.Response) -> str:
    assert r.status_code == 200, f"HTTP {r.status_code}: {r.text[:500]}"
    return r.json()["choices"][0]["message"]["content"]


def assert_error(r: httpx.Response, status: int, code: str | None = None) -> dict:
    """An OpenAI-shaped JSON error with this status (and code)."""
    assert r.status_code == status, f"expected HTTP {status}, got {r.status_code}: {r.text[:500]}"
    assert r.headers.get("content-type", "").startswith("application/json"), r.headers
    body = r.json()
    err = body.get("error")
    assert isinstance(err, dict), body
    assert isinstance(err.get("message"), str) and err["message"], body
    assert isinstance(err.get("type"), str) and err["type"], body
    assert "param" in err and "code" in err, body
    if code is not None:
        assert err["code"] == code, body
    return err


def admin(url: str, method: str, path: str, token: str | None = ADMIN_TOKEN, body=None):
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return httpx.request(method, url + path, headers=headers, json=body, timeout=HTTP)


def admin_workers(url: str) -> dict:
    r = admin(url, "GET", "/admin/workers")
    assert r.status_code == 200, r.text
    return {w["name"]: w for w in r.json()["workers"]}


def metrics(url: str) -> dict:
    """{(name, frozenset(labels.items())): value} of every sample of /metrics."""
    r = httpx.get(url + "/metrics", timeout=HTTP)
    assert r.status_code == 200, r.text
    out = {}
    for fam in text_string_to_metric_families(r.text):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def metric_sum(m: dict, name: str, **labels) -> float:
    return sum(v for (n, ls), v in m.items()
               if n == name and all((k, str(val)) in ls for k, val in labels.items()))


def sse_events(lines) -> list[str]:
    """The `data:` payloads of an SSE stream, in order."""
    return [l[len("data:"):].strip() for l in lines if l.startswith("data:")]


def workers_of(url: str, model: str, n: int, **kw) -> list[str]:
    """X-Frugal-Worker of n sequential requests (each must be a 200)."""
    out = []
    for i in range(n):
        r = post(url, chat(model, f"sequential request {i}", max_tokens=2, **kw))
        assert r.status_code == 200, r.text
        out.append(r.headers.get("x-frugal-worker"))
    return out


# ---------------------------------------------------------------------------------------------
# 1. proxy


def test_proxy_matches_worker_openai_client(gw, workers, model_id):
    direct = post(workers["a"].url, chat(model_id, "Tell me a story.", max_tokens=12))
    want = content_of(direct)
    assert want, "the worker gave an empty answer"
    client = openai.OpenAI(base_url=gw + "/v1", api_key="unused", max_retries=0, timeout=30)

    raw = client.chat.completions.with_raw_response.create(
        model=model_id, messages=[{"role": "user", "content": "Tell me a story."}], max_tokens=12)
    assert raw.headers.get("x-frugal-cache") == "miss"
    assert raw.headers.get("x-frugal-worker") in workers
    c = raw.parse()
    assert c.choices[0].message.content == want
    assert c.choices[0].finish_reason == "length"
    assert c.usage.completion_tokens == 12

    raw = client.chat.completions.with_raw_response.create(
        model=model_id, messages=[{"role": "user", "content": "Tell me a story."}], max_tokens=12,
        stream=True, stream_options={"include_usage": True})
    assert raw.headers.get("x-frugal-cache") == "miss"
    assert raw.headers.get("x-frugal-worker") in workers
    assert raw.headers.get("content-type", "").startswith("text/event-stream")
    chunks = list(raw.parse())
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert text == want
    finishes = [ch.choices[0].finish_reason for ch in chunks if ch.choices and ch.choices[0].finish_reason]
    assert finishes == ["length"]
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 12

    assert [m.id for m in client.models.list().data] == [model_id]

    direct = post(workers["b"].url, {"model": model_id, "prompt": "Once upon a time", "max_tokens": 6},
                  path="/v1/completions")
    assert direct.status_code == 200, direct.text
    raw = client.completions.with_raw_response.create(model=model_id, prompt="Once upon a time",
                                                      max_tokens=6)
    assert raw.headers.get("x-frugal-worker") in workers
    comp = raw.parse()
    assert comp.choices[0].text == direct.json()["choices"][0]["text"]
    assert comp.choices[0].finish_reason == "length"


# ---------------------------------------------------------------------------------------------
# 2. cache


@pytest.fixture(scope="module")
def gw_cache(mod_procs, workers, model_id, minilm_dir) -> str:
    # The cache audit off: these tests check that a hit never reaches a worker, and an audited
    # hit (1% by default) does, on purpose (test_cache_audit.py).
    g = mod_procs.gateway(*worker_flags(workers), "--policy", "round_robin",
                          "--cache-model", minilm_dir, "--admin-token", ADMIN_TOKEN,
                          "--health-interval-ms", "200", "--cache-audit-rate", "0")
    wait_models(g.url, model_id)
    return g.url


def chosen_total(url: str) -> float:
    return metric_sum(metrics(url), "frugal_gateway_worker_chosen_total")


def test_cache_hit_and_sse_replay(gw_cache, model_id):
    system = "You are a helpful assistant."
    q = "What is the capital city of France?"
    r1 = post(gw_cache, chat(model_id, q, system=system, temperature=0))
    answer = content_of(r1)
    assert r1.headers.get("x-frugal-cache") == "miss"
    assert r1.headers.get("x-frugal-worker")
    routed = chosen_total(gw_cache)

    r2 = post(gw_cache, chat(model_id, q, system=system, temperature=0))
    assert r2.headers.get("x-frugal-cache") == "hit", r2.headers
    assert content_of(r2) == answer
    assert r2.json()["choices"][0]["finish_reason"] == "length"
    assert r2.json()["usage"] == r1.json()["usage"]
    assert chosen_total(gw_cache) == routed, "a cache hit was routed to a worker"

    # Near-paraphrase (words only added), streamed: replayed from the cache as SSE.
    body = chat(model_id, "Hi, what is the capital city of France?", system=system, temperature=0,
                stream=True, stream_options={"include_usage": True})
    with httpx.stream("POST", gw_cache + "/v1/chat/completions", json=body, timeout=HTTP) as r:
        assert r.status_code == 200
        assert r.headers.get("x-frugal-cache") == "hit", r.headers
        assert r.headers.get("content-type", "").startswith("text/event-stream")
        events = sse_events(r.iter_lines())
    assert chosen_total(gw_cache) == routed, "a cache hit was routed to a worker"
    assert events[-1] == "[DONE]", events
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks), chunks
    assert chunks[0]["choices"][0]["delta"].get("role") == "assistant", chunks[0]
    usage = chunks[-1]
    assert usage["choices"] == [] and usage["usage"] == r1.json()["usage"], usage
    finish = chunks[-2]["choices"][0]
    assert finish["finish_reason"] == "length" and not finish["delta"].get("content"), finish
    middle = chunks[1:-2]
    assert middle, "no content chunks"
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-2])
    assert "".join(c["choices"][0]["delta"]["content"] for c in middle) == answer


def test_cache_misses_when_it_must(gw_cache, model_id):
    def ask(content, system=None, headers=None, **kw):
        r = post(gw_cache, chat(model_id, content, system=system, **kw), headers=headers)
        assert r.status_code == 200, r.text
        return r.headers.get("x-frugal-cache")

    q = "What is the status of order 1299?"
    assert ask(q, temperature=0) == "miss"
    assert ask(q, temperature=0) == "hit"
    # Close embeddings, a different number: the guard refuses the candidate.
    assert ask("What is the status of order 1300?", temperature=0) == "miss"
    # Not deterministic: never cached (a seed makes it deterministic).
    q2 = "Write a haiku about the sea."
    assert ask(q2, temperature=0.7) == "miss"
    assert ask(q2, temperature=0.7) == "miss"
    assert ask(q2, temperature=0.7, seed=7) == "miss"
    assert ask(q2, temperature=0.7, seed=7) == "hit"
    # The client opts out.
    assert ask(q, temperature=0, headers={"Cache-Control": "no-cache"}) == "miss"
    # Another system prompt is another scope.
    assert ask(q, temperature=0, system="You answer in French.") == "miss"
    assert ask(q, temperature=0) == "hit"


def test_cache_invalidate_all(gw_cache, model_id):
    q = "How many legs does a spider have?"
    body = chat(model_id, q, temperature=0)
    assert post(gw_cache, body).headers.get("x-frugal-cache") == "miss"
    assert post(gw_cache, body).headers.get("x-frugal-cache") == "hit"
    r = admin(gw_cache, "POST", "/admin/cache/invalidate", token="wrong", body={"all": True})
    assert_error(r, 401)
    assert post(gw_cache, body).headers.get("x-frugal-cache") == "hit"
    r = admin(gw_cache, "POST", "/admin/cache/invalidate", body={"all": True})
    assert r.status_code == 200, r.text
    assert r.json()["invalidated"] >= 1
    r = post(gw_cache, body)
    assert r.status_code == 200 and r.headers.get("x-frugal-cache") == "miss"


def test_cache_is_per_api_key(procs, workers, model_id, minilm_dir, tmp_path):
    cfg = tmp_path / "gateway.yaml"
    cfg.write_text(
        "workers:\n"
        f"  - {{name: a, url: '{workers['a'].url}'}}\n"
        "api_keys:\n"
        "  - {key: sk-one, name: one}\n"
        "  - {key: sk-two, name: two}\n"
        f"cache: {{model: '{minilm_dir}'}}\n"
        f"admin_token: {ADMIN_TOKEN}\n")
    g = procs.gateway("--config", cfg)
    wait_models(g.url, model_id)
    body = chat(model_id, "What is the boiling point of water at sea level?", temperature=0)

    def ask(key):
        r = post(g.url, body, headers={"Authorization": f"Bearer {key}"})
        assert r.status_code == 200, r.text
        return r.headers.get("x-frugal-cache")

    assert [ask("sk-one"), ask("sk-one")] == ["miss", "hit"]
    assert [ask("sk-two"), ask("sk-two")] == ["miss", "hit"], "one tenant got another's answer"
    r = admin(g.url, "POST", "/admin/cache/invalidate", body={"namespace": "one"})
    assert r.status_code == 200 and r.json()["invalidated"] == 1, r.text
    assert ask("sk-one") == "miss"
    assert ask("sk-two") == "hit"


# ---------------------------------------------------------------------------------------------
# 3. bad input, API keys


def test_bad_requests_are_json_errors(gw, workers, model_id):
    assert_error(post(gw, '{"model": "x", "messages": ['), 400)
    assert_error(post(gw, {"messages": [{"role": "user", "content": "hi"}]}), 400)
    assert_error(post(gw, {"model": model_id, "messages": "hi"}), 400)
    assert_error(post(gw, {"model": model_id, "prompt": 5}, path="/v1/completions"), 400)
    assert_error(post(gw, chat("no-such-model")), 404, "model_not_found")
    r = httpx.get(gw + "/v1/chat/completions", timeout=HTTP)
    assert_error(r, 405)
    assert r.headers.get("allow") == "POST"
    assert_error(httpx.get(gw + "/v1/nothing-here", timeout=HTTP), 404)
    # 300k nested arrays in under 1 MB: refused as too deep, by the gateway and by the worker
    # (either would otherwise recurse off its stack walking the parsed value).
    deep = '{"model": "%s", "messages": [{"role": "user", "content": "hi"}], "x": %s}' % (
        model_id, "[" * 300_000 + "]" * 300_000)
    assert "nests deeper" in assert_error(post(gw, deep), 400)["message"]
    assert "nests deeper" in assert_error(post(workers["a"].url, deep), 400)["message"]
    # Still serving after all that.
    assert content_of(post(gw, chat(model_id)))


@pytest.fixture(scope="module")
def gw_keys(mod_procs, workers, model_id, tmp_path_factory) -> str:
    cfg = tmp_path_factory.mktemp("gw_keys") / "gateway.yaml"
    cfg.write_text(
        "policy: round_robin\n"
        "workers:\n"
        f"  - {{name: a, url: '{workers['a'].url}'}}\n"
        f"  - {{name: b, url: '{workers['b'].url}'}}\n"
        "api_keys:\n"
        "  - {key: sk-free, name: free}\n"
        "  - {key: sk-slow, name: slow, rate_per_s: 0.2, burst: 2}\n"
        "limits: {max_body_bytes: 2048}\n"
        "health: {interval_ms: 200}\n"
        "cache: {enabled: false}\n")
    g = mod_procs.gateway("--config", cfg)
    wait_models(g.url, model_id)
    return g.url


def test_body_limit_413(gw_keys, model_id):
    key = {"Authorization": "Bearer sk-free"}
    small = chat(model_id, "x" * 1500)
    assert len(json.dumps(small)) < 2048
    assert post(gw_keys, small, headers=key).status_code == 200
    assert_error(post(gw_keys, chat(model_id, "x" * 4000), headers=key), 413)


def test_api_keys_and_rate_limit(gw_keys, model_id):
    body = chat(model_id, max_tokens=2)
    assert_error(post(gw_keys, body), 401, "invalid_api_key")
    assert_error(post(gw_keys, body, headers={"Authorization": "Bearer sk-nope"}), 401,
                 "invalid_api_key")
    assert post(gw_keys, body, headers={"Authorization": "Bearer sk-free"}).status_code == 200
    slow = {"Authorization": "Bearer sk-slow"}
    # burst 2, then one request per 5 s.
    assert post(gw_keys, body, headers=slow).status_code == 200
    assert post(gw_keys, body, headers=slow).status_code == 200
    r = post(gw_keys, body, headers=slow)
    assert_error(r, 429, "rate_limit_exceeded")
    retry_after = r.headers.get("retry-after")
    assert retry_after is not None and retry_after.isdigit() and 1 <= int(retry_after) <= 5, r.headers
    # Other keys have their own bucket.
    for _ in range(4):
        assert post(gw_keys, body, headers={"Authorization": "Bearer sk-free"}).status_code == 200
    m = metrics(gw_keys)
    assert metric_sum(m, "frugal_gateway_rate_limited_total", key="slow") == 1


def test_rate_limit_burst_below_one_is_refused(procs, workers, model_id, tmp_path):
    # A bucket smaller than one token could never pay for a request: the config is refused.
    cfg = tmp_path / "gateway.yaml"
    cfg.write_text(
        f"workers: [{{name: a, url: '{workers['a'].url}'}}]\n"
        "api_keys: [{key: sk-half, name: half, rate_per_s: 2, burst: 0.5}]\n"
        "cache: {enabled: false}\n")
    g = procs.gateway("--config", cfg, must=False)
    assert not g.url, "a config with burst 0.5 must be refused"
    assert g.proc.returncode == 2 and "burst" in g.tail(), g.tail()


# ---------------------------------------------------------------------------------------------
# 4. admin API


@pytest.fixture
def gw_admin(procs, workers, model_id) -> str:
    g = procs.gateway(*worker_flags(workers), "--policy", "round_robin", "--no-cache",
                      "--admin-token", ADMIN_TOKEN, "--health-interval-ms", "200")
    wait_models(g.url, model_id)
    return g.url


def test_admin_auth(gw_admin, gw):
    assert_error(admin(gw_admin, "GET", "/admin/workers", token=None), 401)
    assert_error(admin(gw_admin, "GET", "/admin/workers", token="wrong"), 401)
    assert_error(admin(gw_admin, "DELETE", "/admin/workers/a", token="wrong"), 401)
    assert admin(gw_admin, "GET", "/admin/workers").status_code == 200
    r = httpx.get(gw_admin + "/admin/workers", headers={"X-Admin-Token": ADMIN_TOKEN}, timeout=HTTP)
    assert r.status_code == 200, r.text
    # Nothing was removed by the refused DELETE.
    assert set(admin_workers(gw_admin)) == {"a", "b"}
    # A gateway without a token has no admin API at all.
    assert_error(admin(gw, "GET", "/admin/workers", token=ADMIN_TOKEN), 403)
    assert_error(admin(gw, "GET", "/admin/workers", token=None), 403)


def test_admin_add_drain_remove(gw_admin, procs, workers, model_id):
    ws = admin_workers(gw_admin)
    assert set(ws) == {"a", "b"}
    for name, w in ws.items():
        assert w["url"] == workers[name].url
        assert w["state"] == "healthy"
        assert w["weight"] == 1
        assert w["in_flight"] == 0

    c = procs.sim()
    r = admin(gw_admin, "POST", "/admin/workers", body={"name": "c", "url": c.url, "weight": 2})
    assert r.status_code == 201, r.text
    ws = admin_workers(gw_admin)
    assert set(ws) == {"a", "b", "c"} and ws["c"]["weight"] == 2 and ws["c"]["url"] == c.url
    got = workers_of(gw_admin, model_id, 9)
    assert got.count("c") >= 2 and {"a", "b"} <= set(got), got

    r = admin(gw_admin, "POST", "/admin/workers/b/drain")
    assert r.status_code == 200, r.text
    assert admin_workers(gw_admin)["b"]["state"] == "draining"
    got = workers_of(gw_admin, model_id, 10)
    assert "b" not in got and set(got) == {"a", "c"}, got
    r = admin(gw_admin, "POST", "/admin/workers/b/undrain")
    assert r.status_code == 200, r.text
    wait_for(lambda: admin_workers(gw_admin)["b"]["state"] == "healthy", 5,
             "b not healthy again after undrain")

    r = admin(gw_admin, "DELETE", "/admin/workers/c")
    assert r.status_code == 200, r.text
    assert set(admin_workers(gw_admin)) == {"a", "b"}
    got = workers_of(gw_admin, model_id, 6)
    assert set(got) == {"a", "b"}, got
    assert_error(admin(gw_admin, "DELETE", "/admin/workers/c"), 404)
    assert_error(admin(gw_admin, "POST", "/admin/workers/nope/drain"), 404)


def test_admin_bad_add(gw_admin, workers):
    url = workers["a"].url
    assert_error(admin(gw_admin, "POST", "/admin/workers", body={"name": "d", "url": "ftp://x:1"}), 400)
    assert_error(admin(gw_admin, "POST", "/admin/workers", body={"name": "d", "url": "http://127.0.0.1"}), 400)
    assert_error(admin(gw_admin, "POST", "/admin/workers", body={"name": "d"}), 400)
    assert_error(admin(gw_admin, "POST", "/admin/workers", body={"name": "d e", "url": url}), 400)
    assert_error(admin(gw_admin, "POST", "/admin/workers", body={"name": "a", "url": url}), 409)
    assert set(admin_workers(gw_admin)) == {"a", "b"}
    assert admin_workers(gw_admin)["a"]["url"] == url


def test_admin_bad_add_mentioning_exists_is_400(gw_admin, workers):
    r = admin(gw_admin, "POST", "/admin/workers", body={"name": "d", "url": "http://exists.example:port"})
    assert_error(r, 400)
    r = admin(gw_admin, "POST", "/admin/workers", body={"name": "exists!", "url": workers["a"].url})
    assert_error(r, 400)


def test_admin_add_without_name_after_remove(procs, workers, model_id):
    g = procs.gateway("--worker", workers["a"].url, "--worker", workers["b"].url, "--no-cache",
                      "--admin-token", ADMIN_TOKEN)
    assert set(admin_workers(g.url)) == {"w0", "w1"}
    assert admin(g.url, "DELETE", "/admin/workers/w0").status_code == 200
    r = admin(g.url, "POST", "/admin/workers", body={"url": workers["a"].url})
    assert r.status_code == 201, r.text
    ws = admin_workers(g.url)
    assert len(ws) == 2 and r.json()["added"] in ws


# ---------------------------------------------------------------------------------------------
# 5. round robin


def test_round_robin_alternates(gw, model_id):
    got = workers_of(gw, model_id, 8)
    assert set(got) == {"a", "b"}, got
    assert all(x != y for x, y in zip(got, got[1:])), got


# ---------------------------------------------------------------------------------------------
# 6. retry on a full queue


def test_full_queue_is_retried_elsewhere(procs, model_id):
    # A decodes one sequence at a time and holds one more waiting; both slots are taken by
    # direct requests before the gateway sees any traffic, so every request the gateway sends
    # there gets 503 (queue full).
    a = procs.sim("--max-queue", "1", "--max-batch", "1", spec="decode_ms=50,prefill_ms=0.1")
    b = procs.sim()
    g = procs.gateway("--worker", f"A={a.url}", "--worker", f"B={b.url}", "--policy", "round_robin",
                      "--no-cache", "--health-interval-ms", "200")
    wait_models(g.url, model_id)

    hogs = []
    errors = []

    def hog():
        try:
            post(a.url, chat(model_id, "a long one", max_tokens=200))
        except httpx.HTTPError as e:  # A is killed at the end of the test
            errors.append(e)

    for _ in range(2):
        t = threading.Thread(target=hog, daemon=True)
        t.start()
        hogs.append(t)

    def full():
        j = httpx.get(a.url + "/queue_depth", headers={"Accept": "application/json"}, timeout=HTTP).json()
        return j["running"] == 1 and j["waiting"] == 1
    wait_for(full, 10, "A never had one request running and one waiting")
    assert post(a.url, chat(model_id, max_tokens=2)).status_code == 503, "A is not full"
    before = metric_sum(metrics(g.url), "frugal_gateway_retries_total")

    with ThreadPoolExecutor(6) as ex:
        rs = list(ex.map(lambda i: post(g.url, chat(model_id, f"q{i}", max_tokens=4)), range(6)))
    assert [r.status_code for r in rs] == [200] * 6, [r.text for r in rs if r.status_code != 200]
    assert [r.headers.get("x-frugal-worker") for r in rs] == ["B"] * 6
    m = metrics(g.url)
    assert metric_sum(m, "frugal_gateway_retries_total") - before >= 1
    # Back-pressure is not a fault: A is not ejected.
    states = {w["name"]: w["state"] for w in httpx.get(g.url + "/status.json", timeout=HTTP).json()["workers"]}
    assert states == {"A": "healthy", "B": "healthy"}
    assert all(t.is_alive() for t in hogs), "A finished its long requests during the test"
    a.kill()
    for t in hogs:
        t.join(10)


# ---------------------------------------------------------------------------------------------
# 7. a worker killed under load


def test_worker_killed_midrun(procs, model_id):
    interval_ms = 200
    spec = "decode_ms=5,prefill_ms=0.1"
    ws = {n: procs.sim(spec=spec) for n in ("k", "m", "n")}
    g = procs.gateway(*worker_flags(ws), "--policy", "round_robin", "--no-cache",
                      "--admin-token", ADMIN_TOKEN, "--health-interval-ms", str(interval_ms))
    wait_models(g.url, model_id)
    port = ws["k"].port

    n_requests = 60
    results: list = [None] * n_requests
    done = threading.Semaphore(0)

    def one(i):
        try:
            r = httpx.post(g.url + "/v1/chat/completions", json=chat(model_id, f"load {i}"),
                           timeout=HTTP)
            results[i] = (r.status_code, r.text)
        except httpx.HTTPError as e:
            results[i] = ("exception", repr(e))
        done.release()

    # The load runs in the background (8 at a time) while this thread kills k and watches it.
    ex = ThreadPoolExecutor(8)
    try:
        futures = [ex.submit(one, i) for i in range(n_requests)]
        for _ in range(n_requests // 3):
            assert done.acquire(timeout=30), "requests stopped completing"
        ws["k"].kill()
        wait_for(lambda: admin_workers(g.url)["k"]["state"] == "ejected",
                 3 * interval_ms / 1e3 + 2, "k not ejected after SIGKILL")
    finally:
        ex.shutdown(wait=True)
    for f in futures:
        f.result()

    assert all(r is not None for r in results)
    bad = [(i, r) for i, r in enumerate(results) if r[0] != 200]
    for i, (status, text) in bad:
        assert status in (502, 503), f"request {i}: {status} {text[:300]}"
        err = json.loads(text).get("error")
        assert isinstance(err, dict) and err.get("message"), text
    # Retries absorb connection refused; only a response cut while being written may be lost.
    assert len(bad) <= 1, bad
    assert {n: w["state"] for n, w in admin_workers(g.url).items() if n != "k"} == {
        "m": "healthy", "n": "healthy"}

    # Something listens on k's port again: half-open, then healthy.
    for _ in range(10):
        if procs.sim(spec=spec, port=port, must=False):
            break
        time.sleep(0.2)  # the port may still be held for a moment
    else:
        pytest.fail(f"could not start a worker on port {port} again")
    wait_for(lambda: admin_workers(g.url)["k"]["state"] == "healthy",
             (1 + 2) * interval_ms / 1e3 + 3, "k not healthy after its restart")
    got = workers_of(g.url, model_id, 6)
    assert got.count("k") == 2, got


# ---------------------------------------------------------------------------------------------
# 8. a stream broken midway


def test_stream_broken_midway(procs, model_id):
    w = procs.sim(spec="decode_ms=40,prefill_ms=0.1")
    g = procs.gateway("--worker", f"only={w.url}", "--no-cache", "--max-retries", "0")
    wait_models(g.url, model_id)
    body = chat(model_id, "Tell me a long story.", max_tokens=200, stream=True)
    lines, content_chunks = [], 0
    t0 = time.monotonic()
    with httpx.stream("POST", g.url + "/v1/chat/completions", json=body,
                      timeout=httpx.Timeout(10, connect=5)) as r:
        assert r.status_code == 200
        assert r.headers.get("x-frugal-worker") == "only"
        for line in r.iter_lines():
            lines.append(line)
            if line.startswith("data:") and '"content"' in line:
                content_chunks += 1
                if content_chunks == 4:
                    w.kill()
    assert time.monotonic() - t0 < 10, "the stream did not end promptly"
    events = sse_events(lines)
    assert events[-1] == "[DONE]", events[-3:]
    err = json.loads(events[-2])
    assert isinstance(err.get("error"), dict) and err["error"].get("message"), err
    assert len(events) < 100, "the stream was not cut"
    for e in events[:-2]:
        assert "error" not in json.loads(e), e
    m = metrics(g.url)
    assert metric_sum(m, "frugal_gateway_stream_errors_total") == 1


def test_worker_killed_under_streaming_load_loses_no_stream(procs, model_id):
    """SIGKILL of one of two workers while 8 clients stream: every stream ends with [DONE], no
    error event, and its usage counts exactly the max_tokens asked for (the simulated answer is
    max_tokens long): the broken streams were continued on the other worker."""
    a = procs.sim(spec="decode_ms=15,prefill_ms=0.1")
    b = procs.sim(spec="decode_ms=15,prefill_ms=0.1")
    g = procs.gateway("--worker", f"a={a.url}", "--worker", f"b={b.url}", "--no-cache",
                      "--policy", "round_robin")
    wait_models(g.url, model_id)
    max_tokens = 40
    killed = threading.Event()

    def one(i: int) -> dict:
        body = chat(model_id, f"Tell me story {i}.", max_tokens=max_tokens, stream=True)
        body["stream_options"] = {"include_usage": True}
        lines = []
        with httpx.stream("POST", g.url + "/v1/chat/completions", json=body,
                          timeout=httpx.Timeout(60, connect=5)) as r:
            status = r.status_code
            for line in r.iter_lines():
                lines.append(line)
        events = sse_events(lines)
        chunks = [json.loads(e) for e in events if e != "[DONE]"]
        usage = [c["usage"] for c in chunks if c.get("usage")]
        return {"status": status, "done": bool(events) and events[-1] == "[DONE]",
                "errors": [c for c in chunks if "error" in c],
                "ids": {c.get("id") for c in chunks},
                "usage": usage[-1] if usage else None}

    def killer():
        time.sleep(0.6)  # streams are mid-answer on both workers (40 x 15 ms each)
        a.kill()
        killed.set()

    t = threading.Thread(target=killer)
    t.start()
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(48)))
    t.join()
    assert killed.is_set()
    bad = [r for r in results if r["status"] != 200 or not r["done"] or r["errors"]]
    assert not bad, bad[:3]
    for r in results:
        assert len(r["ids"]) == 1, r  # one stream id, even when continued
        assert r["usage"] and r["usage"]["completion_tokens"] == max_tokens, r
    m = metrics(g.url)
    assert metric_sum(m, "frugal_gateway_stream_errors_total") == 0
    assert metric_sum(m, "frugal_gateway_stream_continuations_total") >= 1


def test_client_disconnect_cancels_upstream(procs, model_id):
    w = procs.sim(spec="decode_ms=20,prefill_ms=0.1")
    g = procs.gateway("--worker", f"only={w.url}", "--no-cache", "--admin-token", ADMIN_TOKEN)
    wait_models(g.url, model_id)
    body = chat(model_id, "Tell me a long story.", max_tokens=500, stream=True)
    with httpx.stream("POST", g.url + "/v1/chat/completions", json=body, timeout=HTTP) as r:
        assert r.status_code == 200
        events = 0
        for line in r.iter_lines():
            events += line.startswith("data:")
            if events == 3:
                break
    # 500 tokens would take 10 s: the worker must stop well before.

    def idle():
        q = httpx.get(w.url + "/queue_depth", headers={"Accept": "application/json"},
                      timeout=HTTP).json()
        return q["running"] == 0 and q["waiting"] == 0 and admin_workers(g.url)["only"]["in_flight"] == 0
    wait_for(idle, 3, "the worker still generates for a client that left")
    assert metric_sum(metrics(g.url), "frugal_gateway_responses_total", code="499") == 1


def test_sigterm_finishes_requests_in_flight(procs, model_id):
    w = procs.sim(spec="decode_ms=10,prefill_ms=0.1")
    g = procs.gateway("--worker", f"only={w.url}", "--no-cache")
    wait_models(g.url, model_id)
    out = {}

    def ask():
        out["r"] = httpx.post(g.url + "/v1/chat/completions",
                              json=chat(model_id, "a slow one", max_tokens=60), timeout=HTTP)

    t = threading.Thread(target=ask)
    t.start()
    wait_for(lambda: httpx.get(w.url + "/queue_depth", headers={"Accept": "application/json"},
                               timeout=HTTP).json()["running"] == 1, 5, "the request never ran")
    g.proc.terminate()
    assert g.proc.wait(10) == 0, g.tail()
    t.join(10)
    r = out["r"]
    assert r.status_code == 200, r.text
    assert r.json()["usage"]["completion_tokens"] == 60


# ---------------------------------------------------------------------------------------------
# 9. metrics and status


def test_metrics_and_status_json(gw, model_id):
    m0 = metrics(gw)
    for _ in range(3):
        assert post(gw, chat(model_id, max_tokens=2)).status_code == 200
    m = metrics(gw)
    for name in ("frugal_gateway_worker_state", "frugal_gateway_worker_in_flight",
                 "frugal_gateway_worker_chosen_total", "frugal_gateway_retries_total",
                 "frugal_gateway_cache_total", "frugal_gateway_request_duration_seconds_count"):
        assert any(n == name for n, _ in m), f"{name} missing from /metrics"
    for w in ("a", "b"):
        assert metric_sum(m, "frugal_gateway_worker_state", worker=w, state="healthy") == 1
        assert metric_sum(m, "frugal_gateway_worker_state", worker=w) == 1
        assert metric_sum(m, "frugal_gateway_worker_in_flight", worker=w) == 0
    assert (metric_sum(m, "frugal_gateway_worker_chosen_total")
            - metric_sum(m0, "frugal_gateway_worker_chosen_total")) == 3
    assert (metric_sum(m, "frugal_gateway_request_duration_seconds_count")
            - metric_sum(m0, "frugal_gateway_request_duration_seconds_count")) == 3
    assert (metric_sum(m, "frugal_gateway_cache_total", result="bypass")
            - metric_sum(m0, "frugal_gateway_cache_total", result="bypass")) == 3

    r = httpx.get(gw + "/status.json", timeout=HTTP)
    assert r.status_code == 200
    s = r.json()
    assert {w["name"] for w in s["workers"]} == {"a", "b"}
    assert all(w["state"] == "healthy" for w in s["workers"])
    assert isinstance(s["series"], list) and s["series"]
    assert s["totals"]["requests"] >= 3
    assert sum(p["requests"] for p in s["series"]) >= 3
    assert httpx.get(gw + "/health", timeout=HTTP).status_code == 200
    assert httpx.get(gw + "/ready", timeout=HTTP).status_code == 200


# ---------------------------------------------------------------------------------------------
# 10. CLI errors


@pytest.mark.parametrize("args, mentions", [
    (["--policy", "fastest"], "fastest"),
    (["--worker", "ftp://127.0.0.1:1"], "ftp://127.0.0.1:1"),
    (["--worker", "http://127.0.0.1"], "http://127.0.0.1"),
    (["--config", "@CONFIG@"], "bogus_key"),
])
def test_cli_errors(frugal, tmp_path, args, mentions):
    cfg = tmp_path / "gateway.yaml"
    cfg.write_text("policy: p2c\nbogus_key: 1\n")
    args = [str(cfg) if a == "@CONFIG@" else a for a in args]
    p = frugal.run("gateway", "--port", "0", "--no-cache", *args, timeout=30)
    err = p.stderr.decode(errors="replace")
    assert p.returncode == 2, f"exit {p.returncode}; stderr {err!r}"
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("frugal: error: ") and mentions in lines[0], lines
    assert "listening" not in p.stdout.decode(errors="replace")
