"""`frugal embed` (all-MiniLM-L6-v2) against the numpy BERT reference (ref_bert.py).

Tolerance: cosine(engine, reference) >= 0.999 per sentence (float32 vs float64 arithmetic
alone gives > 0.99999), unit norm within 1e-3, and the semantic ordering a sentence embedder
exists for: paraphrases score above unrelated pairs.
"""

from __future__ import annotations

import numpy as np
import pytest

import ref_bert

SENTENCES = [
    "A man is playing a guitar.",
    "Someone is playing an instrument.",
    "The stock market fell sharply today.",
    "Shares dropped steeply on Wall Street.",
    "Café owners in Zürich say déjà vu is NOT a 10-minute problem!",  # accents, digits, case
    "東京 is the capital of Japan; its population is about 14,000,000 (2023).",  # CJK, punctuation
    "hi",
    "The quick brown fox jumps over the lazy dog while the patient gardener, humming an old "
    "tune, trims the roses along the winding path that leads down to the quiet river bank.",
]


@pytest.fixture(scope="module")
def reference(minilm_dir):
    emb = ref_bert.BertEmbedder(str(minilm_dir))
    return np.stack([emb.embed(s) for s in SENTENCES])


@pytest.fixture(scope="module")
def engine(frugal, minilm_dir):
    return frugal.embed(minilm_dir, SENTENCES)


def test_embedding_shape_and_norm(engine):
    assert engine.shape == (len(SENTENCES), 384)
    assert np.all(np.isfinite(engine))
    norms = np.linalg.norm(engine, axis=1)
    assert np.all(np.abs(norms - 1.0) < 1e-3), f"norms {norms}"


def test_embeddings_match_reference(engine, reference):
    cos = np.sum(engine * reference, axis=1) / np.linalg.norm(engine, axis=1)
    for s, c in zip(SENTENCES, cos):
        assert c >= 0.999, f"cosine(engine, reference) = {c:.6f} for {s!r}"


def test_paraphrases_score_above_unrelated(engine):
    sim = engine @ engine.T
    assert sim[0, 1] > sim[0, 2] + 0.2 and sim[0, 1] > sim[0, 3] + 0.2, np.round(sim, 3)
    assert sim[2, 3] > sim[2, 0] + 0.2 and sim[2, 3] > sim[2, 1] + 0.2, np.round(sim, 3)


def test_one_text_per_call_equals_batch(frugal, minilm_dir, engine):
    # Batching (padding, masks) must not change an embedding.
    for i in (0, 6, 7):
        single = frugal.embed(minilm_dir, [SENTENCES[i]])[0]
        assert float(single @ engine[i]) >= 0.99999, SENTENCES[i]


def test_long_and_empty_texts(frugal, minilm_dir):
    # sentence-transformers truncates to max_seq_length (256 for this model, from
    # sentence_bert_config.json) keeping [SEP]; an empty text embeds [CLS] [SEP].
    long = " ".join(["The gardener trims the roses near the old river bank at dawn."] * 60)
    emb = ref_bert.BertEmbedder(str(minilm_dir))
    assert len(emb.tok.encode(long).ids) > 512  # past even the position table
    texts = [long, ""]
    got = frugal.embed(minilm_dir, texts)
    for t, g in zip(texts, got):
        c = float(g @ emb.embed(t)) / float(np.linalg.norm(g))
        assert c >= 0.999, f"cosine {c:.6f} for a text of {len(t)} chars"


def test_int8_embeddings_stay_within_cosine_0995_of_float(frugal, minilm_dir):
    """The default (INT8 weights and activations, taken only when the load-time check on
    calibration sentences passes) against the float path, on texts the check never saw."""
    texts = SENTENCES + ["", "Where is my parcel? It was due on 2024-03-05.",
                         " ".join(["The gardener trims the roses near the old river bank at dawn."] * 60)]
    f32 = frugal.embed(minilm_dir, texts)
    int8 = frugal.embed(minilm_dir, texts, activations="int8")
    cos = np.sum(f32 * int8, axis=1) / (np.linalg.norm(f32, axis=1) * np.linalg.norm(int8, axis=1))
    assert cos.min() >= 0.995, list(zip(texts, cos))
    assert not np.array_equal(f32, int8), "int8 and f32 gave identical vectors: INT8 path not taken"
