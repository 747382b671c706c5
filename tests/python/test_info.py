"""`frugal info MODEL` and `frugal info MODEL --json`, checked against what the gguf package and
config.json say. The JSON schema is the engine's; only its facts are checked here (the values
it holds), not its key names."""

from __future__ import annotations

import json

import gguf

import synth


def all_values(obj):
    if isinstance(obj, dict):
        for v in obj.values():
            yield from all_values(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from all_values(v)
    else:
        yield obj


def info_json(frugal, model) -> dict:
    p = frugal.ok("info", model, "--json")
    obj = json.loads(p.stdout.decode())  # exactly one JSON document on stdout
    assert isinstance(obj, dict)
    return obj


def test_info_gguf(frugal, smollm2_gguf):
    r = gguf.GGUFReader(str(smollm2_gguf))
    facts = {
        r.fields["llama.block_count"].contents(),
        r.fields["llama.embedding_length"].contents(),
        r.fields["llama.feed_forward_length"].contents(),
        r.fields["llama.context_length"].contents(),
        len(r.fields["tokenizer.ggml.tokens"].contents()),
    }
    text = frugal.ok("info", smollm2_gguf).stdout.decode()
    assert "llama" in text and "49152" in text, text
    values = set(v for v in all_values(info_json(frugal, smollm2_gguf)) if not isinstance(v, bool))
    assert "llama" in values
    missing = facts - values
    assert not missing, f"info --json lacks {missing}"


def test_info_reports_kv_bytes_per_position(frugal, smollm2_gguf):
    # Keys and values of 30 layers x 3 KV heads x 64 dims, 2 bytes each in the default F16 cache
    # (float: twice that).
    obj = info_json(frugal, smollm2_gguf)
    assert obj["kv_type"] == "f16", obj.get("kv_type")
    assert obj["kv_bytes_per_position"] == 2 * 30 * 3 * 64 * 2, obj.get("kv_bytes_per_position")
    assert "kv cache:      f16, 23040 bytes per position" in frugal.ok(
        "info", smollm2_gguf).stdout.decode()


def test_info_hf_folders(frugal, minilm_dir, tmp_path):
    assert "bert" in set(all_values(info_json(frugal, minilm_dir)))
    folder = tmp_path / "hf"
    spec = synth.write_hf_llama(str(folder), model_type="qwen2", dtype="BF16", shards=2)
    values = set(v for v in all_values(info_json(frugal, folder)) if not isinstance(v, bool))
    assert "qwen2" in values
    assert {spec["n_layer"], spec["n_embd"], spec["n_ff"], spec["n_vocab"]} <= values
