"""Frugal's tiled weight formats in numpy, written from docs/formats.md alone.

An independent second implementation of the layout: the tests pack tensors with it, have the
engine read them, and compare with the formula of the docs. Also writes such tensors into a GGUF
file: gguf.GGUFWriter does not know Frugal's type ids, so a tensor goes in as raw bytes (GGUF
I8, shape [rows, row_bytes]) and its type id and first dimension are patched in the header
afterwards (same byte lengths, so no offset moves).
"""

from __future__ import annotations

import struct

import numpy as np

FORMAT_VERSION = 1
VERSION_KEY = "frugal.format_version"

# name -> (type id, bits, group size (0 = per channel), asymmetric)
TYPES = {
    "I8_C": (1024, 8, 0, False),
    "I8_G32": (1025, 8, 32, False),
    "I8_G64": (1026, 8, 64, False),
    "I8_G128": (1027, 8, 128, False),
    "I4S_G32": (1028, 4, 32, False),
    "I4S_G64": (1029, 4, 64, False),
    "I4S_G128": (1030, 4, 128, False),
    "I4A_G32": (1031, 4, 32, True),
    "I4A_G64": (1032, 4, 64, True),
    "I4A_G128": (1033, 4, 128, True),
}
TILE = 8


def rtn(w: np.ndarray, name: str):
    """Round to nearest as docs/formats.md states: returns (q, d, m) with d, m per (row, group),
    already rounded to what is stored (fp16, or f32 for I8_C); m is None for symmetric types."""
    _, bits, g, asym = TYPES[name]
    rows, cols = w.shape
    g = cols if g == 0 else g
    wg = w.astype(np.float32).reshape(rows, cols // g, g)
    store = np.float32 if name == "I8_C" else np.float16
    if asym:
        lo, hi = wg.min(axis=2), wg.max(axis=2)
        d = ((hi - lo) / np.float32(15)).astype(store).astype(np.float32)
        m = lo.astype(store).astype(np.float32)
        inv = np.where(d != 0, np.float32(1) / np.where(d != 0, d, 1), 0).astype(np.float32)
        q = np.clip(np.rint((wg - m[..., None]) * inv[..., None]), 0, 15).astype(np.int8)
        return q.reshape(rows, cols), d, m
    amax = np.abs(wg).max(axis=2)
    d = (amax / np.float32(127 if bits == 8 else 7)).astype(store).astype(np.float32)
    inv = np.where(d != 0, np.float32(1) / np.where(d != 0, d, 1), 0).astype(np.float32)
    v = np.rint(wg * inv[..., None])
    q = np.clip(v, -127, 127) if bits == 8 else np.clip(v, -8, 7) + 8
    return q.astype(np.int8).reshape(rows, cols), d, None


def dequant(q: np.ndarray, d: np.ndarray, m, name: str) -> np.ndarray:
    """The value of every weight, in float32 as the engine computes it."""
    _, bits, g, asym = TYPES[name]
    rows, cols = q.shape
    g = cols if g == 0 else g
    dd = np.repeat(d.astype(np.float32), g, axis=1)
    qf = q.astype(np.float32)
    if asym:
        return qf * dd + np.repeat(m.astype(np.float32), g, axis=1)
    if bits == 4:
        return (qf - np.float32(8)) * dd
    return qf * dd


def _chunk(chunk: np.ndarray, bits: int) -> bytes:
    """One chunk (8 rows x 32 inputs) as 32-byte steps of 4 bytes per row: INT8 step k holds
    inputs 4k..4k+3; INT4 byte i of step k holds input 4k+i (low nibble) and 16+4k+i (high)."""
    if bits == 8:
        b = chunk.astype(np.int8).view(np.uint8)  # [8, 32]
    else:
        u = chunk.astype(np.uint8)
        b = u[:, :16] | (u[:, 16:] << 4)  # [8, 16]
    steps = b.reshape(8, -1, 4).transpose(1, 0, 2)  # [step, row, byte]
    return np.ascontiguousarray(steps).tobytes()


def pack(q: np.ndarray, d: np.ndarray, m, name: str) -> np.ndarray:
    """rows x cols stored integers + scales -> the tensor's bytes, as [rows, row_bytes] uint8."""
    _, bits, g, asym = TYPES[name]
    rows, cols = q.shape
    assert rows % TILE == 0
    out = []
    for t in range(rows // TILE):
        r = slice(t * TILE, (t + 1) * TILE)
        if g == 0:  # I8_C: f32 scales of the 8 rows, then 32-input chunks
            out.append(d[r, 0].astype("<f4").tobytes())
            for c in range(cols // 32):
                out.append(_chunk(q[r, c * 32:(c + 1) * 32], bits))
            continue
        for gi in range(cols // g):
            out.append(d[r, gi].astype("<f2").tobytes())
            if asym:
                out.append(m[r, gi].astype("<f2").tobytes())
            for c in range(g // 32):
                out.append(_chunk(q[r, gi * g + c * 32: gi * g + (c + 1) * 32], bits))
    raw = np.frombuffer(b"".join(out), dtype=np.uint8)
    return raw.reshape(rows, -1)


def add_tensor(writer, name: str, packed: np.ndarray, patches: dict, type_name: str, cols: int):
    """Adds packed bytes to a gguf.GGUFWriter as a placeholder; patch_file fixes the header."""
    import gguf

    writer.add_tensor(name, packed, raw_dtype=gguf.GGMLQuantizationType.I8)
    patches[name] = (packed.shape[1], cols, TYPES[type_name][0])


def patch_file(path: str, patches: dict) -> None:
    """Rewrites each placeholder's tensor info: ne[0] = row bytes -> cols, type I8 -> Frugal id."""
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        for name, (row_bytes, cols, type_id) in patches.items():
            key = struct.pack("<Q", len(name)) + name.encode()
            at = data.find(key)
            assert at >= 0, name
            p = at + len(key)
            (n_dims,) = struct.unpack_from("<I", data, p)
            assert n_dims == 2
            ne0, ne1 = struct.unpack_from("<QQ", data, p + 4)
            assert ne0 == row_bytes, (name, ne0, row_bytes)
            struct.pack_into("<Q", data, p + 4, cols)
            (typ,) = struct.unpack_from("<I", data, p + 20)
            assert typ == 24, typ  # GGUF I8
            struct.pack_into("<I", data, p + 20, type_id)
        f.seek(0)
        f.write(data)
