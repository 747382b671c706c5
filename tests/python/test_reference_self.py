"""Checks of the numpy references and test-data writers themselves (no `frugal` binary).

An oracle that is wrong makes every comparison meaningless, so the references are checked
against facts that do not come from the engine: published sentence-transformers similarity
values, the official `safetensors` and `gguf` readers, the `tokenizers` package, and the
equivalence of the HF and GGUF forms of one checkpoint.
"""

from __future__ import annotations

import math

import numpy as np

import ref_bert
import ref_llama
import synth

LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 64}


def test_hf_and_gguf_forms_agree_in_reference(tmp_path):
    # Checks the Q/K permutation + adjacent-pair rope against half-split rope, llama3 scaling
    # from config.json against rope_freqs.weight, and HF linear scaling against GGUF
    # rope.scaling.linear.
    toks = list(range(3, 120, 3))
    for i, (scaling, gguf_kw) in enumerate([
        (LLAMA3, {"rope_freqs": ref_llama.llama3_freq_factors(16, 1e4, 8.0, 1.0, 4.0, 64)}),
        ({"type": "linear", "factor": 2.0}, {"rope_linear_factor": 2.0}),
        (None, {}),
    ]):
        spec = synth.write_hf_llama(str(tmp_path / f"hf{i}"), dtype="F32", tied=bool(i % 2),
                                    shards=2, rope_scaling=scaling, seed=i)
        t = synth.random_weights(spec, i, tied=bool(i % 2))
        synth.write_gguf_llama(str(tmp_path / f"g{i}.gguf"), hf_tensors=t, **gguf_kw)
        a = ref_llama.forward(ref_llama.load_hf(str(tmp_path / f"hf{i}")), toks)
        b = ref_llama.forward(ref_llama.load_gguf(str(tmp_path / f"g{i}.gguf"), np.float64), toks)
        assert np.abs(a - b).max() < 1e-6 * a.std(), (i, np.abs(a - b).max())
    # Qwen2 (biases, neox in both forms).
    spec = synth.write_hf_llama(str(tmp_path / "q"), model_type="qwen2", dtype="F32", seed=9)
    t = synth.random_weights(spec, 9, tied=True)
    synth.write_gguf_llama(str(tmp_path / "q.gguf"), arch="qwen2", hf_tensors=t, rms_eps=1e-6)
    a = ref_llama.forward(ref_llama.load_hf(str(tmp_path / "q")), toks)
    b = ref_llama.forward(ref_llama.load_gguf(str(tmp_path / "q.gguf"), np.float64), toks)
    assert np.abs(a - b).max() < 1e-9 * a.std()


def test_rope_layout_matters(tmp_path):
    # Guard against a reference that ignores the layout: the wrong pairing changes the logits.
    spec = synth.write_hf_llama(str(tmp_path / "hf"), dtype="F32", seed=1)
    m = ref_llama.load_hf(str(tmp_path / "hf"))
    toks = list(range(10, 40))
    a = ref_llama.forward(m, toks)
    m.rope_neox = False
    b = ref_llama.forward(m, toks)
    assert np.abs(a - b).max() > 0.05 * a.std()
    assert spec["n_vocab"] == a.shape[1]


def test_llama3_factors_regimes():
    ff = ref_llama.llama3_freq_factors(16, 10000.0, 8.0, 1.0, 4.0, 64)
    assert ff[0] == 1.0  # high frequency kept
    assert np.all(ff[3:] == 8.0)  # low frequencies (wavelength > 64) divided by the factor
    assert 1.0 < ff[1] < ff[2] < 8.0  # wavelengths 19.9 and 62.8: interpolated band


def test_safetensors_writer_is_readable_by_official_reader(tmp_path):
    from safetensors.numpy import load_file

    rng = np.random.default_rng(0)
    t = {"a": rng.standard_normal((3, 5)).astype(np.float32), "b": np.arange(7, dtype=np.float32)}
    for dt, npdt in (("F32", np.float32), ("F16", np.float16)):
        synth.write_safetensors(str(tmp_path / f"{dt}.safetensors"), t, dt)
        got = load_file(str(tmp_path / f"{dt}.safetensors"))
        for k in t:
            assert got[k].dtype == npdt and np.array_equal(got[k], t[k].astype(npdt))
        mine = ref_llama.read_safetensors(str(tmp_path / f"{dt}.safetensors"))
        for k in t:
            assert np.array_equal(mine[k], t[k].astype(npdt))
    synth.write_safetensors(str(tmp_path / "bf.safetensors"), t, "BF16")
    mine = ref_llama.read_safetensors(str(tmp_path / "bf.safetensors"))
    assert np.abs(mine["a"] - t["a"]).max() <= 2 ** -8 * np.abs(t["a"]).max()
    assert np.array_equal(mine["b"], t["b"])  # small integers are exact in bf16
    # The official reader parses the header (numpy has no bf16 to load it into).
    from safetensors import safe_open

    with safe_open(str(tmp_path / "bf.safetensors"), "np") as f:
        assert sorted(f.keys()) == ["a", "b"]
        assert f.get_slice("a").get_dtype() == "BF16"


def test_bf16_rounding_matches_gguf():
    import gguf

    x = np.random.default_rng(3).standard_normal(1000).astype(np.float32) * 1e3
    mine = synth.f32_to_bf16_bits(x)
    theirs = gguf.quants.quantize(x, gguf.GGMLQuantizationType.BF16).view(np.uint16)
    assert np.array_equal(mine, theirs)


def test_tiny_tokenizer_roundtrip(tmp_path):
    from tokenizers import Tokenizer

    synth.write_tokenizer_files(str(tmp_path))
    tok = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    text = "the cat and the dog, 12 €! <|im_start|>"
    enc = tok.encode(text)
    assert tok.decode(enc.ids, skip_special_tokens=False) == text
    assert enc.ids[-1] == tok.token_to_id("<|im_start|>")
    assert tok.get_vocab_size() == synth.tiny_spec()["n_vocab"]
    assert "Ġthe" in tok.encode(" the").tokens


def test_tiny_gguf_metadata(tmp_path):
    import gguf

    synth.write_gguf_llama(str(tmp_path / "m.gguf"), wtype="Q8_0", ctx=32)
    r = gguf.GGUFReader(str(tmp_path / "m.gguf"))
    assert r.fields["general.architecture"].contents() == "llama"
    assert r.fields["llama.context_length"].contents() == 32
    assert len(r.fields["tokenizer.ggml.tokens"].contents()) == synth.tiny_spec()["n_vocab"]
    types = {t.name: t.tensor_type.name for t in r.tensors}
    assert types["blk.0.attn_q.weight"] == "Q8_0" and types["blk.0.attn_norm.weight"] == "F32"


def test_minilm_reference_matches_published_similarities(minilm_dir):
    # Cosine similarities of all-MiniLM-L6-v2 published in the sentence-transformers
    # documentation (semantic textual similarity example), to 4 decimals.
    emb = ref_bert.BertEmbedder(str(minilm_dir))
    pairs = [("The cat sits outside", "The dog plays in the garden", 0.2838),
             ("A man is playing guitar", "A woman watches TV", -0.0327),
             ("The new movie is awesome", "The new movie is so great", 0.8939)]
    for a, b, want in pairs:
        got = float(emb.embed(a) @ emb.embed(b))
        assert abs(got - want) < 6e-5, (a, b, got, want)


def test_minilm_reference_padding_invariant(minilm_dir):
    emb = ref_bert.BertEmbedder(str(minilm_dir))
    texts = ["hi", "A much longer sentence about gardens, rivers and old tunes.", "Zürich 東京"]
    single = np.stack([emb.embed(t) for t in texts])
    assert np.abs(emb.embed_batch_padded(texts) - single).max() < 1e-12


def test_smollm2_reference_perplexity_is_sane(smollm2_ref, smollm2_tok, alice_text):
    ids = smollm2_tok.encode(alice_text).ids[:256]
    ppl = math.exp(float(ref_llama.nll_per_position(smollm2_ref, ids, np.float32).mean()))
    assert 10.0 < ppl < 40.0, ppl  # measured: 30.8 over the first 256 tokens
