"""`frugal serve`, black box, through the official `openai` client and raw HTTP (httpx).

Each server runs as a subprocess on 127.0.0.1 with `--port 0` (conftest.FrugalServer) and is
shared by the tests of one group (module-scoped fixtures), so the model loads a few times only:

  smol      SmolLM2-135M GGUF, default flags but `--max-body-bytes 65536`
  tiny_ctx  SmolLM2 with `--ctx 256 --served-model-name tiny-ctx`
  bp        SmolLM2 with `--max-queue 2 --max-batch 1` (backpressure: 503 + Retry-After)
  dc        SmolLM2 with `--max-batch 4 --ctx 4096` (client disconnect -> cancelled, 499)
  backlog   SmolLM2 with `--max-backlog-ms 3000` (estimated backlog -> 503)
  minilm    all-MiniLM-L6-v2 (embeddings)

Generation is greedy (temperature 0) wherever a test compares texts, and max_tokens stays
small: the whole file runs in about 25 s on two idle cores (about 2 minutes while a compiler
shares them). The servers of a group live until the end of the module.
"""

from __future__ import annotations

import json
import math
import signal
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import SMOLLM2_GGUF, MINILM_DIR

CLIENT_TIMEOUT_S = 120
HTTP_TIMEOUT = httpx.Timeout(CLIENT_TIMEOUT_S, connect=10)

CHAT_PROMPT = "What is the capital of France? Answer in one sentence."
STORY = "Once upon a time, in a small village by the sea,"
COUNTING = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10,"


# ---------------------------------------------------------------------------------------------
# helpers

def make_client(srv) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.base_url + "/v1", api_key="sk-no-key-needed",
                         max_retries=0, timeout=CLIENT_TIMEOUT_S)


def only_model_id(client: openai.OpenAI) -> str:
    models = client.models.list().data
    assert len(models) == 1, f"expected one model, got {[m.id for m in models]}"
    return models[0].id


def chat(client, model, content, **kw):
    kw.setdefault("temperature", 0)
    kw.setdefault("max_tokens", 16)
    return client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": content}], **kw)


def sse_events(response: httpx.Response):
    """The `data:` payloads of an SSE response, in order (comment lines skipped)."""
    for line in response.iter_lines():
        if not line or line.startswith(":"):
            continue
        assert line.startswith("data:"), f"not an SSE data line: {line!r}"
        yield line[5:].strip()


def assert_error_json(r: httpx.Response, status: int, what: str) -> dict:
    """The response has `status` and an OpenAI-shaped JSON error body; returns body["error"]."""
    assert r.status_code == status, (
        f"{what}: status {r.status_code} (expected {status}); body {r.text[:500]!r}")
    ctype = r.headers.get("content-type", "")
    assert ctype.startswith("application/json"), f"{what}: content-type {ctype!r}"
    body = r.json()
    assert isinstance(body, dict) and isinstance(body.get("error"), dict), (
        f"{what}: body is not {{'error': {{...}}}}: {body!r}")
    err = body["error"]
    assert isinstance(err.get("message"), str) and err["message"], f"{what}: {err!r}"
    assert isinstance(err.get("type"), str) and err["type"], f"{what}: {err!r}"
    assert "param" in err and "code" in err, f"{what}: error lacks param/code: {err!r}"
    return err


def metrics(srv) -> dict:
    """Family name -> prometheus_client Metric, from GET /metrics."""
    r = httpx.get(srv.base_url + "/metrics", timeout=HTTP_TIMEOUT)
    assert r.status_code == 200, r.text[:500]
    return {f.name: f for f in text_string_to_metric_families(r.text)}


def sample_value(fams: dict, family: str, sample: str, **labels) -> float:
    """Sum of the samples named `sample` in `family` whose labels include `labels`."""
    assert family in fams, f"metric family {family!r} missing; have {sorted(fams)}"
    return sum(s.value for s in fams[family].samples
               if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()))


def queue_depth_json(srv) -> dict:
    r = httpx.get(srv.base_url + "/queue_depth", headers={"Accept": "application/json"},
                  timeout=HTTP_TIMEOUT)
    assert r.status_code == 200, r.text[:500]
    assert r.headers.get("content-type", "").startswith("application/json"), r.headers
    return r.json()


# ---------------------------------------------------------------------------------------------
# the main SmolLM2 server

@pytest.fixture(scope="module")
def smol(frugal_server, smollm2_gguf):
    with frugal_server(smollm2_gguf, "--max-body-bytes", "65536") as srv:
        yield srv


@pytest.fixture(scope="module")
def client(smol):
    with make_client(smol) as c:
        yield c


@pytest.fixture(scope="module")
def model_id(client):
    return only_model_id(client)


@pytest.fixture(scope="module")
def greedy_chat(client, model_id):
    """The non-streaming greedy answer to CHAT_PROMPT (max_tokens 16)."""
    return chat(client, model_id, CHAT_PROMPT, max_tokens=16)


def test_models_list(client, model_id):
    assert model_id == SMOLLM2_GGUF.stem, (
        f"default served model name {model_id!r}, expected the file stem {SMOLLM2_GGUF.stem!r}")
    m = client.models.list().data[0]
    assert m.object == "model", m


def test_chat_non_streaming(greedy_chat):
    r = greedy_chat
    assert r.object == "chat.completion", r
    assert len(r.choices) == 1, r
    ch = r.choices[0]
    assert ch.message.role == "assistant", ch
    text = ch.message.content
    assert isinstance(text, str) and text.strip(), f"empty content: {r!r}"
    assert "<|im_" not in text, f"template tokens leaked into the answer: {text!r}"
    assert ch.finish_reason in ("stop", "length"), ch
    u = r.usage
    assert u.prompt_tokens > 0, u
    assert 0 < u.completion_tokens <= 16, u
    assert u.total_tokens == u.prompt_tokens + u.completion_tokens, u
    if ch.finish_reason == "length":
        assert u.completion_tokens == 16, u


def test_chat_streaming_equals_non_streaming(client, model_id, greedy_chat):
    chunks = list(chat(client, model_id, CHAT_PROMPT, max_tokens=16, stream=True))
    assert len(chunks) >= 2, chunks
    assert all(c.object == "chat.completion.chunk" for c in chunks), chunks
    assert len({c.id for c in chunks}) == 1, "chunk ids differ within one stream"
    with_choices = [c for c in chunks if c.choices]
    assert with_choices[0].choices[0].delta.role == "assistant", with_choices[0]
    text = "".join(c.choices[0].delta.content or "" for c in with_choices)
    assert text == greedy_chat.choices[0].message.content, (
        f"stream {text!r} != non-stream {greedy_chat.choices[0].message.content!r}")
    assert with_choices[-1].choices[0].finish_reason == greedy_chat.choices[0].finish_reason
    assert all(c.choices[0].finish_reason is None for c in with_choices[:-1]), (
        "finish_reason set before the last chunk")


def test_chat_streaming_include_usage(client, model_id, greedy_chat):
    chunks = list(chat(client, model_id, CHAT_PROMPT, max_tokens=16, stream=True,
                       stream_options={"include_usage": True}))
    last = chunks[-1]
    assert last.usage is not None, f"no usage in the last chunk: {last!r}"
    assert last.choices == [], f"the usage chunk must have empty choices: {last!r}"
    assert last.usage.completion_tokens == greedy_chat.usage.completion_tokens, last.usage
    assert last.usage.prompt_tokens == greedy_chat.usage.prompt_tokens, last.usage
    assert all(c.usage is None for c in chunks[:-1]), "usage before the last chunk"


def test_chat_raw_sse_ends_with_done(smol, model_id, greedy_chat):
    body = {"model": model_id, "messages": [{"role": "user", "content": CHAT_PROMPT}],
            "max_tokens": 16, "temperature": 0, "stream": True}
    with httpx.Client(timeout=HTTP_TIMEOUT) as h:
        with h.stream("POST", smol.base_url + "/v1/chat/completions", json=body) as r:
            assert r.status_code == 200, r.read()[:500]
            assert r.headers.get("content-type", "").startswith("text/event-stream"), r.headers
            events = list(sse_events(r))
    assert events[-1] == "[DONE]", f"last SSE event {events[-1]!r}"
    assert events.count("[DONE]") == 1, events
    parsed = [json.loads(e) for e in events[:-1]]
    text = "".join(p["choices"][0]["delta"].get("content") or "" for p in parsed if p["choices"])
    assert text == greedy_chat.choices[0].message.content


def test_completions_streaming_equals_non_streaming(client, model_id):
    r = client.completions.create(model=model_id, prompt=STORY, max_tokens=16, temperature=0)
    assert r.object == "text_completion", r
    text = r.choices[0].text
    assert isinstance(text, str) and text.strip(), r
    assert r.choices[0].finish_reason in ("stop", "length"), r
    u = r.usage
    assert u.total_tokens == u.prompt_tokens + u.completion_tokens, u
    assert 0 < u.completion_tokens <= 16 and u.prompt_tokens > 0, u

    chunks = list(client.completions.create(model=model_id, prompt=STORY, max_tokens=16,
                                            temperature=0, stream=True))
    assert len(chunks) >= 2, chunks
    assert all(c.object == "text_completion" for c in chunks), chunks
    streamed = "".join(c.choices[0].text for c in chunks if c.choices)
    assert streamed == text, f"stream {streamed!r} != non-stream {text!r}"
    assert [c for c in chunks if c.choices][-1].choices[0].finish_reason == \
        r.choices[0].finish_reason


def test_completions_raw_sse_ends_with_done(smol, model_id):
    body = {"model": model_id, "prompt": STORY, "max_tokens": 8, "temperature": 0,
            "stream": True}
    with httpx.Client(timeout=HTTP_TIMEOUT) as h:
        with h.stream("POST", smol.base_url + "/v1/completions", json=body) as r:
            assert r.status_code == 200, r.read()[:500]
            events = list(sse_events(r))
    assert events[-1] == "[DONE]", events[-3:]
    assert all(json.loads(e)["object"] == "text_completion" for e in events[:-1]), events


@pytest.fixture(scope="module")
def story_greedy(client, model_id):
    r = client.completions.create(model=model_id, prompt=STORY, max_tokens=24, temperature=0)
    return r.choices[0].text


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_stop_string(client, model_id, story_greedy, stream):
    # A word from the middle of the greedy continuation as the stop string: the answer is the
    # text before its first occurrence, and finish_reason is "stop".
    words = story_greedy.split()
    assert len(words) >= 6, story_greedy
    stop = " " + words[len(words) // 2]
    cut = story_greedy.index(stop)
    kw = dict(model=model_id, prompt=STORY, max_tokens=24, temperature=0, stop=[stop])
    if stream:
        chunks = [c for c in client.completions.create(stream=True, **kw) if c.choices]
        text = "".join(c.choices[0].text for c in chunks)
        finish = chunks[-1].choices[0].finish_reason
    else:
        r = client.completions.create(**kw)
        text, finish = r.choices[0].text, r.choices[0].finish_reason
    assert stop not in text, f"stop string {stop!r} in {text!r}"
    assert text == story_greedy[:cut], (text, stop, story_greedy)
    assert finish == "stop", finish


def test_stop_string_chat(client, model_id, greedy_chat):
    full = greedy_chat.choices[0].message.content
    words = full.split()
    if len(words) < 3:
        pytest.fail(f"greedy chat answer too short to pick a stop word: {full!r}")
    stop = words[len(words) // 2]
    r = chat(client, model_id, CHAT_PROMPT, max_tokens=16, stop=stop)
    text = r.choices[0].message.content
    assert stop not in text, (stop, text)
    assert text == full[:full.index(stop)], (text, stop, full)
    assert r.choices[0].finish_reason == "stop", r.choices[0]


def test_seed_repeatable(client, model_id):
    kw = dict(model=model_id, prompt=STORY, max_tokens=16, temperature=0.8, seed=1234)
    a = client.completions.create(**kw).choices[0].text
    b = client.completions.create(**kw).choices[0].text
    assert a == b, (a, b)
    assert a.strip(), a


def test_sampling_depends_on_seed(client, model_id):
    # Four 16-token samples at temperature 1 all equal would mean seed/temperature are ignored.
    outs = {client.completions.create(model=model_id, prompt=STORY, max_tokens=16,
                                      temperature=1.0, seed=s).choices[0].text
            for s in (1, 2, 3, 4)}
    assert len(outs) >= 2, outs


def test_concurrent_equals_sequential(client, model_id):
    """32 different greedy requests at once return exactly what they return one by one."""
    prompts = [f"Tell me about the number {i}" for i in range(32)]

    def one(p):
        r = chat(client, model_id, p, max_tokens=24)
        return r.choices[0].message.content, r.choices[0].finish_reason, r.usage.completion_tokens

    sequential = [one(p) for p in prompts]
    with ThreadPoolExecutor(max_workers=32) as pool:
        concurrent = list(pool.map(one, prompts))
    assert all(s[0].strip() for s in sequential), sequential
    diffs = [(i, s, c) for i, (s, c) in enumerate(zip(sequential, concurrent)) if s != c]
    assert not diffs, (f"{len(diffs)}/32 concurrent answers differ from the sequential ones; "
                       f"first: prompt {diffs[0][0]}: sequential {diffs[0][1]!r}, "
                       f"concurrent {diffs[0][2]!r}")


def test_optional_fields_accepted(client, model_id, greedy_chat):
    # user, top_p, a seed and stop=None change nothing for a greedy request.
    r = chat(client, model_id, CHAT_PROMPT, max_tokens=16, user="user-1234", top_p=0.9, seed=7,
             stop=None)
    assert r.choices[0].message.content == greedy_chat.choices[0].message.content


# ---- errors ---------------------------------------------------------------------------------

def test_unknown_model_is_404(client):
    with pytest.raises(openai.NotFoundError) as e:
        chat(client, "no-such-model", "hi")
    assert e.value.code == "model_not_found", e.value.body
    with pytest.raises(openai.NotFoundError):
        client.completions.create(model="no-such-model", prompt="hi", max_tokens=4)


def test_empty_messages_is_400(client, model_id):
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model=model_id, messages=[], max_tokens=4)


@pytest.mark.parametrize("max_tokens", [0, -1, 10_000_000], ids=["zero", "negative", "huge"])
def test_bad_max_tokens_is_400(client, model_id, max_tokens):
    with pytest.raises(openai.BadRequestError):
        chat(client, model_id, "hi", max_tokens=max_tokens)
    with pytest.raises(openai.BadRequestError):
        client.completions.create(model=model_id, prompt="hi", max_tokens=max_tokens)


def test_n_other_than_one_is_400(client, model_id):
    with pytest.raises(openai.BadRequestError):
        chat(client, model_id, "hi", max_tokens=4, n=2)


def test_temperature_string_is_400(smol, model_id):
    body = {"model": model_id, "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 4, "temperature": "hot"}
    r = httpx.post(smol.base_url + "/v1/chat/completions", json=body, timeout=HTTP_TIMEOUT)
    assert_error_json(r, 400, "temperature as a string")


@pytest.mark.parametrize("raw", [b'{"model": "x", "messages": [', b"not json at all", b"",
                                 b"[1, 2, 3]"], ids=["truncated", "text", "empty", "array"])
def test_malformed_json_is_400(smol, raw):
    r = httpx.post(smol.base_url + "/v1/chat/completions", content=raw,
                   headers={"Content-Type": "application/json"}, timeout=HTTP_TIMEOUT)
    assert_error_json(r, 400, f"body {raw!r}")


def test_body_over_limit_is_413(smol, model_id):
    body = json.dumps({"model": model_id, "max_tokens": 4,
                       "messages": [{"role": "user", "content": "x" * 100_000}]}).encode()
    assert len(body) > 65536
    r = httpx.post(smol.base_url + "/v1/chat/completions", content=body,
                   headers={"Content-Type": "application/json"}, timeout=HTTP_TIMEOUT)
    assert_error_json(r, 413, "100 KB body, limit 64 KiB")


def test_unknown_path_is_404(smol):
    r = httpx.get(smol.base_url + "/v1/no/such/path", timeout=HTTP_TIMEOUT)
    assert_error_json(r, 404, "GET unknown path")
    r = httpx.post(smol.base_url + "/v2/chat/completions", json={}, timeout=HTTP_TIMEOUT)
    assert_error_json(r, 404, "POST unknown path")


def test_wrong_method_is_405(smol):
    r = httpx.get(smol.base_url + "/v1/chat/completions", timeout=HTTP_TIMEOUT)
    assert_error_json(r, 405, "GET /v1/chat/completions")


def test_embeddings_on_generative_model_is_400(client, model_id):
    with pytest.raises(openai.BadRequestError):
        client.embeddings.create(model=model_id, input=["a", "b"])


def test_normal_request_after_errors(client, model_id, greedy_chat):
    # Every error above must have left the server as it was: same greedy answer.
    r = chat(client, model_id, CHAT_PROMPT, max_tokens=16)
    assert r.choices[0].message.content == greedy_chat.choices[0].message.content


# ---- health, queue depth, metrics -----------------------------------------------------------

def test_health_and_ready(smol):
    for path in ("/health", "/ready"):
        r = httpx.get(smol.base_url + path, timeout=HTTP_TIMEOUT)
        assert r.status_code == 200, (path, r.status_code, r.text[:200])


def test_queue_depth_plain(smol):
    r = httpx.get(smol.base_url + "/queue_depth", timeout=HTTP_TIMEOUT)
    assert r.status_code == 200, r.text[:200]
    assert r.headers.get("content-type", "").startswith("text/plain"), r.headers
    assert r.text.strip().isdigit(), f"/queue_depth body {r.text!r} is not a non-negative integer"
    assert int(r.text.strip()) == 0, "nothing is running, yet queue depth is not 0"


def test_queue_depth_json(smol, greedy_chat):
    q = queue_depth_json(smol)
    keys = ["waiting", "running", "backlog_ms", "prefill_ms_per_token", "decode_ms_per_token",
            "kv_blocks_free", "kv_blocks_total"]
    for k in keys:
        assert k in q, f"/queue_depth JSON lacks {k!r}: {q}"
        assert isinstance(q[k], (int, float)) and not isinstance(q[k], bool), (k, q)
        assert q[k] >= 0, (k, q)
    assert q["waiting"] == 0 and q["running"] == 0, q
    # greedy_chat has run: both per-token cost estimates have been measured.
    assert q["prefill_ms_per_token"] > 0, q
    assert q["decode_ms_per_token"] > 0, q
    assert 0 < q["kv_blocks_total"] and q["kv_blocks_free"] <= q["kv_blocks_total"], q
    assert q["kv_blocks_free"] == q["kv_blocks_total"], f"KV blocks leaked when idle: {q}"


HISTOGRAMS = ["frugal_time_to_first_token_seconds", "frugal_time_per_output_token_seconds",
              "frugal_request_duration_seconds"]


def test_metrics_families(smol, greedy_chat):
    fams = metrics(smol)
    expected = {"frugal_requests": "counter", "frugal_prompt_tokens": "counter",
                "frugal_generation_tokens": "counter", "frugal_requests_waiting": "gauge",
                "frugal_requests_running": "gauge", "frugal_kv_cache_usage_ratio": "gauge",
                **{h: "histogram" for h in HISTOGRAMS}}
    for name, typ in expected.items():
        assert name in fams, f"/metrics lacks {name!r}; families: {sorted(fams)}"
        assert fams[name].type == typ, f"{name} is {fams[name].type}, expected {typ}"
    reqs = fams["frugal_requests"].samples
    assert reqs and all("status" in s.labels for s in reqs), reqs
    assert sample_value(fams, "frugal_requests", "frugal_requests_total", status="200") >= 1
    ratio = sample_value(fams, "frugal_kv_cache_usage_ratio", "frugal_kv_cache_usage_ratio")
    assert 0 <= ratio <= 1, ratio
    for h in HISTOGRAMS:
        buckets = [s for s in fams[h].samples if s.name == h + "_bucket"]
        assert buckets, f"{h} has no buckets"
        les = [float(s.labels["le"]) for s in buckets]
        counts = [s.value for s in buckets]
        assert les == sorted(les) and math.isinf(les[-1]), les
        assert counts == sorted(counts), f"{h}: bucket counts not cumulative: {counts}"
        assert counts[-1] == sample_value(fams, h, h + "_count"), h


def test_metrics_increase_after_a_request(smol, client, model_id):
    before = metrics(smol)
    r = chat(client, model_id, "Name three colors.", max_tokens=12)
    assert r.usage.completion_tokens >= 2, r.usage
    after = metrics(smol)

    def delta(fam, sample, **labels):
        return (sample_value(after, fam, sample, **labels)
                - sample_value(before, fam, sample, **labels))

    assert delta("frugal_requests", "frugal_requests_total", status="200") >= 1
    # One TTFT and one duration per request; time per output token may be observed per
    # request or per token, so it only has to grow.
    for h in HISTOGRAMS:
        assert delta(h, h + "_count") >= 1, f"{h}_count did not grow"
        assert delta(h, h + "_sum") > 0, f"{h}_sum did not grow"
    assert delta("frugal_time_to_first_token_seconds",
                 "frugal_time_to_first_token_seconds_count") == 1
    assert delta("frugal_request_duration_seconds", "frugal_request_duration_seconds_count") == 1
    assert delta("frugal_prompt_tokens", "frugal_prompt_tokens_total") == r.usage.prompt_tokens
    assert delta("frugal_generation_tokens", "frugal_generation_tokens_total") == \
        r.usage.completion_tokens
    assert sample_value(after, "frugal_requests_running", "frugal_requests_running") == 0
    assert sample_value(after, "frugal_requests_waiting", "frugal_requests_waiting") == 0


# ---------------------------------------------------------------------------------------------
# a 256-token context

@pytest.fixture(scope="module")
def tiny_ctx(frugal_server, smollm2_gguf):
    with frugal_server(smollm2_gguf, "--ctx", "256", "--served-model-name", "tiny-ctx") as srv:
        yield srv


@pytest.fixture(scope="module")
def tiny_client(tiny_ctx):
    with make_client(tiny_ctx) as c:
        yield c


def test_served_model_name(tiny_client):
    assert only_model_id(tiny_client) == "tiny-ctx"
    with pytest.raises(openai.NotFoundError):
        chat(tiny_client, SMOLLM2_GGUF.stem, "hi", max_tokens=4)


def test_prompt_longer_than_context_is_400(tiny_client):
    long_text = "the cat sat on the mat and " * 100  # ~800 tokens
    with pytest.raises(openai.BadRequestError):
        chat(tiny_client, "tiny-ctx", long_text, max_tokens=4)
    with pytest.raises(openai.BadRequestError):
        tiny_client.completions.create(model="tiny-ctx", prompt=long_text, max_tokens=4)


def test_prompt_plus_max_tokens_beyond_context_is_400(tiny_client):
    with pytest.raises(openai.BadRequestError):
        tiny_client.completions.create(model="tiny-ctx", prompt=STORY, max_tokens=250)


def test_default_max_tokens_fits_the_context(tiny_client):
    # No max_tokens: the default is capped by the room left in the context, so this is no
    # error (a short answer keeps the test fast; the check happens before generation).
    r = tiny_client.chat.completions.create(
        model="tiny-ctx", messages=[{"role": "user", "content": "Say hello."}], temperature=0)
    u = r.usage
    assert u.completion_tokens > 0, u
    assert u.prompt_tokens + u.completion_tokens <= 256, u


def test_tiny_ctx_still_serves(tiny_client):
    r = chat(tiny_client, "tiny-ctx", CHAT_PROMPT, max_tokens=8)
    assert r.choices[0].message.content.strip(), r


# ---------------------------------------------------------------------------------------------
# backpressure: one running sequence, a queue of two

@pytest.fixture(scope="module")
def bp(frugal_server, smollm2_gguf):
    with frugal_server(smollm2_gguf, "--max-queue", "2", "--max-batch", "1") as srv:
        yield srv


@pytest.fixture(scope="module")
def bp_client(bp):
    with make_client(bp) as c:
        yield c


def test_backpressure_503_with_retry_after(bp, bp_client):
    model = only_model_id(bp_client)
    n = 12
    barrier = threading.Barrier(n)

    def one(i):
        body = {"model": model, "max_tokens": 32, "temperature": 0,
                "messages": [{"role": "user", "content": f"Tell me about the number {i}"}]}
        with httpx.Client(timeout=HTTP_TIMEOUT) as h:
            barrier.wait(30)
            return h.post(bp.base_url + "/v1/chat/completions", json=body)

    with ThreadPoolExecutor(max_workers=n) as pool:
        responses = list(pool.map(one, range(n)))
    statuses = [r.status_code for r in responses]
    assert all(s in (200, 503) for s in statuses), statuses
    assert statuses.count(503) >= 1, f"no 503 from 12 requests on a queue of 2: {statuses}"
    assert statuses.count(200) >= 1, statuses
    for r in responses:
        if r.status_code == 503:
            assert_error_json(r, 503, "queue full")
            ra = r.headers.get("retry-after")
            assert ra is not None and ra.strip(), f"503 without Retry-After: {r.headers}"
        else:
            b = r.json()
            assert b["choices"][0]["message"]["content"], b
            assert b["usage"]["completion_tokens"] > 0, b
            assert b["choices"][0]["finish_reason"] in ("stop", "length"), b
    fams = metrics(bp)
    assert sample_value(fams, "frugal_requests", "frugal_requests_total", status="503") == \
        statuses.count(503)
    q = queue_depth_json(bp)
    assert q["waiting"] == 0 and q["running"] == 0 and q["backlog_ms"] == 0, q
    # The queue drains and the server serves again.
    r = chat(bp_client, model, CHAT_PROMPT, max_tokens=8)
    assert r.choices[0].message.content, r


# ---------------------------------------------------------------------------------------------
# client disconnect mid-stream

@pytest.fixture(scope="module")
def dc(frugal_server, smollm2_gguf):
    with frugal_server(smollm2_gguf, "--max-batch", "4", "--ctx", "4096") as srv:
        yield srv


@pytest.fixture(scope="module")
def dc_client(dc):
    with make_client(dc) as c:
        yield c


def test_disconnect_cancels_request(dc, dc_client):
    model = only_model_id(dc_client)
    # Counting, greedy: the model keeps going far past the few chunks read here.
    body = {"model": model, "prompt": COUNTING, "max_tokens": 2000, "temperature": 0,
            "stream": True}
    got = 0
    with httpx.Client(timeout=HTTP_TIMEOUT) as h:
        with h.stream("POST", dc.base_url + "/v1/completions", json=body) as r:
            assert r.status_code == 200, r.read()[:500]
            for ev in sse_events(r):
                assert ev != "[DONE]", "the stream ended before the client closed it"
                got += 1
                if got == 3:
                    break
    # Client and connection closed: the engine must drop the sequence promptly.
    assert got == 3
    deadline = time.monotonic() + 10
    q = queue_depth_json(dc)
    while (q["running"] or q["waiting"]) and time.monotonic() < deadline:
        time.sleep(0.1)
        q = queue_depth_json(dc)
    assert q["running"] == 0 and q["waiting"] == 0, (
        f"request still scheduled 10 s after the client went away: {q}")
    assert q["kv_blocks_free"] == q["kv_blocks_total"], f"KV blocks not freed: {q}"
    assert q["backlog_ms"] == 0, f"the cancelled request's work is still in the backlog: {q}"
    fams = metrics(dc)
    assert sample_value(fams, "frugal_requests", "frugal_requests_total", status="499") >= 1, (
        [s for s in fams["frugal_requests"].samples])
    # And the server still answers.
    r = dc_client.completions.create(model=model, prompt=STORY, max_tokens=8,
                                           temperature=0)
    assert r.choices[0].text.strip(), r


# ---------------------------------------------------------------------------------------------
# backlog limit: 503 when the estimated work ahead would pass --max-backlog-ms

@pytest.fixture(scope="module")
def backlog(frugal_server, smollm2_gguf):
    with frugal_server(smollm2_gguf, "--max-backlog-ms", "3000") as srv:
        yield srv


def test_backlog_limit_503(backlog):
    with make_client(backlog) as c:
        model = only_model_id(c)
        # A short request alone measures the per-token costs (and is far under the limit).
        assert chat(c, model, CHAT_PROMPT, max_tokens=8).choices[0].message.content
    q = queue_depth_json(backlog)
    assert q["decode_ms_per_token"] > 0 and q["backlog_ms"] == 0, q
    # 24 x 64 tokens is over 3 s of decoding at any plausible speed (> 2 ms a token).
    n = 24
    barrier = threading.Barrier(n)

    def one(i):
        body = {"model": model, "max_tokens": 64, "temperature": 0,
                "messages": [{"role": "user", "content": f"Tell me about the number {i}"}]}
        with httpx.Client(timeout=HTTP_TIMEOUT) as h:
            barrier.wait(30)
            return h.post(backlog.base_url + "/v1/chat/completions", json=body)

    with ThreadPoolExecutor(max_workers=n) as pool:
        responses = list(pool.map(one, range(n)))
    statuses = [r.status_code for r in responses]
    assert all(s in (200, 503) for s in statuses), statuses
    assert statuses.count(503) >= 1, f"no 503 over a 3 s backlog limit: {statuses}"
    for r in responses:
        if r.status_code == 503:
            assert_error_json(r, 503, "backlog over the limit")
            assert (r.headers.get("retry-after") or "").strip(), r.headers
        else:
            assert r.json()["usage"]["completion_tokens"] > 0, r.text[:300]
    q = queue_depth_json(backlog)
    assert q["waiting"] == 0 and q["running"] == 0 and q["backlog_ms"] == 0, q


# ---------------------------------------------------------------------------------------------
# embeddings (an encoder model)

@pytest.fixture(scope="module")
def minilm(frugal_server, minilm_dir):
    with frugal_server(minilm_dir) as srv:
        yield srv


@pytest.fixture(scope="module")
def minilm_client(minilm):
    with make_client(minilm) as c:
        yield c


def test_embeddings(minilm_client, frugal, minilm_dir):
    model = only_model_id(minilm_client)
    assert model == MINILM_DIR.name, model
    texts = ["a", "b"]
    r = minilm_client.embeddings.create(model=model, input=texts, encoding_format="float")
    assert len(r.data) == 2, r
    assert [d.index for d in r.data] == [0, 1], r.data
    vecs = np.array([d.embedding for d in r.data], dtype=np.float64)
    assert vecs.shape == (2, 384), vecs.shape
    norms = np.linalg.norm(vecs, axis=1)
    assert np.allclose(norms, 1.0, atol=1e-3), norms
    assert not np.allclose(vecs[0], vecs[1]), "two different texts, one vector"
    # The same vectors as `frugal embed` with the same (default) precision.
    cli = frugal.embed(minilm_dir, texts, activations="int8")
    cos = (vecs * cli).sum(axis=1) / (norms * np.linalg.norm(cli, axis=1))
    assert np.all(cos > 0.9999), cos


def test_embeddings_single_string(minilm_client):
    model = only_model_id(minilm_client)
    r = minilm_client.embeddings.create(model=model, input="A man is playing a guitar.")
    assert len(r.data) == 1 and len(r.data[0].embedding) == 384, r


def test_chat_on_encoder_is_400(minilm_client):
    model = only_model_id(minilm_client)
    with pytest.raises(openai.BadRequestError):
        chat(minilm_client, model, "hi", max_tokens=4)
    with pytest.raises(openai.BadRequestError):
        minilm_client.completions.create(model=model, prompt="hi", max_tokens=4)


# ---------------------------------------------------------------------------------------------
# shutdown

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_graceful_shutdown_exits_0(frugal_server, smollm2_gguf, sig):
    srv = frugal_server(smollm2_gguf, "--ctx", "512").start()
    try:
        with make_client(srv) as c:
            r = chat(c, only_model_id(c), "hi", max_tokens=4)
        assert r.choices[0].message.content is not None
        srv.proc.send_signal(sig)
        try:
            rc = srv.proc.wait(15)
        except subprocess.TimeoutExpired:
            rc = None
        assert rc == 0, f"exit status {rc} after {sig.name}\n{srv.log_tail()}"
    finally:
        srv.stop()


def test_sigterm_finishes_the_request_in_flight(frugal_server, smollm2_gguf):
    """Graceful: a stream running when SIGTERM arrives still ends normally ([DONE], all its
    tokens), and then the process exits 0."""
    srv = frugal_server(smollm2_gguf, "--ctx", "512").start()
    try:
        model = None
        with make_client(srv) as c:
            model = only_model_id(c)
        body = {"model": model, "prompt": COUNTING, "max_tokens": 32, "temperature": 0,
                "stream": True, "stream_options": {"include_usage": True}}
        events = []
        with httpx.Client(timeout=HTTP_TIMEOUT) as h:
            with h.stream("POST", srv.base_url + "/v1/completions", json=body) as r:
                assert r.status_code == 200, r.read()[:300]
                for ev in sse_events(r):
                    events.append(ev)
                    if len(events) == 2:
                        srv.proc.send_signal(signal.SIGTERM)
        assert events[-1] == "[DONE]", events[-3:]
        usage = [json.loads(e)["usage"] for e in events[:-1] if json.loads(e).get("usage")]
        assert usage and usage[-1]["completion_tokens"] == 32, (usage, events[-3:])
        try:
            rc = srv.proc.wait(30)
        except subprocess.TimeoutExpired:
            rc = None
        assert rc == 0, f"exit status {rc} after SIGTERM\n{srv.log_tail()}"
    finally:
        srv.stop()
