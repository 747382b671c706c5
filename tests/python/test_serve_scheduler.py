"""The worker's engine loop, black box: chunked prefill keeps others decoding, admission by free
KV blocks (waiting, never failing), and a request larger than the whole KV pool refused at once.

Each property is counted in tokens and steps, not timed: one decode token per running sequence
per step, `--prefill-chunk` prompt tokens per step.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from test_serve import COUNTING, HTTP_TIMEOUT, assert_error_json, queue_depth_json, sse_events


@pytest.fixture(scope="module")
def chunked(frugal_server, smollm2_gguf):
    with frugal_server(smollm2_gguf, "--prefill-chunk", "32", "--max-batch", "4", "--ctx", "2048") as srv:
        yield srv


def test_long_prompt_prefills_in_chunks_while_others_decode(chunked):
    """A streams (counting, greedy, long). B arrives with a ~1000-token prompt: its prefill takes
    about 1000 / 32 steps, and A must receive about one token per step meanwhile, instead of
    stalling until B's whole prompt is in."""
    a_times: list[float] = []
    a_started = threading.Event()

    def run_a():
        body = {"prompt": COUNTING, "max_tokens": 400, "temperature": 0, "stream": True}
        with httpx.Client(timeout=HTTP_TIMEOUT) as h:
            with h.stream("POST", chunked.base_url + "/v1/completions", json=body) as r:
                assert r.status_code == 200
                for ev in sse_events(r):
                    if ev == "[DONE]":
                        break
                    a_times.append(time.monotonic())
                    if len(a_times) == 5:
                        a_started.set()

    ta = threading.Thread(target=run_a)
    ta.start()
    assert a_started.wait(60), "A never started streaming"
    long_prompt = "The quick brown fox jumps over the lazy dog. " * 100  # ~1000 tokens
    b_submit = time.monotonic()
    with httpx.Client(timeout=HTTP_TIMEOUT) as h:
        b_first = None
        body = {"prompt": long_prompt, "max_tokens": 4, "temperature": 0, "stream": True}
        with h.stream("POST", chunked.base_url + "/v1/completions", json=body) as r:
            assert r.status_code == 200
            for ev in sse_events(r):
                if ev != "[DONE]" and json.loads(ev)["choices"][0]["text"]:
                    b_first = time.monotonic()
                    break
        assert b_first is not None
    ta.join(120)
    during = [t for t in a_times if b_submit < t < b_first]
    # ~31 prefill steps of B; one token of A each. Allow for steps before B's admission and
    # tokens held back by the text stream.
    assert len(during) >= 15, (
        f"A got {len(during)} tokens while B's ~1000-token prompt was prefilled: not chunked")


@pytest.fixture(scope="module")
def small_kv(frugal_server, smollm2_gguf):
    # 8 blocks of 16 positions: one request of ~40 prompt + 64 new tokens (7 blocks) at a time.
    with frugal_server(smollm2_gguf, "--kv-blocks", "8", "--max-batch", "4") as srv:
        yield srv


def test_requests_wait_for_kv_blocks_and_all_complete(small_kv):
    n = 3
    seen_waiting = []
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            q = queue_depth_json(small_kv)
            seen_waiting.append((q["waiting"], q["running"], q["kv_blocks_free"]))
            time.sleep(0.02)

    def one(i):
        body = {"messages": [{"role": "user", "content": f"Count from {i} to {i + 40}."}],
                "max_tokens": 64, "temperature": 0}
        with httpx.Client(timeout=HTTP_TIMEOUT) as h:
            return h.post(small_kv.base_url + "/v1/chat/completions", json=body)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with ThreadPoolExecutor(max_workers=n) as pool:
            responses = list(pool.map(one, range(n)))
    finally:
        stop.set()
        watcher.join()
    assert [r.status_code for r in responses] == [200] * n, [r.text[:200] for r in responses]
    for r in responses:
        assert r.json()["choices"][0]["message"]["content"], r.json()
    # Never two at once (the pool holds one reservation), and someone waited meanwhile.
    assert max(run for _, run, _ in seen_waiting) == 1, seen_waiting[:50]
    assert any(w >= 1 for w, _, _ in seen_waiting), "no request ever waited for KV blocks"
    q = queue_depth_json(small_kv)
    assert q["kv_blocks_free"] == q["kv_blocks_total"] == 8, q


def test_request_larger_than_the_kv_pool_is_refused(small_kv):
    body = {"prompt": "Hello", "max_tokens": 500, "temperature": 0}
    with httpx.Client(timeout=HTTP_TIMEOUT) as h:
        r = h.post(small_kv.base_url + "/v1/completions", json=body)
    err = assert_error_json(r, 400, "a request needing more KV blocks than the pool has")
    assert "KV" in err["message"], err


@pytest.fixture(scope="module")
def short_deadline(frugal_server, smollm2_gguf):
    with frugal_server(smollm2_gguf, "--request-timeout", "0.5", "--ctx", "4096") as srv:
        yield srv


def test_request_past_its_deadline_gets_504_and_frees_its_slot(short_deadline):
    body = {"prompt": COUNTING, "max_tokens": 3000, "temperature": 0}
    with httpx.Client(timeout=HTTP_TIMEOUT) as h:
        t0 = time.monotonic()
        r = h.post(short_deadline.base_url + "/v1/completions", json=body)
        elapsed = time.monotonic() - t0
        assert_error_json(r, 504, "a request running past --request-timeout 0.5")
        assert elapsed < 10, elapsed
        # Streaming: the headers are out, so the timeout arrives as an error event, then [DONE].
        with h.stream("POST", short_deadline.base_url + "/v1/completions", json={**body, "stream": True}) as s:
            assert s.status_code == 200
            events = list(sse_events(s))
        assert events[-1] == "[DONE]", events[-3:]
        err = json.loads(events[-2])
        assert "error" in err and err["error"]["message"], events[-2]
        q = queue_depth_json(short_deadline)
        assert q["running"] == 0 and q["kv_blocks_free"] == q["kv_blocks_total"], q
        ok = h.post(short_deadline.base_url + "/v1/completions",
                    json={"prompt": "Hello", "max_tokens": 2, "temperature": 0})
        assert ok.status_code == 200, ok.text


@pytest.fixture(scope="module")
def tight_backlog(frugal_server, smollm2_gguf):
    with frugal_server(smollm2_gguf, "--max-backlog-ms", "50") as srv:
        yield srv


def test_backlog_limit_never_refuses_an_idle_server(tight_backlog):
    """A request whose own estimate is over --max-backlog-ms is still taken when nothing is
    ahead of it: a 503 there could never clear on retry."""
    with httpx.Client(timeout=HTTP_TIMEOUT) as h:
        q = queue_depth_json(tight_backlog)
        assert q["backlog_ms"] == 0 and q["decode_ms_per_token"] * 64 > 50, q
        r = h.post(tight_backlog.base_url + "/v1/completions",
                   json={"prompt": COUNTING, "max_tokens": 64, "temperature": 0})
        assert r.status_code == 200, r.text
