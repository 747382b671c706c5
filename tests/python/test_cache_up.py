"""The semantic cache's hit decisions through `frugal up` with its defaults (multilingual-e5-small
and its calibrated verifier), black box, with the official OpenAI client:

- a long pasted message is never answered from the cache entry of the same message with another
  ending, also when the ending lies past the embedder's 512-token window;
- a question with a qualifier added ("... for shoes?") misses the question without it;
- a Chinese paraphrase hits; 三百元 / 四百元 misses;
- POST /admin/cache/rotate moves a running cache from all-MiniLM-L6-v2 to multilingual-e5-small
  while it serves: no request fails, and an entry cached before the move answers afterwards.

Workers are simulated (canned answers): what is tested is the gateway's cache.
"""
from __future__ import annotations

import threading
import time

import httpx
import pytest
from openai import OpenAI

from conftest import E5_FILE, MINILM_DIR, SMOLLM2_GGUF, require_file
from test_up import Up

ADMIN = "cache-admin-token"


def ask(client: OpenAI, question: str) -> str:
    """The X-Frugal-Cache header ("hit" / "miss") of a deterministic chat request."""
    raw = client.chat.completions.with_raw_response.create(
        model=client.model_id, messages=[{"role": "user", "content": question}], temperature=0, max_tokens=8)
    raw.parse()
    return raw.headers.get("x-frugal-cache")


def connect(u: Up) -> OpenAI:
    client = OpenAI(base_url=u.url + "/v1", api_key="unused", max_retries=0, timeout=60)
    deadline = time.time() + 60
    models = []
    while time.time() < deadline and not models:
        models = httpx.get(u.url + "/v1/models").json()["data"]
        time.sleep(0.05)
    assert models, "no worker came up"
    client.model_id = models[0]["id"]
    return client


@pytest.fixture(scope="module")
def up():
    require_file(SMOLLM2_GGUF)
    require_file(E5_FILE)
    u = Up("--workers", 1, "-m", SMOLLM2_GGUF, "--simulate", "decode_ms=1", "--health-interval-ms", 100,
           "--admin-token", ADMIN)
    try:
        yield u, connect(u)
    finally:
        u.stop()


def body(words: int) -> str:
    lines = ["Order A-5521 arrived on Tuesday with the blue jacket in size medium, the wool scarf and two pairs of",
             "socks. The jacket's zipper sticks halfway and the scarf smells of smoke, although the box was sealed.",
             "I contacted the courier twice and was told to write to you instead, so here is everything at once."]
    out = []
    while sum(len(l.split()) for l in out) < words:
        out.extend(lines)
    return " ".join(out)


@pytest.mark.parametrize("words", [300, 900])  # inside, and well past, the 512-token window
def test_long_message_with_another_ending_misses(up, words):
    _, client = up
    text = body(words) + f" ({words})"
    assert ask(client, text + " Summarize.") == "miss"
    assert ask(client, text + " Note: Alice wants to cancel her premium plan. Summarize.") == "miss"
    assert ask(client, text + " Summarize.") == "hit"  # the same message is still served


def test_added_qualifier_misses(up):
    _, client = up
    assert ask(client, "What is the return policy?") == "miss"
    assert ask(client, "What is the return policy for shoes?") == "miss"
    assert ask(client, "what is the return policy") == "hit"  # not the same text: through the vectors


def test_chinese_paraphrase_hits_and_other_amount_misses(up):
    _, client = up
    assert ask(client, "退款多久到账？") == "miss"
    assert ask(client, "亲，退款一般多长时间到账呀") == "hit"
    assert ask(client, "三百元以上包邮吗") == "miss"
    assert ask(client, "四百元以上包邮吗") == "miss"
    assert ask(client, "３００元以上包邮吗") == "hit"  # the same amount in full-width digits


def test_rotation_from_minilm_to_e5_under_load():
    require_file(SMOLLM2_GGUF)
    require_file(E5_FILE)
    require_file(MINILM_DIR / "model.safetensors")
    u = Up("--workers", 1, "-m", SMOLLM2_GGUF, "--simulate", "decode_ms=1", "--health-interval-ms", 100,
           "--admin-token", ADMIN, "--cache-model", MINILM_DIR)
    try:
        client = connect(u)
        seeded = [f"How do I return item {i} that I bought online?" for i in range(20)]
        for q in seeded:
            assert ask(client, q) == "miss"
        admin = httpx.Client(base_url=u.url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30)
        assert admin.post("/admin/cache/rotate", json={"model": "/no/such/model"}).status_code == 400
        assert httpx.post(u.url + "/admin/cache/rotate", json={}).status_code == 401

        failures, answered = [], []
        stop = threading.Event()

        def load():
            i = 0
            while not stop.is_set():
                try:
                    answered.append(ask(client, seeded[i % len(seeded)] + " Thanks!"))
                except Exception as e:  # noqa: BLE001 - any failure counts
                    failures.append(repr(e))
                i += 1

        t = threading.Thread(target=load)
        t.start()
        r = admin.post("/admin/cache/rotate", json={"model": str(E5_FILE)})
        assert r.status_code == 202, r.text
        assert admin.post("/admin/cache/rotate", json={}).status_code in (409, 202)
        deadline = time.time() + 300
        state = {}
        while time.time() < deadline:
            state = admin.get("/admin/cache/rotation").json()
            if state["state"] in ("done", "failed"):
                break
            time.sleep(0.2)
        stop.set()
        t.join(60)
        assert state["state"] == "done", state
        assert not failures, failures[:3]
        assert answered, "the load ran during the rotation"
        # The entries made with MiniLM now answer through e5's vectors (not the same text).
        assert ask(client, seeded[3].lower().rstrip("?")) == "hit"
        metrics = httpx.get(u.url + "/metrics").text
        assert "frugal_cache_rotations_total 1" in metrics or "frugal_cache_rotations_total 2" in metrics, metrics[:400]
    finally:
        u.stop()
