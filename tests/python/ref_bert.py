"""Independent numpy reference for BERT sentence embeddings (all-MiniLM-L6-v2 style).

Embeddings (word + position + token type) -> LayerNorm -> post-LN encoder layers
(self-attention, residual, LayerNorm; GELU(erf) feed-forward, residual, LayerNorm) ->
mean pooling over the attention mask (or the first token, when 1_Pooling/config.json says
cls) -> L2 normalisation. Weights from model.safetensors + config.json; tokenization with the
folder's tokenizer.json through the `tokenizers` package. XLM-R / RoBERTa (model_type
"xlm-roberta" / "roberta"): positions start at pad_token_id + 1, as transformers'
create_position_ids_from_input_ids numbers them.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np

from ref_llama import read_safetensors

def _erf(x: np.ndarray) -> np.ndarray:
    # numpy has no erf; vectorise math.erf (exact to double precision, fast enough here).
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def gelu_erf(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def layer_norm(x, w, b, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


class BertEmbedder:
    def __init__(self, folder: str):
        self.cfg = json.load(open(os.path.join(folder, "config.json")))
        t = read_safetensors(os.path.join(folder, "model.safetensors"))
        # Some exports prefix every name with "bert." or "roberta."; accept those.
        def strip(k):
            for p in ("bert.", "roberta."):
                if k.startswith(p):
                    return k[len(p):]
            return k

        self.w = {strip(k): np.asarray(v, np.float64) for k, v in t.items() if v.dtype.kind == "f"}
        roberta = self.cfg.get("model_type") in ("xlm-roberta", "roberta")
        self.pos_offset = int(self.cfg.get("pad_token_id", 1)) + 1 if roberta else 0
        self.cls_pooling = False
        pooling = os.path.join(folder, "1_Pooling", "config.json")
        if os.path.exists(pooling):
            self.cls_pooling = bool(json.load(open(pooling)).get("pooling_mode_cls_token", False))
        from tokenizers import Tokenizer

        self.tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        self.tok.no_padding()
        self.tok.no_truncation()
        self.max_len = 256
        stc = os.path.join(folder, "sentence_bert_config.json")
        if os.path.exists(stc):
            self.max_len = int(json.load(open(stc)).get("max_seq_length", 256))

    def token_ids(self, text: str) -> list[int]:
        ids = self.tok.encode(text).ids  # [CLS] ... [SEP]
        if len(ids) > self.max_len:
            ids = ids[: self.max_len - 1] + [ids[-1]]
        return ids

    def hidden_states(self, ids: list[int]) -> np.ndarray:
        c, w = self.cfg, self.w
        eps = float(c.get("layer_norm_eps", 1e-12))
        T = len(ids)
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][self.pos_offset:self.pos_offset + T]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        H = c["num_attention_heads"]
        D = c["hidden_size"] // H
        for l in range(c["num_hidden_layers"]):
            p = f"encoder.layer.{l}."

            def lin(name, inp):
                return inp @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            q = lin("attention.self.query", x).reshape(T, H, D).transpose(1, 0, 2)
            k = lin("attention.self.key", x).reshape(T, H, D).transpose(1, 0, 2)
            v = lin("attention.self.value", x).reshape(T, H, D).transpose(1, 0, 2)
            s = q @ k.transpose(0, 2, 1) / math.sqrt(D)  # no mask: one unpadded sequence
            s = s - s.max(axis=-1, keepdims=True)
            pr = np.exp(s)
            pr /= pr.sum(axis=-1, keepdims=True)
            a = (pr @ v).transpose(1, 0, 2).reshape(T, H * D)
            x = layer_norm(x + lin("attention.output.dense", a),
                           w[p + "attention.output.LayerNorm.weight"],
                           w[p + "attention.output.LayerNorm.bias"], eps)
            h = gelu_erf(lin("intermediate.dense", x))
            x = layer_norm(x + lin("output.dense", h),
                           w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
        return x

    def embed(self, text: str) -> np.ndarray:
        ids = self.token_ids(text)
        h = self.hidden_states(ids)
        if self.cls_pooling:
            return h[0] / np.linalg.norm(h[0])
        mask = np.ones(len(ids))  # single unpadded sequence: every token counts
        v = (h * mask[:, None]).sum(axis=0) / mask.sum()
        return v / np.linalg.norm(v)

    def embed_batch_padded(self, texts: list[str]) -> np.ndarray:
        """Same result computed the way batched encoders do it: pad to the longest sequence,
        mask padded keys in attention, and mean-pool only over real tokens. Used to check that
        padding handling does not change the embedding."""
        c, w = self.cfg, self.w
        eps = float(c.get("layer_norm_eps", 1e-12))
        seqs = [self.token_ids(t) for t in texts]
        T = max(len(s) for s in seqs)
        B = len(seqs)
        ids = np.zeros((B, T), dtype=np.int64)
        mask = np.zeros((B, T))
        for i, s in enumerate(seqs):
            ids[i, : len(s)] = s
            mask[i, : len(s)] = 1
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:T][None]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        H = c["num_attention_heads"]
        D = c["hidden_size"] // H
        bias = (1.0 - mask)[:, None, None, :] * -1e9
        for l in range(c["num_hidden_layers"]):
            p = f"encoder.layer.{l}."

            def lin(name, inp):
                return inp @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            q = lin("attention.self.query", x).reshape(B, T, H, D).transpose(0, 2, 1, 3)
            k = lin("attention.self.key", x).reshape(B, T, H, D).transpose(0, 2, 1, 3)
            v = lin("attention.self.value", x).reshape(B, T, H, D).transpose(0, 2, 1, 3)
            s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(D) + bias
            s = s - s.max(axis=-1, keepdims=True)
            pr = np.exp(s)
            pr /= pr.sum(axis=-1, keepdims=True)
            a = (pr @ v).transpose(0, 2, 1, 3).reshape(B, T, H * D)
            x = layer_norm(x + lin("attention.output.dense", a),
                           w[p + "attention.output.LayerNorm.weight"],
                           w[p + "attention.output.LayerNorm.bias"], eps)
            h = gelu_erf(lin("intermediate.dense", x))
            x = layer_norm(x + lin("output.dense", h),
                           w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
        v = (x * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        return v / np.linalg.norm(v, axis=1, keepdims=True)
