"""Independent numpy reference for Llama-family decoders (Llama, SmolLM, Qwen2).

Written from the published model definitions, not from the engine: it is the oracle the
black-box tests compare `frugal logits` and `frugal perplexity` against. Slow and simple on
purpose: one full-sequence forward pass, no KV cache, float64 by default.

Weights come either from a GGUF file (gguf.GGUFReader + gguf.quants.dequantize, so quantized
tensors are dequantized exactly as the file defines them) or from a Hugging Face folder
(config.json + *.safetensors, sharded or not). Matrices are kept as [out, in]; y = x @ W.T.

RoPE layout: llama.cpp's HF->GGUF converter permutes the rows of Q and K for arch "llama" so
that GGUF llama models rotate adjacent pairs (x[2i], x[2i+1]) ("normal" rope), whereas HF
checkpoints and GGUF qwen2 rotate the two halves (x[i], x[i + d/2]) ("neox" rope).
"""

from __future__ import annotations

import json
import math
import os
import struct
from dataclasses import dataclass, field

import numpy as np

# --------------------------------------------------------------------------------------------
# Model description


@dataclass
class LlamaModel:
    arch: str  # "llama" | "qwen2"
    n_layer: int
    n_embd: int
    n_head: int
    n_head_kv: int
    head_dim: int
    n_ff: int
    n_vocab: int
    rms_eps: float
    rope_theta: float
    rope_dim: int  # rotated dims per head (<= head_dim)
    rope_neox: bool  # True: half-split pairs; False: adjacent pairs
    # Per-frequency divisors (llama3 scaling, or GGUF rope_freqs.weight); None = all ones.
    rope_freq_factors: np.ndarray | None = None
    rope_pos_scale: float = 1.0  # linear scaling: positions multiplied by this (1 / factor)
    # Tensors by canonical (GGUF-style) name: token_embd, output_norm, output,
    # blk.{i}.{attn_norm,attn_q,attn_k,attn_v,attn_output,ffn_norm,ffn_gate,ffn_up,ffn_down}
    # (+ attn_q/k/v/output .bias). Each a float array, matrices [out, in].
    w: dict = field(default_factory=dict)

    def tensor(self, name: str) -> np.ndarray | None:
        return self.w.get(name)


# --------------------------------------------------------------------------------------------
# RoPE helpers



# Per-layer tensor names: transformers (HF) -> GGUF.
HF_TO_GGUF = {
    "input_layernorm": "attn_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "post_attention_layernorm": "ffn_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}

def llama3_freq_factors(
    head_dim_rot: int,
    theta: float,
    factor: float,
    low_freq_factor: float,
    high_freq_factor: float,
    original_ctx: int,
) -> np.ndarray:
    """Divisors d_i such that the llama3-scaled inverse frequency is inv_freq_i / d_i.

    Llama 3.1 scaling: wavelengths shorter than original_ctx / high_freq_factor are kept,
    wavelengths longer than original_ctx / low_freq_factor are stretched by `factor`, and the
    band between them is interpolated linearly in (original_ctx / wavelength).
    """
    i = np.arange(0, head_dim_rot, 2, dtype=np.float64)
    inv_freq = theta ** (-i / head_dim_rot)
    wavelen = 2.0 * math.pi / inv_freq
    low_wavelen = original_ctx / low_freq_factor
    high_wavelen = original_ctx / high_freq_factor
    scaled = np.empty_like(inv_freq)
    for j, (f, wl) in enumerate(zip(inv_freq, wavelen)):
        if wl < high_wavelen:
            scaled[j] = f
        elif wl > low_wavelen:
            scaled[j] = f / factor
        else:
            smooth = (original_ctx / wl - low_freq_factor) / (high_freq_factor - low_freq_factor)
            scaled[j] = (1.0 - smooth) * f / factor + smooth * f
    return inv_freq / scaled


def rope_cos_sin(m: LlamaModel, positions: np.ndarray, dtype) -> tuple[np.ndarray, np.ndarray]:
    half = m.rope_dim // 2
    i = np.arange(half, dtype=np.float64)
    inv_freq = m.rope_theta ** (-2.0 * i / m.rope_dim)
    if m.rope_freq_factors is not None:
        inv_freq = inv_freq / np.asarray(m.rope_freq_factors, dtype=np.float64)
    ang = np.outer(positions.astype(np.float64) * m.rope_pos_scale, inv_freq)  # [T, half]
    return np.cos(ang).astype(dtype), np.sin(ang).astype(dtype)


def apply_rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, rope_dim: int, neox: bool):
    """x: [T, H, D]; rotates the first rope_dim dims of each head."""
    out = x.copy()
    c = cos[:, None, :]
    s = sin[:, None, :]
    if neox:
        half = rope_dim // 2
        a = x[..., :half]
        b = x[..., half:rope_dim]
        out[..., :half] = a * c - b * s
        out[..., half:rope_dim] = a * s + b * c
    else:
        a = x[..., 0:rope_dim:2]
        b = x[..., 1:rope_dim:2]
        out[..., 0:rope_dim:2] = a * c - b * s
        out[..., 1:rope_dim:2] = a * s + b * c
    return out


def permute_qk_for_gguf(w: np.ndarray, n_head: int) -> np.ndarray:
    """Row permutation llama.cpp applies to HF Q/K weights (or biases) for GGUF arch llama.

    Within each head, HF row j (j < d/2) goes to 2j and row j + d/2 goes to 2j + 1, turning
    half-split rotation into adjacent-pair rotation.
    """
    rows = w.shape[0]
    d = rows // n_head
    idx = np.empty(rows, dtype=np.int64)
    for h in range(n_head):
        for j in range(d // 2):
            idx[h * d + 2 * j] = h * d + j
            idx[h * d + 2 * j + 1] = h * d + j + d // 2
    return w[idx]


# --------------------------------------------------------------------------------------------
# Forward


def rms_norm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    ms = np.mean(x * x, axis=-1, keepdims=True)
    return x / np.sqrt(ms + eps) * w


def silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def quantize_act_q8(x: np.ndarray) -> np.ndarray:
    """Activations rounded as the engine's INT8 path does (float32, per 32 along the last axis):
    d = max|x| / 127, q = rint(x / d); returns q * d."""
    xf = x.astype(np.float32)
    blocks = xf.reshape(*xf.shape[:-1], -1, 32)
    d = np.abs(blocks).max(axis=-1, keepdims=True) / np.float32(127)
    inv = np.where(d != 0, np.float32(1) / np.where(d != 0, d, 1), 0).astype(np.float32)
    q = np.rint(blocks * inv)
    return (q * d).reshape(x.shape).astype(x.dtype)


def forward(m: LlamaModel, tokens, dtype=np.float64, int8_inputs: bool = False) -> np.ndarray:
    """Logits [T, n_vocab] for every position of `tokens` (positions 0..T-1, causal).

    int8_inputs: round the input of every per-layer matrix (not the output head) as the
    engine's `--activations int8` does for weight types with an integer kernel."""
    a8 = quantize_act_q8 if int8_inputs else (lambda v: v)
    ids = np.asarray(tokens, dtype=np.int64)
    T = len(ids)
    W = {k: v.astype(dtype, copy=False) for k, v in m.w.items()}
    x = W["token_embd"][ids]
    cos, sin = rope_cos_sin(m, np.arange(T), dtype)
    H, Hkv, D = m.n_head, m.n_head_kv, m.head_dim
    group = H // Hkv
    mask = np.triu(np.full((T, T), -np.inf, dtype=dtype), k=1)
    scale = 1.0 / math.sqrt(D)
    for l in range(m.n_layer):
        p = f"blk.{l}."
        h = a8(rms_norm(x, W[p + "attn_norm"], m.rms_eps))

        def proj(name):
            y = h @ W[p + name].T
            b = W.get(p + name + ".bias")
            return y if b is None else y + b

        q = proj("attn_q").reshape(T, H, D)
        k = proj("attn_k").reshape(T, Hkv, D)
        v = proj("attn_v").reshape(T, Hkv, D)
        q = apply_rope(q, cos, sin, m.rope_dim, m.rope_neox)
        k = apply_rope(k, cos, sin, m.rope_dim, m.rope_neox)
        att = np.empty((T, H, D), dtype=dtype)
        for hh in range(H):
            kv = hh // group
            s = (q[:, hh, :] @ k[:, kv, :].T) * scale + mask
            s = s - s.max(axis=-1, keepdims=True)
            e = np.exp(s)
            pr = e / e.sum(axis=-1, keepdims=True)
            att[:, hh, :] = pr @ v[:, kv, :]
        o = a8(att.reshape(T, H * D)) @ W[p + "attn_output"].T
        if (b := W.get(p + "attn_output.bias")) is not None:
            o = o + b
        x = x + o
        h = a8(rms_norm(x, W[p + "ffn_norm"], m.rms_eps))
        g = h @ W[p + "ffn_gate"].T
        u = h @ W[p + "ffn_up"].T
        x = x + a8(silu(g) * u) @ W[p + "ffn_down"].T
    x = rms_norm(x, W["output_norm"], m.rms_eps)
    out = W.get("output")
    if out is None:
        out = W["token_embd"]  # tied embeddings
    return x @ out.T


def log_softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def nll_per_position(m: LlamaModel, tokens, dtype=np.float64) -> np.ndarray:
    """-log p(tokens[i+1] | tokens[:i+1]) for i = 0..T-2."""
    logits = forward(m, tokens, dtype)
    lp = log_softmax(logits[:-1].astype(np.float64))
    nxt = np.asarray(tokens[1:], dtype=np.int64)
    return -lp[np.arange(len(nxt)), nxt]


# --------------------------------------------------------------------------------------------
# Loading: GGUF


def _gguf_field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    return f.contents()


def load_gguf(path: str, dtype=np.float32) -> LlamaModel:
    import gguf
    from gguf import GGUFReader

    r = GGUFReader(path)
    arch = _gguf_field(r, "general.architecture")
    if arch not in ("llama", "qwen2"):
        raise ValueError(f"reference supports llama/qwen2, not {arch!r}")
    g = lambda k, d=None: _gguf_field(r, f"{arch}.{k}", d)  # noqa: E731
    w = {}
    for t in r.tensors:
        name = t.name[: -len(".weight")] if t.name.endswith(".weight") else t.name
        arr = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type)
        # GGUF shape is (ne0, ne1, ...) with ne0 fastest: numpy order is reversed.
        shape = tuple(int(s) for s in reversed(t.shape.tolist()))
        w[name] = np.ascontiguousarray(arr.reshape(shape)).astype(dtype, copy=False)
    n_embd = int(g("embedding_length"))
    n_head = int(g("attention.head_count"))
    head_dim = int(g("attention.key_length", n_embd // n_head))
    rope_dim = int(g("rope.dimension_count", head_dim))
    m = LlamaModel(
        arch=arch,
        n_layer=int(g("block_count")),
        n_embd=n_embd,
        n_head=n_head,
        n_head_kv=int(g("attention.head_count_kv", n_head)),
        head_dim=head_dim,
        n_ff=int(g("feed_forward_length")),
        n_vocab=int(w["token_embd"].shape[0]),
        rms_eps=float(g("attention.layer_norm_rms_epsilon", 1e-5)),
        rope_theta=float(g("rope.freq_base", 10000.0)),
        rope_dim=rope_dim,
        rope_neox=(arch == "qwen2"),
        w=w,
    )
    ff = w.pop("rope_freqs", None)
    if ff is not None:
        m.rope_freq_factors = ff.astype(np.float64).reshape(-1)
    stype = g("rope.scaling.type")
    if stype == "linear":
        m.rope_pos_scale = 1.0 / float(g("rope.scaling.factor", 1.0))
    elif stype not in (None, "none"):
        raise ValueError(f"reference does not implement GGUF rope scaling {stype!r}")
    return m


# --------------------------------------------------------------------------------------------
# Loading: Hugging Face folder

_ST_DTYPES = {
    "F32": np.float32,
    "F16": np.float16,
    "F64": np.float64,
    "BF16": "bf16",
    "I64": np.int64,
    "I32": np.int32,
}


def read_safetensors(path: str) -> dict:
    """Own minimal reader (BF16 included): {name: float32/float64 ndarray}."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        base = 8 + n
        data = np.memmap(path, dtype=np.uint8, mode="r", offset=base)
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        raw = np.asarray(data[b:e])
        dt = _ST_DTYPES[info["dtype"]]
        if dt == "bf16":
            arr = (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            arr = raw.view(dt)
        out[name] = arr.reshape(info["shape"])
    return out


def read_hf_tensors(folder: str) -> dict:
    idx = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(idx):
        files = sorted(set(json.load(open(idx))["weight_map"].values()))
    else:
        files = sorted(f for f in os.listdir(folder) if f.endswith(".safetensors"))
    t = {}
    for f in files:
        t.update(read_safetensors(os.path.join(folder, f)))
    return t


def load_hf(folder: str, dtype=np.float64) -> LlamaModel:
    cfg = json.load(open(os.path.join(folder, "config.json")))
    mt = cfg.get("model_type", "llama")
    if mt not in ("llama", "qwen2", "mistral"):
        raise ValueError(f"reference supports llama/qwen2, not {mt!r}")
    t = read_hf_tensors(folder)
    n_embd = cfg["hidden_size"]
    n_head = cfg["num_attention_heads"]
    head_dim = cfg.get("head_dim") or n_embd // n_head
    w = {
        "token_embd": t["model.embed_tokens.weight"],
        "output_norm": t["model.norm.weight"],
    }
    if not cfg.get("tie_word_embeddings", False) and "lm_head.weight" in t:
        w["output"] = t["lm_head.weight"]
    for l in range(cfg["num_hidden_layers"]):
        for hf, gg in HF_TO_GGUF.items():
            w[f"blk.{l}.{gg}"] = t[f"model.layers.{l}.{hf}.weight"]
            b = t.get(f"model.layers.{l}.{hf}.bias")
            if b is not None:
                w[f"blk.{l}.{gg}.bias"] = b
    w = {k: np.asarray(v).astype(dtype) for k, v in w.items()}
    theta = float(cfg.get("rope_theta", 10000.0))
    rope_dim = int(head_dim * cfg.get("partial_rotary_factor", 1.0))
    m = LlamaModel(
        arch=mt,
        n_layer=cfg["num_hidden_layers"],
        n_embd=n_embd,
        n_head=n_head,
        n_head_kv=cfg.get("num_key_value_heads") or n_head,
        head_dim=head_dim,
        n_ff=cfg["intermediate_size"],
        n_vocab=w["token_embd"].shape[0],
        rms_eps=float(cfg.get("rms_norm_eps", 1e-6)),
        rope_theta=theta,
        rope_dim=rope_dim,
        rope_neox=True,
        w=w,
    )
    rs = cfg.get("rope_scaling") or {}
    rtype = rs.get("rope_type", rs.get("type"))
    if rtype == "llama3":
        m.rope_freq_factors = llama3_freq_factors(
            rope_dim,
            theta,
            float(rs["factor"]),
            float(rs.get("low_freq_factor", 1.0)),
            float(rs.get("high_freq_factor", 4.0)),
            int(rs["original_max_position_embeddings"]),
        )
    elif rtype == "linear":
        m.rope_pos_scale = 1.0 / float(rs["factor"])
    elif rtype not in (None, "default"):
        raise ValueError(f"reference does not implement rope_scaling {rtype!r}")
    return m


def load(path: str, dtype=np.float64) -> LlamaModel:
    if os.path.isdir(path):
        return load_hf(path, dtype)
    return load_gguf(path, dtype)
