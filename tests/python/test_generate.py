"""`frugal generate` on SmolLM2-135M-Instruct: a factual chat answer, determinism of greedy
decoding (across runs and thread counts) and of seeded sampling."""

from __future__ import annotations

import pytest

STORY = "Once upon a time, in a small village by the sea,"


def gen(frugal, model, *args) -> str:
    p = frugal.ok("generate", "-m", model, *args)
    return p.stdout.decode("utf-8")


def test_chat_answers_paris(frugal, smollm2_gguf):
    # Reference precision: this 135M model's greedy answer to this prompt sits on a knife edge
    # under INT8 activations (Paris or a French word list, depending on summation order), so
    # the test of the chat pipeline should not hinge on it.
    out = gen(frugal, smollm2_gguf, "--chat", "-p", "What is the capital of France?", "-n", "32",
              "--temperature", "0", "--activations", "f32")
    assert "Paris" in out, f"answer: {out!r}"
    # stdout carries the generated text only: no prompt echo, no template tokens.
    assert "What is the capital" not in out, out
    assert "<|im_" not in out, out


@pytest.fixture(scope="module")
def greedy_reference(frugal, smollm2_gguf):
    return gen(frugal, smollm2_gguf, "-p", STORY, "-n", "24", "--temperature", "0",
               "--threads", "2")


def test_greedy_is_not_empty(greedy_reference):
    assert len(greedy_reference.strip()) > 0


def test_greedy_repeatable(frugal, smollm2_gguf, greedy_reference):
    again = gen(frugal, smollm2_gguf, "-p", STORY, "-n", "24", "--temperature", "0",
                "--threads", "2")
    assert again == greedy_reference


def test_greedy_same_with_one_thread(frugal, smollm2_gguf, greedy_reference):
    one = gen(frugal, smollm2_gguf, "-p", STORY, "-n", "24", "--temperature", "0",
              "--threads", "1")
    assert one == greedy_reference


def test_seeded_sampling_repeatable(frugal, smollm2_gguf):
    args = ["-p", STORY, "-n", "24", "--temperature", "0.8", "--seed", "1234"]
    a = gen(frugal, smollm2_gguf, *args)
    b = gen(frugal, smollm2_gguf, *args)
    assert a == b
    assert len(a.strip()) > 0


def test_sampling_depends_on_seed(frugal, smollm2_gguf):
    # Any single pair of seeds may agree; four 24-token samples at temperature 1 all equal
    # would mean the seed (or the temperature) is ignored.
    outs = {gen(frugal, smollm2_gguf, "-p", STORY, "-n", "24", "--temperature", "1.0",
                "--seed", str(s)) for s in (1, 2, 3, 4)}
    assert len(outs) >= 2, outs


def test_stop_string_ends_generation_before_it(frugal, smollm2_gguf, greedy_reference):
    # Take a word from the middle of the greedy continuation as the stop string: the output
    # must be exactly the text before its first occurrence.
    words = greedy_reference.split()
    assert len(words) >= 6, greedy_reference
    stop = " " + words[len(words) // 2]
    cut = greedy_reference.index(stop)
    out = gen(frugal, smollm2_gguf, "-p", STORY, "-n", "24", "--temperature", "0",
              "--stop", stop)
    assert out == greedy_reference[:cut] + "\n", (out, stop)


def test_top_k_one_equals_greedy(frugal, smollm2_gguf, greedy_reference):
    # With only the most likely token kept, sampling at any temperature is greedy decoding.
    out = gen(frugal, smollm2_gguf, "-p", STORY, "-n", "24", "--temperature", "1.5",
              "--top-k", "1", "--seed", "99")
    assert out == greedy_reference
