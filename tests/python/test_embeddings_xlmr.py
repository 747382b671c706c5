"""`frugal embed` on XLM-R-family encoders (bge-m3, multilingual-e5-base) against the numpy
reference (ref_bert.py).

PyPI ships no multilingual encoder checkpoint, so the model is a small random-weight XLM-R built
here in the layout transformers and sentence-transformers save: config.json with model_type
"xlm-roberta" and pad_token_id 1 (positions start at 2), safetensors with or without the
"roberta." prefix, a SentencePiece Unigram tokenizer.json (spm_unigram.py), 1_Pooling with CLS
(bge-m3) or mean (multilingual-e5) pooling. What it proves is the architecture and the
tokenizer, end to end: the same ids, the position offset, the pooling. Tolerance as for
all-MiniLM: cosine >= 0.999 (float32 against float64).
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import ref_bert
from conftest import ROOT
from spm_unigram import build

SENTENCES = [
    "How is shipping charged for international orders?",
    "订单号 A-10432 还没到，请问物流在哪里？",
    "这件外套多少钱？有没有折扣？",
    "Ｆｕｌｌ-width ＡＢＣ and ① ㎏ normalised by the charsmap",
    "hi",
    # Longer than the 128 positions: truncated, keeping </s>, as sentence-transformers does.
    " ".join(["Can I return the blue jacket I bought last week if it does not fit?"] * 12),
]


def make_xlmr(folder, pooling: str, prefix: str, seed: int):
    from safetensors.numpy import save_file

    tok_dir = folder / "tok"
    build("bge-m3", tok_dir, ROOT)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (folder / name).write_text((tok_dir / name).read_text())
    vocab = len(json.loads((folder / "tokenizer.json").read_text())["model"]["vocab"])
    d, ff, layers, heads, n_pos = 64, 128, 2, 4, 130
    cfg = {"model_type": "xlm-roberta", "architectures": ["XLMRobertaModel"], "vocab_size": vocab,
           "hidden_size": d, "num_hidden_layers": layers, "num_attention_heads": heads,
           "intermediate_size": ff, "max_position_embeddings": n_pos, "type_vocab_size": 1,
           "layer_norm_eps": 1e-5, "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2,
           "hidden_act": "gelu"}
    (folder / "config.json").write_text(json.dumps(cfg))
    rng = np.random.default_rng(seed)

    def r(*shape, scale=0.08):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    w = {"embeddings.word_embeddings.weight": r(vocab, d, scale=0.5),
         "embeddings.position_embeddings.weight": r(n_pos, d, scale=0.5),
         "embeddings.token_type_embeddings.weight": r(1, d, scale=0.1),
         "embeddings.LayerNorm.weight": 1 + r(d, scale=0.1), "embeddings.LayerNorm.bias": r(d)}
    for l in range(layers):
        p = f"encoder.layer.{l}."
        for name, (o, i) in {"attention.self.query": (d, d), "attention.self.key": (d, d),
                             "attention.self.value": (d, d), "attention.output.dense": (d, d),
                             "intermediate.dense": (ff, d), "output.dense": (d, ff)}.items():
            w[p + name + ".weight"] = r(o, i, scale=1 / np.sqrt(i))
            w[p + name + ".bias"] = r(o)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[p + ln + ".weight"] = 1 + r(d, scale=0.1)
            w[p + ln + ".bias"] = r(d)
    save_file({prefix + k: v for k, v in w.items()}, str(folder / "model.safetensors"))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": d, "pooling_mode_cls_token": pooling == "cls",
         "pooling_mode_mean_tokens": pooling == "mean"}))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 128}))
    return folder


@pytest.fixture(scope="module", params=[("cls", "roberta."), ("mean", "")], ids=["bge-m3-cls", "e5-mean"])
def xlmr(request, tmp_path_factory):
    pooling, prefix = request.param
    return make_xlmr(tmp_path_factory.mktemp(f"xlmr_{pooling}"), pooling, prefix, seed=len(prefix))


def test_xlmr_embeddings_match_reference(frugal, xlmr):
    ref = ref_bert.BertEmbedder(str(xlmr))
    assert ref.pos_offset == 2
    want = np.stack([ref.embed(s) for s in SENTENCES])
    got = frugal.embed(xlmr, SENTENCES)
    assert got.shape == want.shape
    cos = np.sum(got * want, axis=1) / np.linalg.norm(got, axis=1)
    for s, c in zip(SENTENCES, cos):
        assert c >= 0.999, f"cosine(engine, reference) = {c:.6f} for {s[:60]!r}"
    # The embeddings are not all alike: the test would notice a model that ignores its input.
    off_diag = (want @ want.T)[~np.eye(len(SENTENCES), dtype=bool)]
    assert off_diag.min() < 0.95


def copy_model(src, dst):
    shutil.copytree(src, dst)
    return dst


def test_xlmr_position_offset_matters(frugal, xlmr, tmp_path):
    """The same weights read as model_type "bert" (positions from 0) embed differently: the
    offset is really applied, and the reference agrees with the engine only with it."""
    bert = copy_model(xlmr, tmp_path / "as_bert")
    cfg = json.loads((xlmr / "config.json").read_text())
    cfg["model_type"] = "bert"
    (bert / "config.json").write_text(json.dumps(cfg))
    a = frugal.embed(xlmr, SENTENCES[:3])
    b = frugal.embed(bert, SENTENCES[:3])
    assert np.min(np.sum(a * b, axis=1)) < 0.999


def test_unsupported_pooling_is_refused(frugal, xlmr, tmp_path):
    bad = copy_model(xlmr, tmp_path / "maxpool")
    (bad / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_max_tokens": True}))
    p = frugal.run("embed", "-m", bad, "hello")
    assert p.returncode == 2
    assert "pooling 'max' is not supported" in p.stderr.decode()
