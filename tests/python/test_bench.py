"""`frugal bench --json` reports prefill/decode speed and where decode stands against the
memory-read roofline, all measured in the same run."""

from __future__ import annotations

import json
import statistics


def test_bench_json_fields_are_consistent(frugal, smollm2_gguf):
    p = frugal.ok("bench", "-m", smollm2_gguf, "--json", "--prompt-tokens", "16",
                  "--decode-tokens", "4", "--reps", "1")
    r = json.loads(p.stdout)
    for key in ("prefill_tokens_per_s", "decode_tokens_per_s", "batch8_decode_tokens_per_s",
                "weight_bytes_per_token",
                "memory_read_gbps", "roofline_fraction"):
        assert key in r, (key, r)
        assert r[key] > 0, (key, r)
    # Every matmul weight of the model is streamed once per decoded token: SmolLM2's linear
    # layers and tied Q8_0 output head are ~96 MB; the whole file is ~97 MB.
    assert 80e6 < r["weight_bytes_per_token"] < 98e6, r
    expected = r["decode_tokens_per_s"] * r["weight_bytes_per_token"] / 1e9 / r["memory_read_gbps"]
    assert abs(r["roofline_fraction"] - expected) < 1e-6 * max(1.0, expected), r
    assert r["roofline_fraction"] < 1.5, r  # cannot stream weights much faster than memory


def test_bench_rejects_a_run_longer_than_the_context(frugal, smollm2_gguf):
    p = frugal.run("bench", "-m", smollm2_gguf, "-c", "64", "--prompt-tokens", "60",
                   "--decode-tokens", "10")
    assert p.returncode == 2 and p.stderr.decode().startswith("frugal: error: "), p.stderr


def test_bench_with_a_prompt_shorter_than_the_batch(frugal, smollm2_gguf):
    # The 8 batched sequences each start a few tokens into the prompt; with a 4-token prompt
    # sequences 4..7 once read past its end (token ids out of the vocabulary).
    p = frugal.ok("bench", "-m", smollm2_gguf, "--json", "--prompt-tokens", "4",
                  "--decode-tokens", "2", "--reps", "1")
    assert json.loads(p.stdout)["batch8_decode_tokens_per_s"] > 0


def test_bench_warms_up_unless_told_not_to(frugal, smollm2_gguf):
    # As llama-bench: one untimed prefill and decode step before the timed ones, so that the
    # first pass's first touches (KV cache, scratch) are not timed; --no-warmup times it.
    args = ("bench", "-m", smollm2_gguf, "--json", "--prompt-tokens", "8", "--decode-tokens", "2",
            "--reps", "1")
    warm = json.loads(frugal.ok(*args).stdout)
    cold = json.loads(frugal.ok(*args, "--no-warmup").stdout)
    assert warm["warmup"] is True and cold["warmup"] is False, (warm, cold)
    assert cold["prefill_tokens_per_s"] > 0 and cold["decode_tokens_per_s"] > 0, cold
    text = frugal.ok("bench", "-m", smollm2_gguf, "--prompt-tokens", "8", "--decode-tokens", "2",
                     "--reps", "1").stdout.decode()
    assert "median of 1, after a warm-up" in text, text


def test_bench_takes_the_batch_ratio_within_each_pass(frugal, smollm2_gguf):
    # Each pass times one sequence and then eight; the speed-up is the median of the passes'
    # own ratios (side by side), the rates the medians over the passes.
    r = json.loads(frugal.ok("bench", "-m", smollm2_gguf, "--json", "--prompt-tokens", "8",
                             "--decode-tokens", "2", "--reps", "3").stdout)
    passes = r["passes"]
    assert len(passes) == 3, r
    for key in ("prefill_tokens_per_s", "decode_tokens_per_s", "batch8_decode_tokens_per_s"):
        assert all(p[key] > 0 for p in passes), (key, r)
        assert r[key] == statistics.median(p[key] for p in passes), (key, r)
    ratios = [p["batch8_decode_tokens_per_s"] / p["decode_tokens_per_s"] for p in passes]
    assert abs(r["batch8_speedup"] - statistics.median(ratios)) < 1e-9 * r["batch8_speedup"], r
