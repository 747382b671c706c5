"""The cache audit (docs/cache.md "The audit"), black box through `frugal up --cache-redis`.

With --cache-audit-rate 1 every hit is also asked of a worker after the client has its answer,
and the two answers are compared (the same numbers, embedding agreement). A real
redis-stack-server holds the cache, so the test can do what a wrong hit is: an entry whose stored
answer is not what the worker says. It asks a question once (the answer is filed in Redis), asks
again (a correct hit: audited, agree), overwrites the entry's stored response in Redis with an
answer carrying other numbers, and asks once more: the client gets the wrong answer from the
cache at once, and /metrics then counts a disagreement (polled with a deadline). The audits are
not client requests: the request counters see three.

Workers are simulated (a canned answer, the same for the same request).
"""
from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

from conftest import E5_FILE, SMOLLM2_GGUF, require_file
from test_gateway import content_of, metric_sum, metrics, wait_for
from test_gateway_redis import Redis, free_port
from test_up import Up

QUESTION = "How many moons does Mars have?"
WRONG = "Mars has 424242 moons, 17 of them made of cheese."
AUDITS = "frugal_gateway_cache_audits_total"


def resp(port: int, *args: str):
    """One Redis command over RESP (no client library in the test environment); the reply."""
    out = b"*%d\r\n" % len(args) + b"".join(
        b"$%d\r\n%s\r\n" % (len(a.encode()), a.encode()) for a in args)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(out)
        f = s.makefile("rb")
        return read_reply(f)


def read_reply(f):
    line = f.readline().rstrip(b"\r\n")
    kind, rest = line[:1], line[1:]
    if kind in (b"+", b":"):
        return rest.decode()
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)[:-2]
        return data.decode("utf-8", "replace")
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [read_reply(f) for _ in range(n)]
    raise RuntimeError(f"unexpected RESP reply {line!r}")


def entry_key(port: int) -> str | None:
    """The Redis key of the entry whose query is QUESTION, once the gateway has filed it."""
    for key in resp(port, "KEYS", "frugal:cache:e:*") or []:
        if QUESTION in (resp(port, "HGET", key, "query") or ""):
            return key
    return None


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    require_file(SMOLLM2_GGUF)
    require_file(E5_FILE)
    redis = Redis(free_port(), tmp_path_factory.mktemp("redis"))
    redis.start()
    u = Up("--workers", 1, "-m", SMOLLM2_GGUF, "--simulate", "decode_ms=1",
           "--health-interval-ms", 100, "--cache-redis", f"127.0.0.1:{redis.port}",
           "--cache-audit-rate", 1)
    try:
        model = wait_for(lambda: (httpx.get(u.url + "/v1/models").json()["data"] or [None])[0],
                         60, "a worker serving a model")["id"]
        yield u, redis, model
    finally:
        u.stop()
        redis.stop()


def ask(url: str, model: str, stream: bool = False) -> httpx.Response:
    body = {"model": model, "messages": [{"role": "user", "content": QUESTION}],
            "temperature": 0, "max_tokens": 8, "stream": stream}
    return httpx.post(url + "/v1/chat/completions", json=body, timeout=60)


def audits(url: str, result: str) -> float:
    return metric_sum(metrics(url), AUDITS, result=result)


def test_a_wrong_entry_hit_is_audited_as_a_disagreement(setup):
    u, redis, model = setup
    first = ask(u.url, model)
    assert first.headers["x-frugal-cache"] == "miss"
    answer = content_of(first)
    key = wait_for(lambda: entry_key(redis.port), 10, "the answer filed in Redis")

    # A correct hit, asked streamed: the client gets the replay, the audit (never streamed) agrees.
    t0 = time.monotonic()
    hit = ask(u.url, model, stream=True)
    assert hit.status_code == 200 and hit.headers["x-frugal-cache"] == "hit", hit.text[:300]
    assert "data: [DONE]" in hit.text
    wait_for(lambda: audits(u.url, "agree") >= 1, 30, "the correct hit audited as agree")
    assert audits(u.url, "disagree_numbers") == 0

    # The wrong entry: the stored response replaced by an answer with other numbers.
    stored = json.loads(resp(redis.port, "HGET", key, "response"))
    assert stored["content"] == answer
    stored["content"] = WRONG
    resp(redis.port, "HSET", key, "response", json.dumps(stored))

    t0 = time.monotonic()
    wrong = ask(u.url, model)
    served_s = time.monotonic() - t0
    assert wrong.headers["x-frugal-cache"] == "hit"
    assert content_of(wrong) == WRONG  # the cache served the wrong answer, at once
    assert served_s < 5
    wait_for(lambda: audits(u.url, "disagree_numbers") >= 1, 30,
             "the wrong hit audited as a disagreement")
    m = metrics(u.url)
    assert metric_sum(m, AUDITS, result="agree") == 1
    assert metric_sum(m, AUDITS, result="disagree_numbers") == 1
    assert metric_sum(m, AUDITS, result="disagree_meaning") == 0
    # The audits are not client requests: three asked, three answered, two of them hits.
    assert metric_sum(m, "frugal_gateway_requests_total") == 3
    assert metric_sum(m, "frugal_gateway_responses_total") == 3
    assert metric_sum(m, "frugal_gateway_cache_total", result="hit") == 2

    totals = httpx.get(u.url + "/status.json", timeout=10).json()["totals"]
    assert totals["requests"] == 3
    assert totals["cache_audited"] == 2
    assert totals["cache_audit_disagreements"] == 1
    assert totals["false_hit_rate"] == pytest.approx(0.5)
    lo, hi = totals["false_hit_rate_95"]
    assert 0 <= lo < 0.5 < hi <= 1

    # The entry still holds the wrong answer: the audit never stores.
    assert json.loads(resp(redis.port, "HGET", key, "response"))["content"] == WRONG

    # One log line for the disagreement, with both answers and no worker address.
    line = wait_for(lambda: next((l for l in u.err_lines if "cache audit" in l), None), 10,
                    "the disagreement logged")
    assert "disagree_numbers" in line and "424242" in line and answer[:20] in line, line
    assert "127.0.0.1" not in line, line


def test_audits_in_flight_are_capped(tmp_path):
    """--cache-audit-max-in-flight 1 with a slow worker: of five hits drawn for audit in a burst,
    one is sent to the worker and the others are counted `capped`, not sent; when that audit is
    done the next hit is audited again. The clients' hits never wait for any of it."""
    require_file(SMOLLM2_GGUF)
    require_file(E5_FILE)
    u = Up("--workers", 1, "-m", SMOLLM2_GGUF, "--simulate", "decode_ms=250",
           "--health-interval-ms", 100, "--cache-audit-rate", 1, "--cache-audit-max-in-flight", 1)
    try:
        model = wait_for(lambda: (httpx.get(u.url + "/v1/models").json()["data"] or [None])[0],
                         60, "a worker serving a model")["id"]
        assert ask(u.url, model).headers["x-frugal-cache"] == "miss"  # filed (in memory)
        wait_for(lambda: ask(u.url, model).headers["x-frugal-cache"] == "hit", 20,
                 "the answer filed in the cache")  # this hit starts the one audit in flight
        t0 = time.monotonic()
        for _ in range(4):
            r = ask(u.url, model)
            assert r.headers["x-frugal-cache"] == "hit"
        burst_s = time.monotonic() - t0
        assert burst_s < 2, burst_s  # an 8-token audit takes the worker about 2 s
        m = metrics(u.url)
        assert metric_sum(m, AUDITS, result="capped") == 4
        wait_for(lambda: audits(u.url, "agree") >= 1, 30, "the one audit sent, agreeing")
        totals = httpx.get(u.url + "/status.json", timeout=10).json()["totals"]
        assert totals["cache_audits_capped"] == 4 and totals["cache_audited"] == 1
        # Its place is free again: the next hit is audited, not capped.
        assert ask(u.url, model).headers["x-frugal-cache"] == "hit"
        wait_for(lambda: audits(u.url, "agree") >= 2, 30, "the next hit audited")
        assert audits(u.url, "capped") == 4
    finally:
        u.stop()
