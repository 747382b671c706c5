"""`frugal perplexity` on SmolLM2-135M-Instruct and a public-domain text (Alice's Adventures in
Wonderland, chapters I-III; see docs/models.md).

Protocol assumed for the comparison with the reference: the file's text is tokenized as the
model's tokenizer says (SmolLM2 adds no BOS), cut into windows of --ctx tokens, and within a
window each token after the first is predicted from the tokens before it in that window;
perplexity = exp(mean negative log-likelihood) over the scored predictions, and the JSON field
"tokens" is the number of scored predictions. A text shorter than --ctx is one window; if the
engine scores only the last K predictions of a window (llama.cpp scores the second half),
"tokens" = K and the reference scores the same last K.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

import ref_llama


def ppl_json(frugal, model, path, ctx) -> dict:
    # Reference precision: the numbers are compared with the float64 numpy reference.
    p = frugal.ok("perplexity", "-m", model, "-f", path, "--ctx", str(ctx), "--json",
                  "--activations", "f32", timeout=300)
    text = p.stdout.decode().strip()
    obj = json.loads(text)  # exactly one JSON object on stdout
    assert isinstance(obj, dict), text
    assert "perplexity" in obj and "tokens" in obj, obj
    return obj


def ppl_plain(frugal, model, path, ctx) -> float:
    p = frugal.ok("perplexity", "-m", model, "-f", path, "--ctx", str(ctx),
                  "--activations", "f32", timeout=300)
    m = re.search(r"perplexity: *([0-9.eE+-]+|nan|inf)", p.stdout.decode())
    assert m, f"no 'perplexity: <float>' line in stdout: {p.stdout.decode()[-500:]!r}"
    return float(m.group(1))


def head_by_tokens(tok, text: str, n_tokens: int) -> str:
    """The shortest prefix of whole lines of `text` that tokenizes to >= n_tokens tokens."""
    lines = text.split("\n")
    for k in range(1, len(lines) + 1):
        s = "\n".join(lines[:k]) + "\n"
        if len(tok.encode(s).ids) >= n_tokens:
            return s
    return text


SHORT_CTX = 256


@pytest.fixture(scope="module")
def short_slice(tmp_path_factory, smollm2_tok, alice_text):
    s = head_by_tokens(smollm2_tok, alice_text, 180)
    ids = smollm2_tok.encode(s).ids
    assert 180 <= len(ids) < SHORT_CTX
    path = tmp_path_factory.mktemp("ppl") / "alice_short.txt"
    path.write_text(s, encoding="ascii")
    return path, ids


def test_perplexity_matches_reference(frugal, smollm2_gguf, smollm2_ref, short_slice):
    path, ids = short_slice
    obj = ppl_json(frugal, smollm2_gguf, path, SHORT_CTX)
    k = int(obj["tokens"])
    n_pred = len(ids) - 1
    assert n_pred // 2 <= k <= n_pred, (
        f"engine scored {k} tokens; the reference tokenizer gives {len(ids)} tokens "
        f"({n_pred} predictions) for this text: tokenization or windowing differs")
    nll = ref_llama.nll_per_position(smollm2_ref, ids, np.float32)
    ref = math.exp(float(nll[-k:].mean()))
    got = float(obj["perplexity"])
    assert math.isfinite(got)
    assert abs(got - ref) <= 0.01 * ref, (
        f"perplexity {got:.4f} vs reference {ref:.4f} over the last {k} of {n_pred} predictions "
        f"(all {n_pred}: {math.exp(float(nll.mean())):.4f})")


def test_plain_output_agrees_with_json(frugal, smollm2_gguf, short_slice):
    path, _ = short_slice
    a = ppl_plain(frugal, smollm2_gguf, path, SHORT_CTX)
    b = float(ppl_json(frugal, smollm2_gguf, path, SHORT_CTX)["perplexity"])
    assert abs(a - b) <= 1e-3 * b, (a, b)


def test_perplexity_sane_on_longer_text(frugal, smollm2_gguf, alice_text, tmp_path):
    # About 1,050 tokens in windows of 512 (the engine's first build: ~30 s on 2 cores).
    text = alice_text[: alice_text.index("\n", 4000) + 1]
    path = tmp_path / "alice_4k.txt"
    path.write_text(text, encoding="ascii")
    ppl = ppl_plain(frugal, smollm2_gguf, path, 512)
    # SmolLM2-135M Q4_1 on this text: ~17-23 (numpy reference over 512-token windows).
    assert math.isfinite(ppl) and 5.0 < ppl < 45.0, f"perplexity {ppl}"
