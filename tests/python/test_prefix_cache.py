"""Prefix caching in `frugal serve` (issue 46), black box through the official `openai` client.

Two workers on SmolLM2-135M: the default (prefix cache on) and `--no-prefix-cache`. A support
conversation (a store-policy system prompt, three turns, each carrying the earlier answers) and
four concurrent conversations sharing the system prompt must get the same greedy answers from
both, while the cached worker reports the reused prompt tokens: OpenAI's
`usage.prompt_tokens_details.cached_tokens`, the `frugal_prefix_cache_*` counters of /metrics
and the /queue_depth report. The bit-for-bit logits check is tests/golden/prefix_cache_test.cc.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

BLOCK = 16  # frugal serve's default --kv-block-tokens

SYSTEM = (
    "You are the customer-service assistant of Lindenhof Home, an online shop for kitchenware. "
    "Shipping: standard delivery costs 4.90 EUR and is free for orders from 49 EUR; express "
    "delivery costs 9.90 EUR. Parcels leave the warehouse within two working days. Returns: "
    "unused items can be returned within 30 days of delivery; the return label is free; refunds "
    "reach the original payment method within 5 to 7 working days after the parcel arrives. "
    "Damaged items: send a photo to the support team within 48 hours. Warranty: two years on "
    "all appliances. Answer briefly, politely and only from these policies.")
TURNS = ["How much does shipping cost?", "And if my order is 60 EUR?",
         "How long until I get a refund?"]
QUESTIONS = ["Can I return a used pan?", "Is there a warranty on kettles?",
             "My mug arrived broken, what now?", "How fast is express delivery?"]


@pytest.fixture(scope="module")
def servers(frugal_server, smollm2_gguf):
    cached = frugal_server(smollm2_gguf, "-t", "1").start()
    plain = frugal_server(smollm2_gguf, "-t", "1", "--no-prefix-cache").start()
    yield cached, plain
    cached.stop()
    plain.stop()


def client(srv) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.base_url + "/v1", api_key="sk-none", max_retries=0,
                         timeout=120)


def conversation(srv) -> list:
    """The three turns, each with the answers so far; the responses."""
    c = client(srv)
    model = c.models.list().data[0].id
    messages = [{"role": "system", "content": SYSTEM}]
    out = []
    for question in TURNS:
        messages.append({"role": "user", "content": question})
        r = c.chat.completions.create(model=model, messages=messages, temperature=0,
                                      max_tokens=24)
        messages.append({"role": "assistant", "content": r.choices[0].message.content})
        out.append(r)
    return out


def cached_tokens(r) -> int:
    return r.usage.prompt_tokens_details.cached_tokens


def metric(srv, name: str) -> float:
    text = httpx.get(srv.base_url + "/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                return sample.value
    raise AssertionError(f"{name} not in /metrics")


def test_a_conversation_reuses_its_earlier_turns_and_answers_the_same(servers):
    cached, plain = servers
    got, ref = conversation(cached), conversation(plain)
    for turn, (g, r) in enumerate(zip(got, ref)):
        assert g.choices[0].message.content == r.choices[0].message.content, f"turn {turn + 1}"
        assert g.usage.prompt_tokens == r.usage.prompt_tokens
        assert cached_tokens(r) == 0
    # Turn 1 finds nothing (a fresh worker); every later turn finds the whole prompt of the turn
    # before it: the system prompt and the earlier questions, in whole blocks, and the positions
    # after them copied from the earlier turn's last, partly filled block.
    assert cached_tokens(got[0]) == 0
    for turn in (1, 2):
        before = got[turn - 1].usage.prompt_tokens
        assert cached_tokens(got[turn]) >= before, f"turn {turn + 1}"
        assert cached_tokens(got[turn]) < got[turn].usage.prompt_tokens
    # Whole blocks alone would make every count a multiple of the block; the copied tail reaches
    # to where the new turn's tokens begin.
    assert any(cached_tokens(got[turn]) % BLOCK for turn in (1, 2)), [cached_tokens(g) for g in got]


def test_concurrent_conversations_share_the_system_prompt(servers):
    cached, plain = servers

    def ask(srv, question):
        c = client(srv)
        model = c.models.list().data[0].id
        return c.chat.completions.create(
            model=model, temperature=0, max_tokens=16,
            messages=[{"role": "system", "content": SYSTEM},
                      {"role": "user", "content": question}])

    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda q: ask(cached, q), QUESTIONS))
    ref = [ask(plain, q) for q in QUESTIONS]
    for q, g, r in zip(QUESTIONS, got, ref):
        assert g.choices[0].message.content == r.choices[0].message.content, q
    # The system prompt's blocks were in the cache from the earlier test or a first request.
    assert sum(cached_tokens(g) > 0 for g in got) >= 3


def test_the_load_report_and_metrics_count_the_reuse(servers):
    cached, plain = servers
    conversation(cached)  # whatever ran before, this adds hits
    report = httpx.get(cached.base_url + "/queue_depth",
                       headers={"accept": "application/json"}, timeout=10).json()
    assert report["prefix_cache_hits"] > 0
    assert report["prefix_cache_queries"] > report["prefix_cache_hits"]
    assert report["kv_blocks_cached"] > 0
    hits = metric(cached, "frugal_prefix_cache_hits_total")
    queries = metric(cached, "frugal_prefix_cache_queries_total")
    assert 0 < hits < queries
    assert metric(plain, "frugal_prefix_cache_hits_total") == 0
    assert metric(plain, "frugal_kv_cache_blocks_cached") == 0
    plain_report = httpx.get(plain.base_url + "/queue_depth",
                             headers={"accept": "application/json"}, timeout=10).json()
    assert plain_report["prefix_cache_hits"] == 0
    assert plain_report["prefix_cache_queries"] > 0
