"""Synthetic tiny checkpoints for the black-box tests: random weights, real file formats.

- write_hf_llama: a Hugging Face folder (config.json, safetensors, optionally sharded with
  model.safetensors.index.json, tokenizer.json, tokenizer_config.json) for model_type llama or
  qwen2, in F32, F16 or BF16.
- write_gguf_llama: the same kind of model as a GGUF file (arch llama or qwen2) with matrices in
  F32, F16 or Q8_0, tokenizer metadata included.

The safetensors writer is our own (numpy has no bfloat16); it follows the published format:
u64 little-endian header size, JSON header, then the raw little-endian tensor bytes.
"""

from __future__ import annotations

import json
import os
import struct

import numpy as np

import ref_llama
import ref_tokenizers

CHAT_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def tiny_spec(**over) -> dict:
    """Hyper-parameters of the tiny model (vocab = the tiny tokenizer's size)."""
    tokens, _, _ = ref_tokenizers.tiny_vocab()
    spec = dict(
        n_vocab=len(tokens),
        n_embd=64,
        n_head=4,
        n_head_kv=2,
        n_ff=192,
        n_layer=2,
        rms_eps=1e-5,
        rope_theta=10000.0,
        ctx=256,
        bias=False,
    )
    spec.update(over)
    return spec


def random_weights(spec: dict, seed: int, tied: bool) -> dict:
    """HF-named float32 tensors ([out, in] matrices)."""
    rng = np.random.default_rng(seed)
    d, hd = spec["n_embd"], spec["n_embd"] // spec["n_head"]
    kv = spec["n_head_kv"] * hd
    f = spec["n_ff"]

    def mat(o, i):
        return (rng.standard_normal((o, i)) / np.sqrt(i)).astype(np.float32)

    def norm(n):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    t = {"model.embed_tokens.weight": (0.5 * rng.standard_normal((spec["n_vocab"], d))).astype(
        np.float32)}
    for l in range(spec["n_layer"]):
        p = f"model.layers.{l}."
        t[p + "input_layernorm.weight"] = norm(d)
        t[p + "self_attn.q_proj.weight"] = mat(d, d)
        t[p + "self_attn.k_proj.weight"] = mat(kv, d)
        t[p + "self_attn.v_proj.weight"] = mat(kv, d)
        t[p + "self_attn.o_proj.weight"] = mat(d, d)
        if spec["bias"]:
            t[p + "self_attn.q_proj.bias"] = (0.2 * rng.standard_normal(d)).astype(np.float32)
            t[p + "self_attn.k_proj.bias"] = (0.2 * rng.standard_normal(kv)).astype(np.float32)
            t[p + "self_attn.v_proj.bias"] = (0.2 * rng.standard_normal(kv)).astype(np.float32)
        t[p + "post_attention_layernorm.weight"] = norm(d)
        t[p + "mlp.gate_proj.weight"] = mat(f, d)
        t[p + "mlp.up_proj.weight"] = mat(f, d)
        t[p + "mlp.down_proj.weight"] = mat(d, f)
    t["model.norm.weight"] = norm(d)
    if not tied:
        t["lm_head.weight"] = mat(spec["n_vocab"], d)
    return t


# --------------------------------------------------------------------------------------------
# safetensors


def f32_to_bf16_bits(a: np.ndarray) -> np.ndarray:
    """Round-to-nearest-even float32 -> bfloat16 bit patterns (uint16)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def write_safetensors(path: str, tensors: dict, dtype: str) -> None:
    """tensors: name -> float32 array, stored as dtype "F32" | "F16" | "BF16"."""
    header = {}
    blobs = []
    off = 0
    for name in sorted(tensors):
        a = np.asarray(tensors[name], dtype=np.float32)
        if dtype == "F32":
            raw = a.astype("<f4").tobytes()
        elif dtype == "F16":
            raw = a.astype("<f2").tobytes()
        elif dtype == "BF16":
            raw = f32_to_bf16_bits(a).astype("<u2").tobytes()
        else:
            raise ValueError(dtype)
        header[name] = {"dtype": dtype, "shape": list(a.shape),
                        "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)  # keep the data 8-byte aligned, as the format suggests
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def write_tokenizer_files(folder: str) -> None:
    tok = ref_tokenizers.tiny_byte_level_bpe()
    tok.save(os.path.join(folder, "tokenizer.json"))
    cfg = {
        "bos_token": "<|im_start|>",
        "eos_token": "<|im_end|>",
        "unk_token": "<|endoftext|>",
        "pad_token": "<|endoftext|>",
        "add_bos_token": False,
        "add_eos_token": False,
        "model_max_length": 256,
        "tokenizer_class": "GPT2Tokenizer",
        "chat_template": CHAT_TEMPLATE,
    }
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump(cfg, f, indent=1)


def write_hf_llama(
    folder: str,
    *,
    model_type: str = "llama",
    dtype: str = "F32",
    tied: bool = True,
    shards: int = 1,
    rope_scaling: dict | None = None,
    seed: int = 0,
    **spec_over,
) -> dict:
    """Writes a tiny HF checkpoint; returns its spec."""
    if model_type == "qwen2":
        spec_over.setdefault("bias", True)
        spec_over.setdefault("rope_theta", 1000000.0)
        spec_over.setdefault("rms_eps", 1e-6)
    spec = tiny_spec(**spec_over)
    os.makedirs(folder, exist_ok=True)
    t = random_weights(spec, seed, tied)
    tokens, _, _ = ref_tokenizers.tiny_vocab()
    specials = {s: tokens.index(s) for s in ref_tokenizers.TINY_SPECIALS}
    cfg = {
        "architectures": ["Qwen2ForCausalLM" if model_type == "qwen2" else "LlamaForCausalLM"],
        "model_type": model_type,
        "vocab_size": spec["n_vocab"],
        "hidden_size": spec["n_embd"],
        "intermediate_size": spec["n_ff"],
        "num_hidden_layers": spec["n_layer"],
        "num_attention_heads": spec["n_head"],
        "num_key_value_heads": spec["n_head_kv"],
        "max_position_embeddings": spec["ctx"],
        "rms_norm_eps": spec["rms_eps"],
        "rope_theta": spec["rope_theta"],
        "hidden_act": "silu",
        "tie_word_embeddings": tied,
        "bos_token_id": specials["<|im_start|>"],
        "eos_token_id": specials["<|im_end|>"],
        "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dtype],
    }
    if model_type == "llama":
        cfg["attention_bias"] = False
        cfg["mlp_bias"] = False
    if model_type == "qwen2":
        cfg["use_sliding_window"] = False
    if rope_scaling is not None:
        cfg["rope_scaling"] = rope_scaling
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    names = sorted(t)
    if shards == 1:
        write_safetensors(os.path.join(folder, "model.safetensors"), t, dtype)
    else:
        weight_map = {}
        per = (len(names) + shards - 1) // shards
        total = 0
        for s in range(shards):
            fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
            part = {n: t[n] for n in names[s * per:(s + 1) * per]}
            write_safetensors(os.path.join(folder, fname), part, dtype)
            for n, a in part.items():
                weight_map[n] = fname
                total += a.size * (4 if dtype == "F32" else 2)
        with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=1)
    write_tokenizer_files(folder)
    return spec


# --------------------------------------------------------------------------------------------
# GGUF

def hf_to_gguf_tensors(t: dict, spec: dict, arch: str) -> dict:
    """HF names -> GGUF names; Q/K rows permuted for arch llama as llama.cpp's converter does."""
    out = {"token_embd.weight": t["model.embed_tokens.weight"],
           "output_norm.weight": t["model.norm.weight"]}
    if "lm_head.weight" in t:
        out["output.weight"] = t["lm_head.weight"]
    for l in range(spec["n_layer"]):
        for hf, gg in ref_llama.HF_TO_GGUF.items():
            for suffix in ("weight", "bias"):
                a = t.get(f"model.layers.{l}.{hf}.{suffix}")
                if a is None:
                    continue
                if arch == "llama" and gg == "attn_q":
                    a = ref_llama.permute_qk_for_gguf(a, spec["n_head"])
                if arch == "llama" and gg == "attn_k":
                    a = ref_llama.permute_qk_for_gguf(a, spec["n_head_kv"])
                out[f"blk.{l}.{gg}.{suffix}"] = a
    return out


def write_gguf_llama(
    path: str,
    *,
    arch: str = "llama",
    wtype: str = "F32",
    tied: bool = True,
    seed: int = 0,
    rope_freqs: np.ndarray | None = None,
    rope_linear_factor: float | None = None,
    hf_tensors: dict | None = None,
    frugal_types: dict | None = None,
    **spec_over,
) -> dict:
    """Writes a tiny GGUF (matrices in wtype: F32 | F16 | Q8_0; norms, biases F32).

    frugal_types maps a matrix role ("attn_q", "ffn_down", ...) to one of Frugal's types
    (frugal_format.TYPES): those matrices are RTN-quantized and packed by frugal_format."""
    import gguf

    import frugal_format

    if arch == "qwen2":
        spec_over.setdefault("bias", True)
        spec_over.setdefault("rope_theta", 1000000.0)
    spec = tiny_spec(**spec_over)
    t = hf_tensors if hf_tensors is not None else random_weights(spec, seed, tied)
    gt = hf_to_gguf_tensors(t, spec, arch)
    hd = spec["n_embd"] // spec["n_head"]
    w = gguf.GGUFWriter(path, arch)
    w.add_name("frugal-test-tiny")
    w.add_context_length(spec["ctx"])
    w.add_embedding_length(spec["n_embd"])
    w.add_block_count(spec["n_layer"])
    w.add_feed_forward_length(spec["n_ff"])
    w.add_head_count(spec["n_head"])
    w.add_head_count_kv(spec["n_head_kv"])
    w.add_rope_dimension_count(hd)
    w.add_rope_freq_base(spec["rope_theta"])
    w.add_layer_norm_rms_eps(spec["rms_eps"])
    w.add_vocab_size(spec["n_vocab"])
    if rope_linear_factor is not None:
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(rope_linear_factor)
    ftype = {"F32": 0, "F16": 1, "Q8_0": 7}[wtype]
    w.add_file_type(ftype)
    tokens, merges, types = ref_tokenizers.tiny_vocab()
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges([f"{a} {b}" for a, b in merges])
    w.add_bos_token_id(tokens.index("<|im_start|>"))
    w.add_eos_token_id(tokens.index("<|im_end|>"))
    w.add_unk_token_id(tokens.index("<|endoftext|>"))
    w.add_pad_token_id(tokens.index("<|endoftext|>"))
    w.add_add_bos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)
    qt = {"F32": None, "F16": gguf.GGMLQuantizationType.F16,
          "Q8_0": gguf.GGMLQuantizationType.Q8_0}[wtype]
    patches = {}
    if frugal_types:
        w.add_uint32(frugal_format.VERSION_KEY, frugal_format.FORMAT_VERSION)
    for name, a in gt.items():
        a = np.ascontiguousarray(a, dtype=np.float32)
        role = name.split(".")[-2] if name.startswith("blk.") else name.split(".")[0]
        if a.ndim == 2 and frugal_types and role in frugal_types:
            ftype = frugal_types[role]
            q, d, m = frugal_format.rtn(a, ftype)
            frugal_format.add_tensor(w, name, frugal_format.pack(q, d, m, ftype), patches, ftype,
                                     a.shape[1])
        elif a.ndim == 1 or qt is None:
            w.add_tensor(name, a)
        elif qt == gguf.GGMLQuantizationType.F16:
            w.add_tensor(name, a.astype(np.float16))
        else:
            w.add_tensor(name, gguf.quants.quantize(a, qt), raw_dtype=qt)
    if rope_freqs is not None:
        w.add_tensor("rope_freqs.weight", np.asarray(rope_freqs, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    frugal_format.patch_file(path, patches)
    return spec
