#!/usr/bin/env python3
"""Generate the quantization datasets of the e-commerce customer-service domain.

Writes three files (see docs/quant-data.md):

  numeric_probes.jsonl  prompts whose answer repeats or computes numbers from the prompt, for
                        `frugal eval` (reference vs quantized greedy answers, numbers compared)
  calib_cs.jsonl        {"prompt", "answer"} lines for `frugal quantize` calibration
  heldout_cs.txt        plain-text dialogues and FAQ prose for perplexity / KL divergence

Deterministic: every file has its own seeded random.Random and nothing else varies, so running
it again rewrites the committed files byte for byte. Python 3 standard library only.

    python3 tests/data/gen_quant_data.py              # writes next to this script
    python3 tests/data/gen_quant_data.py --out DIR    # writes into DIR
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
from pathlib import Path
from random import Random

PROBE_SEED = 20260312
CALIB_SEED = 4417
HELDOUT_SEED = 917203

N_PROBES_PER_KIND = 33  # 8 kinds -> 264 probes
N_CALIB = 2000
CALIB_ZH_EVERY = 4  # every 4th calibration item is Chinese
HELDOUT_MIN_BYTES = 30000

PROBES_FILE = "numeric_probes.jsonl"
CALIB_FILE = "calib_cs.jsonl"
HELDOUT_FILE = "heldout_cs.txt"

# ----------------------------------------------------------------------------------------------
# Money, numbers and dates


class Money:
    """Amounts are integers in minor units (cents; yen for JPY). Arithmetic stays exact and the
    one rounding, of percentages, is half-up."""

    CUR = {
        "USD": ("$", 2, 1.0),
        "EUR": ("€", 2, 0.92),
        "GBP": ("£", 2, 0.79),
        "JPY": ("¥", 0, 150.0),
        "CNY": ("¥", 2, 7.2),
    }

    def __init__(self, code: str, style: str = "sym", comma: bool = True):
        self.code = code
        self.sym, self.dec, self.rate = self.CUR[code]
        self.style = style  # sym: $1,299.00  code: 1,299.00 USD  yuan: 1,299.00元
        self.comma = comma

    def num(self, minor: int) -> str:
        assert minor >= 0, minor
        if self.dec == 0:
            return f"{minor:,}" if self.comma else str(minor)
        units, cents = divmod(minor, 100)
        return (f"{units:,}" if self.comma else str(units)) + f".{cents:02d}"

    def fmt(self, minor: int) -> str:
        n = self.num(minor)
        if self.style == "code":
            return f"{n} {self.code}"
        if self.style == "yuan":
            return f"{n}元"
        return self.sym + n

    def to_usd(self, minor: int) -> float:
        return (minor / 100 if self.dec else minor) / self.rate

    def rand(self, rng: Random, lo_usd: float, hi_usd: float, rounded: bool = False) -> int:
        """A realistic shelf price between lo and hi US dollars, in this currency."""
        v = rng.uniform(lo_usd, hi_usd) * self.rate
        if self.dec == 0:
            step = 100 if v >= 1000 else 10
            return max(step, int(round(v / step)) * step)
        whole = max(1, int(v))
        if rounded:
            whole = max(5, (whole + 2) // 5 * 5)
            return whole * 100
        ending = rng.choice([99, 99, 99, 95, 50, 0, 49, 90, 0, 75])
        return whole * 100 + ending

    def small(self, rng: Random, lo_usd: float, hi_usd: float) -> int:
        """Fees and shipping: x.00 / x.50 / x.95 / x.99."""
        v = rng.uniform(lo_usd, hi_usd) * self.rate
        if self.dec == 0:
            return max(100, int(round(v / 50)) * 50)
        return max(1, int(v)) * 100 + rng.choice([0, 50, 95, 99, 0, 49])

    def whole(self, rng: Random, lo_usd: int, hi_usd: int, step_usd: int = 5) -> int:
        """Thresholds and round amounts: $50.00, €75.00, ¥7,500."""
        v = rng.randrange(lo_usd, hi_usd + 1, step_usd)
        if self.dec == 0:
            return int(v * self.rate) // 500 * 500
        return int(round(v * self.rate / step_usd)) * step_usd * 100

    def pct(self, minor: int, pct) -> int:
        """pct percent of an amount, half-up. pct may be a float such as 8.25."""
        bp = int(round(pct * 100))
        return (minor * bp + 5000) // 10000


def pct_str(p) -> str:
    return f"{p:g}"


MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


def fmt_date(d: dt.date, style: str) -> str:
    if style == "dmy":
        return f"{d.day} {MONTHS[d.month - 1]} {d.year}"
    if style == "mdy":
        return f"{MONTHS[d.month - 1]} {d.day}, {d.year}"
    if style == "iso":
        return d.isoformat()
    if style == "wdmy":
        return f"{WEEKDAYS[d.weekday()]}, {d.day} {MONTHS[d.month - 1]} {d.year}"
    if style == "wmdy":
        return f"{WEEKDAYS[d.weekday()]}, {MONTHS[d.month - 1]} {d.day}, {d.year}"
    if style == "dm":
        return f"{d.day} {MONTHS[d.month - 1]}"
    if style == "md":
        return f"{MONTHS[d.month - 1]} {d.day}"
    if style == "wdm":
        return f"{WEEKDAYS[d.weekday()]} {d.day} {MONTHS[d.month - 1]}"
    raise ValueError(style)


def date_expect(d: dt.date, style: str) -> list[str]:
    if style == "iso":
        return [d.isoformat()]
    return [str(d.day), str(d.year)]


def zh_date(d: dt.date, year: bool = True) -> str:
    return (f"{d.year}年" if year else "") + f"{d.month}月{d.day}日"


def add_bdays(d: dt.date, n: int) -> dt.date:
    while n > 0:
        d += dt.timedelta(days=1)
        if d.weekday() < 5:
            n -= 1
    return d


def rand_date(rng: Random, weekday: bool = False) -> dt.date:
    while True:
        d = dt.date(2025, 9, 1) + dt.timedelta(days=rng.randrange(0, 300))
        if not weekday or d.weekday() < 5:
            return d


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {many or word + 's'}"


# ----------------------------------------------------------------------------------------------
# Catalog

# noun, low and high price in US dollars, apparel (has sizes)
PRODUCTS = [
    ("Kettle", 22, 65, False), ("Desk Lamp", 18, 90, False), ("Backpack", 35, 140, False),
    ("Yoga Mat", 19, 70, False), ("Wool Scarf", 25, 80, False), ("Water Bottle", 12, 40, False),
    ("Rain Jacket", 60, 220, True), ("Coffee Grinder", 30, 180, False),
    ("Phone Case", 9, 35, False), ("Throw Pillow", 15, 55, False),
    ("Cutting Board", 14, 60, False), ("Travel Mug", 10, 35, False),
    ("Bluetooth Speaker", 25, 250, False), ("Denim Jacket", 50, 160, True),
    ("Ceramic Vase", 18, 90, False), ("Office Chair", 140, 1400, False),
    ("Table Fan", 25, 120, False), ("Hair Dryer", 25, 300, False), ("Wall Clock", 15, 80, False),
    ("Espresso Machine", 150, 1600, False), ("Road Bike", 650, 2800, False),
    ("Sofa", 520, 2400, False), ("Standing Desk", 260, 1200, False),
    ("Air Purifier", 90, 600, False), ("Duvet Cover", 35, 150, False),
    ("Chef's Knife", 25, 200, False), ("Robot Vacuum", 150, 900, False),
    ("Electric Toothbrush", 25, 180, False), ("Suitcase", 70, 450, False),
    ("Field Watch", 80, 1500, False), ("Cast Iron Skillet", 20, 90, False),
    ("Laptop Sleeve", 15, 45, False), ("Winter Coat", 90, 400, True), ("Hoodie", 30, 90, True),
    ("Linen Shirt", 35, 110, True), ("Rug", 60, 700, False), ("Blender", 35, 400, False),
    ("Tent", 90, 650, False), ("Camera Bag", 30, 160, False), ("Sweater", 40, 160, True),
    ("Tea Towel", 6, 18, False), ("Scented Candle", 10, 40, False), ("Storage Jar", 8, 28, False),
    ("Wine Glass", 8, 30, False),
]
APPAREL = [p for p in PRODUCTS if p[3]]
ELECTRIC = [p for p in PRODUCTS if p[0] in {
    "Kettle", "Desk Lamp", "Coffee Grinder", "Bluetooth Speaker", "Table Fan", "Hair Dryer",
    "Espresso Machine", "Air Purifier", "Robot Vacuum", "Electric Toothbrush", "Blender",
    "Field Watch", "Office Chair", "Standing Desk"}]
CHEAP = [p for p in PRODUCTS if p[2] <= 250]
PACKABLE = [p for p in PRODUCTS if p[0] in {
    "Tea Towel", "Scented Candle", "Storage Jar", "Wine Glass", "Water Bottle", "Travel Mug",
    "Throw Pillow"}]
COLLECTIONS = ["Blue", "Graphite", "Sage", "Coral", "Ivory", "Midnight", "Copper", "Olive",
               "Nordic", "Classic", "Compact", "Alpine", "Harbor", "Summit", "Urban", "Meadow",
               "Sandstone", "Arctic", "Juniper", "Slate", "Cedar", "Lumen", "Terra", "Willow"]

ZH_PRODUCTS = [
    ("电水壶", 89, 399), ("保温杯", 59, 199), ("双肩包", 129, 599), ("瑜伽垫", 69, 259),
    ("羊毛围巾", 139, 459), ("台灯", 79, 499), ("蓝牙音箱", 149, 1299), ("运动鞋", 299, 1099),
    ("羽绒服", 499, 1899), ("陶瓷花瓶", 59, 329), ("空气净化器", 699, 3299), ("电动牙刷", 129, 699),
    ("行李箱", 299, 1599), ("连衣裙", 199, 699), ("咖啡机", 599, 4999), ("四件套床品", 199, 899),
    ("机械键盘", 199, 999), ("无线耳机", 149, 1499), ("落地扇", 129, 599), ("办公椅", 399, 2599),
]
ZH_COLORS = ["浅灰色", "藏青色", "米白色", "墨绿色", "酒红色", "天蓝色", "燕麦色", "黑色"]

SHOPS = ["Northwind Goods", "Maple & Co", "BrightCart", "Harbor Home", "Peak Outfitters",
         "Lumen Living", "CasaVerde", "Kettle & Crumb", "Tidewater Supply", "Oakline Store",
         "Pebble Market", "Summit Gear"]
ZH_SHOPS = ["优品生活", "青禾家居", "星河数码", "暖阳服饰", "山月户外", "小满杂货"]
CARRIERS = ["UPS", "DHL", "FedEx", "USPS", "DPD", "Royal Mail", "GLS", "Yamato"]
ZH_CARRIERS = ["顺丰", "中通", "京东物流", "圆通", "韵达", "EMS"]
CITIES = ["Leeds", "Denver", "Lyon", "Osaka", "Austin", "Rotterdam", "Dublin", "Portland",
          "Hamburg", "Toronto", "Valencia", "Melbourne", "Columbus", "Nagoya", "Milan", "Atlanta"]
COUNTRIES = ["Canada", "Germany", "France", "Japan", "Australia", "Ireland", "Spain", "Mexico",
             "the Netherlands", "Sweden", "Italy", "New Zealand", "Norway", "Portugal"]
FIRST_NAMES = ["Maya", "Daniel", "Priya", "Tom", "Elena", "Kenji", "Sofia", "Marcus", "Aisha",
               "Liam", "Hannah", "Omar", "Chloe", "Lucas", "Nadia", "Ben", "Grace", "Ivan",
               "Rosa", "Samuel", "Yuki", "Leah", "Mateo", "Zoe"]
AGENT_NAMES = ["Sam", "Jordan", "Alex", "Riley", "Morgan", "Casey", "Jamie", "Taylor"]
ZH_SURNAMES = ["王", "李", "张", "刘", "陈", "杨", "赵", "周"]


def product(rng: Random, apparel: bool = False, electric: bool = False, cheap: bool = False,
            pack: bool = False):
    """(name, low, high): a catalogue item; apparel has sizes, electric items carry a warranty,
    cheap ones (at most $250) are the ones people buy several of, packable ones come in packs."""
    pool = (APPAREL if apparel else ELECTRIC if electric else CHEAP if cheap else
            PACKABLE if pack else PRODUCTS)
    noun, lo, hi, _ = rng.choice(pool)
    return f"{rng.choice(COLLECTIONS)} {noun}", lo, hi


def two_products(rng: Random, cheap_first: bool = False):
    while True:
        a, b = product(rng, cheap=cheap_first), product(rng)
        if a[0].split()[-1] != b[0].split()[-1] and a[0] != b[0]:
            return a, b


def zh_product(rng: Random):
    noun, lo, hi = rng.choice(ZH_PRODUCTS)
    return rng.choice(ZH_COLORS) + noun, lo, hi


def cny(rng: Random, lo: int, hi: int) -> int:
    return rng.randint(lo, hi) * 100 + rng.choice([0, 0, 0, 90, 50, 80])


def order_id(rng: Random) -> str:
    form = rng.randrange(5)
    if form == 0:
        return f"{rng.choice('ABCDEFGHKMNPRSTW')}-{rng.randint(10000, 99999)}-{rng.randint(10, 99)}"
    if form == 1:
        return str(rng.randint(100000, 999999))
    if form == 2:
        return f"FR-2026-{rng.randint(1, 99999):06d}"
    if form == 3:
        return f"{rng.randint(1000, 9999)}-{rng.randint(1000, 9999)}"
    return f"{rng.choice(['NW', 'BC', 'HH', 'PO', 'LL'])}{rng.randint(1000000, 9999999)}"


def tracking(rng: Random, carrier: str) -> str:
    if carrier == "UPS":
        return "1Z" + "".join(rng.choice("0123456789ABCDEFGHJKLMNPRTVWXY") for _ in range(6)) + \
            "".join(rng.choice("0123456789") for _ in range(10))
    if carrier in ("USPS",):
        return "9400" + "".join(rng.choice("0123456789") for _ in range(18))
    if carrier == "Royal Mail":
        return f"{rng.choice(['RM', 'JD', 'AB'])}{rng.randint(10000000, 99999999)}GB"
    if carrier == "顺丰":
        return "SF" + str(rng.randint(10 ** 12, 10 ** 13 - 1))
    if carrier == "京东物流":
        return "JD" + str(rng.randint(10 ** 12, 10 ** 13 - 1))
    if carrier == "EMS":
        return f"E{rng.choice('ABCLM')}{rng.randint(100000000, 999999999)}CN"
    return str(rng.randint(10 ** 9, 10 ** 12 - 1))


def rand_money(rng: Random, codes=(("USD", 6), ("EUR", 3), ("JPY", 2))) -> Money:
    code = rng.choices([c for c, _ in codes], weights=[w for _, w in codes])[0]
    style = "code" if rng.random() < 0.15 else "sym"
    comma = rng.random() < 0.85
    return Money(code, style, comma)


def cjk(s: str) -> bool:
    return re.search(r"[\u4e00-\u9fff]", s) is not None


# ----------------------------------------------------------------------------------------------
# 1. Numeric probes

SYSTEM_EN = [
    "You are the customer-service assistant for {shop}.\n{rec}\nAnswer in one short sentence.",
    "You answer customer questions for {shop}. Use only these facts:\n{rec}\n"
    "Reply in one short sentence.",
    "{shop} support desk. Record:\n{rec}\nGive the customer a one-sentence answer.",
    "You work at the {shop} help desk. Store data:\n{rec}\n"
    "Keep your answer to one short sentence.",
    "You are a helpful shop assistant at {shop}.\nFacts:\n{rec}\n"
    "Answer briefly, in one sentence, and repeat the exact numbers.",
]
SYSTEM_ZH = [
    "你是{shop}的在线客服。资料：\n{rec}\n请用一句简短的话回答顾客。",
    "你是{shop}的客服助手，只根据以下信息回答：\n{rec}\n回答限一句话。",
]
GREET = ["", "", "", "Hi! ", "Hello, ", "Hi there, ", "Quick question: ", "Good morning. "]


def greet(rng: Random, q: str) -> str:
    g = rng.choice(GREET)
    if g and g[-2] not in "!.:":
        q = q[0].lower() + q[1:] if not q.startswith("I ") and not q.startswith("I'") else q
    return g + q


# Each template returns (record lines, user question, expect list). Every user question carries
# at least one number (an item id, an order number, a quantity, a price or a date).

def item_id(rng) -> int:
    return rng.randint(1000, 9999)


def pr_lookup(rng, m):
    name, lo, hi = product(rng)
    iid = item_id(rng)
    p = m.rand(rng, lo, hi)
    rec = [f"Product: {name} (item {iid})", f"Price: {m.fmt(p)}",
           f"In stock: {rng.randint(2, 80)} units"]
    q = rng.choice([f"How much is the {name}, item {iid}?", f"What does item {iid} cost?",
                    f"What's the price of item {iid}?",
                    f"How much do you charge for the {name} (item {iid})?"])
    return rec, q, [m.num(p)]


def pr_adjacent(rng, m):
    (n1, lo1, hi1), (n2, lo2, hi2) = two_products(rng)
    iid = rng.randint(1000, 9998)
    if rng.random() < 0.3:
        iid = rng.choice([1299, 1999, 2099, 4999, 999, 1099, 3299])
    p1, p2 = m.rand(rng, lo1, hi1), m.rand(rng, lo2, hi2)
    rec = [f"Item {iid}: {n1}, {m.fmt(p1)}", f"Item {iid + 1}: {n2}, {m.fmt(p2)}"]
    if rng.random() < 0.5:
        return rec, f"What is the price of item {iid + 1}?", [m.num(p2)]
    return rec, f"How much is item {iid}?", [m.num(p1)]


def pr_pack(rng, m):
    name, lo, hi = product(rng, pack=True)
    iid, k = item_id(rng), rng.choice([2, 3, 4, 6])
    p = m.rand(rng, lo * 0.85 * k, (lo + hi) / 2 * 0.85 * k)
    rec = [f"Item {iid}: {name}, sold in packs of {k}", f"Pack price: {m.fmt(p)}"]
    q = rng.choice([f"How many come in a pack of item {iid}, and what does a pack cost?",
                    f"What's the pack price for item {iid}, and how many are in a pack?"])
    return rec, q, [str(k), m.num(p)]


def pr_sale(rng, m):
    name, lo, hi = product(rng)
    p1 = m.rand(rng, lo, hi)
    p2 = p1 - m.pct(p1, rng.choice([10, 15, 20, 25, 30, 40]))
    if m.dec:
        p2 = p2 // 100 * 100 + 99 if p2 % 100 else p2 - 1
    assert p2 < p1
    rec = [name, f"Regular price: {m.fmt(p1)}", f"Sale price this week: {m.fmt(p2)}"]
    q = rng.choice([f"I saw the {name} listed at {m.fmt(p1)} last month. What does it cost now?",
                    f"Is the {name} still {m.fmt(p1)}, or is it cheaper this week?"])
    return rec, q, [m.num(p2)]


def pr_difference(rng, m):
    (n1, lo1, hi1), (n2, lo2, hi2) = two_products(rng)
    p1, p2 = m.rand(rng, lo1, hi1), m.rand(rng, lo2, hi2)
    if p1 == p2:
        p2 += 100 if m.dec else 10
    if p2 < p1:
        n1, n2, p1, p2 = n2, n1, p2, p1
    i1, i2 = item_id(rng), item_id(rng)
    rec = [f"Item {i1}: {n1}, {m.fmt(p1)}", f"Item {i2}: {n2}, {m.fmt(p2)}"]
    q = rng.choice([f"How much more does item {i2} cost than item {i1}?",
                    f"What is the price difference between the {n2} ({i2}) and the {n1} ({i1})?"])
    return rec, q, [m.num(p2 - p1)]


def st_units(rng, m):
    name, _, _ = product(rng)
    iid, n = item_id(rng), rng.randint(1, 480)
    rec = [f"Item {iid}: {name}", f"Units in stock: {n}", f"Warehouse: {rng.choice(CITIES)}"]
    q = rng.choice([f"How many units of the {name} (item {iid}) do you have in stock?",
                    f"How many of item {iid} are left?",
                    f"Do you have item {iid} in stock, and how many?"])
    return rec, q, [str(n)]


def st_sizes(rng, m):
    name, _, _ = product(rng, apparel=True)
    iid = item_id(rng)
    sizes = ["S", "M", "L", "XL"] if rng.random() < 0.5 else ["38", "40", "42", "44"]
    counts = {s: rng.randint(1, 40) for s in sizes}
    size = rng.choice(sizes)
    rec = [f"Item {iid}: {name}",
           "Stock by size: " + ", ".join(f"{s} {c}" for s, c in counts.items())]
    q = rng.choice([f"How many of item {iid} are left in size {size}?",
                    f"Is item {iid} available in {size}? How many do you have?"])
    return rec, q, [str(counts[size])]


def st_warehouses(rng, m):
    name, _, _ = product(rng)
    c1, c2 = rng.sample(CITIES, 2)
    iid = item_id(rng)
    a, b = rng.randint(3, 250), rng.randint(3, 250)
    rec = [f"{name} (item {iid})", f"Stock in {c1}: {a}", f"Stock in {c2}: {b}"]
    q = rng.choice([f"How many units of item {iid} are available across both warehouses?",
                    f"What is the total stock of item {iid} in {c1} and {c2} together?"])
    return rec, q, [str(a + b)]


def st_restock(rng, m):
    name, _, _ = product(rng)
    iid = item_id(rng)
    d, style = rand_date(rng), rng.choice(["dmy", "mdy", "iso"])
    n = rng.choice([12, 20, 24, 36, 40, 48, 50, 60, 75, 100, 120, 150, 200, 250])
    rec = [f"{name} (item {iid}): out of stock", f"Next delivery: {fmt_date(d, style)}",
           f"Units expected: {n}"]
    q = rng.choice([f"When will item {iid} be back in stock, and how many are coming?",
                    f"Item {iid} is sold out. When is the next delivery and how many units?"])
    return rec, q, date_expect(d, style) + [str(n)]


def st_limit(rng, m):
    name, _, _ = product(rng, cheap=True)
    lim = rng.choice([2, 3, 4, 5, 6, 8, 10])
    n = rng.randint(lim + 5, 300)
    want = rng.randint(lim + 1, lim + 12)
    rec = [f"{name}: {n} in stock", f"Limit: {lim} per customer"]
    q = f"I'd like to buy {want} of the {name}. How many am I allowed to order?"
    return rec, q, [str(lim)]


def or_confirm(rng, m):
    oid, n = order_id(rng), rng.randint(1, 9)
    d, style = rand_date(rng), rng.choice(["dmy", "mdy"])
    status = rng.choice(["processing", "shipped", "packed", "awaiting pickup"])
    rec = [f"Order #{oid}, placed {fmt_date(d, style)}", f"Status: {status}", f"Items: {n}"]
    q = rng.choice([f"I ordered on {fmt_date(d, style)}. Can you confirm my order number and how "
                    "many items are in it?",
                    f"What's the order number for my {fmt_date(d, style)} order, and how many "
                    "items did I buy?"])
    return rec, q, [oid, str(n)]


def or_tracking(rng, m):
    oid = order_id(rng)
    carrier = rng.choice(CARRIERS)
    trk = tracking(rng, carrier)
    d, style = rand_date(rng), rng.choice(["dmy", "mdy", "iso"])
    rec = [f"Order {oid}: shipped {fmt_date(d, style)} with {carrier}", f"Tracking number: {trk}"]
    q = rng.choice([f"What's the tracking number for order {oid}?",
                    f"Can you give me the {carrier} tracking number for my order {oid}?"])
    return rec, q, [trk]


def or_total(rng, m):
    oid, n = order_id(rng), rng.randint(2, 7)
    p = m.rand(rng, 20 * n, 90 * n)
    d, style = rand_date(rng), rng.choice(["dmy", "mdy"])
    rec = [f"Order #{oid}, placed {fmt_date(d, style)}", f"{n} items, total charged {m.fmt(p)}"]
    q = rng.choice([f"How much was I charged for order #{oid}?",
                    f"What was the total of my order #{oid}?"])
    return rec, q, [m.num(p)]


def or_which(rng, m):
    (n1, _, _), (n2, _, _) = two_products(rng)
    o1, o2 = order_id(rng), order_id(rng)
    d1 = rand_date(rng)
    d2 = d1 + dt.timedelta(days=rng.randint(3, 30))
    rec = [f"Order {o1}: {n1}, ordered {fmt_date(d1, 'dm')}, delivered",
           f"Order {o2}: {n2}, ordered {fmt_date(d2, 'dm')}, in transit"]
    q = rng.choice([f"I ordered the {n2} on {fmt_date(d2, 'dm')}. Which order number is it?",
                    f"What's the order number for the {n2} I bought on {fmt_date(d2, 'md')}?"])
    return rec, q, [o2]


def or_quantity(rng, m):
    name, lo, hi = product(rng, cheap=True)
    o, iid, qty = str(rng.randint(100000, 999999)), item_id(rng), rng.randint(2, 24)
    rec = [f"Order no. {o}", f"Item {iid}: {name} x {qty}",
           f"Status: {rng.choice(['packed', 'shipped'])}"]
    q = rng.choice([f"How many {name} units are in order {o}?",
                    f"How many of item {iid} did I order in order {o}?"])
    return rec, q, [str(qty)]


def di_percent(rng, m):
    name, lo, hi = product(rng)
    p = m.rand(rng, lo, hi, rounded=rng.random() < 0.5)
    pc = rng.choice([10, 15, 20, 25, 30, 35, 40, 50])
    rec = [f"{name}: {m.fmt(p)}", f"Current promotion: {pc}% off"]
    q = rng.choice([f"The {name} is {m.fmt(p)}. What do I pay with the promotion?",
                    f"With {pc}% off, how much is the {name}?"])
    return rec, q, [m.num(p - m.pct(p, pc))]


def di_coupon(rng, m):
    amt = m.whole(rng, 5, 25, 5)
    thr = m.whole(rng, 50, 150, 25)
    cart = thr + m.rand(rng, 1, 120)
    code = rng.choice(["SAVE", "SPRING", "WELCOME", "EXTRA", "THANKS", "AUTUMN"]) + \
        str(rng.randint(10, 99))
    rec = [f"Coupon {code}: {m.fmt(amt)} off orders of {m.fmt(thr)} or more"]
    q = rng.choice([f"My cart comes to {m.fmt(cart)}. What will I pay with code {code}?",
                    f"If I use {code} on a {m.fmt(cart)} cart, what's my new total?"])
    return rec, q, [m.num(cart - amt)]


def di_savings(rng, m):
    name, lo, hi = product(rng)
    p = m.rand(rng, lo, hi, rounded=rng.random() < 0.5)
    pc = rng.choice([10, 15, 20, 25, 30, 40])
    rec = [f"{name}: {m.fmt(p)}, now {pc}% off"]
    q = rng.choice([f"The {name} shows {pc}% off. How much money do I save?",
                    f"How much do I save on the {m.fmt(p)} {name}?"])
    return rec, q, [m.num(m.pct(p, pc))]


def di_three_for_two(rng, m):
    name, lo, hi = product(rng, cheap=True)
    p = m.rand(rng, lo, min(hi, lo * 3))
    rec = [f"{name}: {m.fmt(p)} each", "Offer: buy 3, pay for 2"]
    q = rng.choice([f"If I take 3 of the {name}, what will I pay?",
                    f"What's the total for 3 of the {name} with the offer?"])
    return rec, q, [m.num(2 * p)]


def di_member(rng, m):
    name, lo, hi = product(rng)
    p = m.rand(rng, lo, hi)
    pc = rng.choice([5, 10, 12, 15, 20])
    year = rng.randint(2015, 2025)
    rec = [f"{name}: {m.fmt(p)}", f"Members save {pc}%", f"Customer: member since {year}"]
    q = rng.choice([f"I've been a member since {year}. What's my price for the {name}?",
                    f"As a member, how much would the {m.fmt(p)} {name} cost me?"])
    return rec, q, [m.num(p - m.pct(p, pc))]


def da_business(rng, m):
    d = rand_date(rng, weekday=True)
    n = rng.randint(2, 10)
    oid = order_id(rng)
    style = rng.choice(["wdmy", "wmdy"])
    rec = [f"Order {oid} placed: {fmt_date(d, style)}", f"Standard delivery: {n} business days",
           "Business days are Monday to Friday"]
    q = rng.choice([f"When should order {oid} arrive?",
                    f"What date can I expect delivery of order {oid}?"])
    return rec, q, date_expect(add_bdays(d, n), style)


def da_return(rng, m):
    d, style = rand_date(rng), rng.choice(["dmy", "mdy", "iso"])
    n = rng.choice([14, 15, 21, 28, 30, 45, 60])
    name, _, _ = product(rng)
    oid = order_id(rng)
    rec = [f"Order {oid}: {name}, delivered {fmt_date(d, style)}",
           f"Return window: {n} days from delivery"]
    q = rng.choice([f"What's the last day I can send back order {oid}?",
                    f"Until what date can I return the {name} from order {oid}?"])
    return rec, q, date_expect(d + dt.timedelta(days=n), style)


def da_warranty(rng, m):
    d, style = rand_date(rng), rng.choice(["dmy", "mdy", "iso"])
    n = rng.choice([1, 2, 2, 3, 5])
    name, _, _ = product(rng, electric=True)
    rec = [f"{name} purchased {fmt_date(d, style)}", f"Warranty: {plural(n, 'year')} from purchase"]
    q = rng.choice([f"I bought my {name} on {fmt_date(d, style)}. Until what date is it under "
                    "warranty?",
                    f"When does the warranty on the {name} I bought on {fmt_date(d, style)} run out?"])
    return rec, q, date_expect(d.replace(year=d.year + n), style)


def da_transit(rng, m):
    d, style = rand_date(rng), rng.choice(["dmy", "mdy", "iso"])
    n = rng.randint(2, 12)
    carrier = rng.choice(CARRIERS)
    rec = [f"Dispatched: {fmt_date(d, style)} via {carrier}", f"Transit time: {n} calendar days"]
    q = rng.choice([f"My parcel left on {fmt_date(d, style)}. What date will it get here?",
                    f"It was dispatched {fmt_date(d, style)}. On what date should it arrive?"])
    return rec, q, date_expect(d + dt.timedelta(days=n), style)


def da_release(rng, m):
    name, lo, hi = product(rng)
    iid = item_id(rng)
    d, style = rand_date(rng), rng.choice(["dmy", "mdy", "iso"])
    p = m.rand(rng, lo, hi)
    rec = [f"{name} (item {iid}, pre-order)", f"Ships on: {fmt_date(d, style)}",
           f"Pre-order price: {m.fmt(p)}"]
    q = rng.choice([f"When does item {iid} ship, and what's the pre-order price?",
                    f"If I pre-order item {iid}, when will it ship and how much is it?"])
    return rec, q, date_expect(d, style) + [m.num(p)]


def to_shipping(rng, m):
    name, lo, hi = product(rng)
    iid = item_id(rng)
    p, s = m.rand(rng, lo, hi), m.small(rng, 3, 15)
    rec = [f"Item {iid}: {name}, {m.fmt(p)}", f"Shipping: {m.fmt(s)}"]
    q = rng.choice([f"What's the total for item {iid} with shipping?",
                    f"How much will the {name} ({iid}) cost me including delivery?"])
    return rec, q, [m.num(p + s)]


def to_quantity(rng, m):
    name, lo, hi = product(rng, cheap=True)
    p, k = m.rand(rng, lo, min(hi, lo * 2.5)), rng.randint(2, 12)
    rec = [f"{name}: {m.fmt(p)} each", f"Stock: {rng.randint(k + 3, 200)}"]
    q = rng.choice([f"What would {k} of the {name} cost in total?",
                    f"I need {k} of the {name}. What's the total?"])
    return rec, q, [m.num(k * p)]


def to_pair(rng, m):
    (n1, lo1, hi1), (n2, lo2, hi2) = two_products(rng)
    p1, p2 = m.rand(rng, lo1, hi1), m.rand(rng, lo2, hi2)
    i1, i2 = item_id(rng), item_id(rng)
    rec = [f"Item {i1}: {n1}, {m.fmt(p1)}", f"Item {i2}: {n2}, {m.fmt(p2)}"]
    q = rng.choice([f"If I buy items {i1} and {i2}, what is the total?",
                    f"How much for the {n1} ({i1}) plus the {n2} ({i2})?"])
    return rec, q, [m.num(p1 + p2)]


def to_tax(rng, m):
    name, lo, hi = product(rng)
    p = m.rand(rng, lo, hi)
    if m.code == "JPY":
        label, t = "Consumption tax", 10
    elif m.code == "EUR":
        label, t = "VAT", rng.choice([19, 20, 21, 10])
    else:
        label, t = "Sales tax", rng.choice([5, 6, 7, 8, 8.25, 9.5])
    rec = [f"{name}: {m.fmt(p)} before tax", f"{label}: {pct_str(t)}%"]
    tax = label.lower() if label != "VAT" else "VAT"
    q = rng.choice([f"The {name} is {m.fmt(p)}. What is the price including {tax}?",
                    f"How much is the {m.fmt(p)} {name} after {tax}?"])
    return rec, q, [m.num(p + m.pct(p, t))]


def to_cart(rng, m):
    (n1, lo1, hi1), (n2, lo2, hi2) = two_products(rng, cheap_first=True)
    q1 = rng.randint(2, 4)
    p1, p2 = m.rand(rng, lo1, min(hi1, lo1 * 2)), m.rand(rng, lo2, hi2)
    s = m.small(rng, 3, 12)
    rec = [f"Cart: {q1} x {n1} at {m.fmt(p1)}", f"1 x {n2} at {m.fmt(p2)}", f"Shipping: {m.fmt(s)}"]
    q = rng.choice([f"I have {q1} of the {n1} and 1 {n2} in my cart. What's the total including "
                    "shipping?",
                    f"How much will I pay in total for my cart of {q1 + 1} items?"])
    return rec, q, [m.num(q1 * p1 + p2 + s)]


def sh_express(rng, m):
    s1, s2 = m.small(rng, 3, 8), m.small(rng, 12, 30)
    a = rng.randint(3, 5)
    b, c = a + rng.randint(2, 4), rng.choice([1, 2])
    rec = [f"Standard shipping: {m.fmt(s1)} ({a}-{b} business days)",
           f"Express shipping: {m.fmt(s2)} ({plural(c, 'business day')})"]
    q = rng.choice([f"Standard takes {a}-{b} days, which is too slow. How much is express, and "
                    "how fast is it?",
                    f"I need it sooner than {a} days. What does express delivery cost, and how "
                    "many days does it take?"])
    return rec, q, [m.num(s2), str(c)]


def sh_below(rng, m):
    thr = m.whole(rng, 35, 150, 5)
    s = m.small(rng, 3, 9)
    cart = m.rand(rng, 5, m.to_usd(thr) * 0.9)
    rec = [f"Free shipping on orders over {m.fmt(thr)}", f"Otherwise shipping costs {m.fmt(s)}"]
    q = rng.choice([f"My order is {m.fmt(cart)}. How much is shipping?",
                    f"Do I pay shipping on a {m.fmt(cart)} order? How much?"])
    return rec, q, [m.num(s)]


def sh_needed(rng, m):
    thr = m.whole(rng, 35, 150, 5)
    cart = m.rand(rng, 5, m.to_usd(thr) * 0.9)
    rec = [f"Free shipping threshold: {m.fmt(thr)}", f"Standard shipping: {m.fmt(m.small(rng, 3, 9))}"]
    q = rng.choice([f"My cart is at {m.fmt(cart)}. How much more do I need to spend for free shipping?",
                    f"I have {m.fmt(cart)} in my basket. How far am I from free shipping?"])
    return rec, q, [m.num(thr - cart)]


def sh_weight(rng, m):
    r = m.small(rng, 2, 6)
    w = rng.randint(2, 15)
    rec = [f"Shipping rate: {m.fmt(r)} per kg", f"Parcel weight: {w} kg"]
    q = rng.choice([f"My parcel weighs {w} kg. How much will shipping cost?",
                    f"What's the shipping charge for a {w} kg parcel?"])
    return rec, q, [m.num(r * w)]


def sh_country(rng, m):
    country = rng.choice(COUNTRIES)
    oid = order_id(rng)
    a = rng.randint(3, 7)
    b = a + rng.randint(2, 5)
    s = m.small(rng, 9, 35)
    rec = [f"Order {oid}: ships to {country}", f"Delivery to {country}: {a}-{b} business days",
           f"International shipping: {m.fmt(s)}"]
    q = rng.choice([f"How long does shipping to {country} take for order {oid}, and what does it "
                    "cost?",
                    f"What's the delivery time and price for order {oid}?"])
    return rec, q, [str(a), str(b), m.num(s)]


def re_full(rng, m):
    name, lo, hi = product(rng)
    oid, p = order_id(rng), m.rand(rng, lo, hi)
    rec = [f"Order {oid}: {name}, paid {m.fmt(p)}", "Return received; refund approved"]
    q = rng.choice([f"How much will I get back for order {oid}?",
                    f"What's the refund amount on order {oid}?"])
    return rec, q, [m.num(p)]


def re_restocking(rng, m):
    name, lo, hi = product(rng)
    oid = order_id(rng)
    p = m.rand(rng, lo, hi, rounded=rng.random() < 0.4)
    fee = rng.choice([10, 15, 20, 25])
    rec = [f"Returned item: {name} (order {oid}), paid {m.fmt(p)}",
           f"Restocking fee: {fee}% (opened items)"]
    q = rng.choice([f"How much will my refund for order {oid} be after the fee?",
                    f"I opened the {name} from order {oid} before returning it. What will I get "
                    "back?"])
    return rec, q, [m.num(p - m.pct(p, fee))]


def re_partial(rng, m):
    name, lo, hi = product(rng, cheap=True)
    oid, n = order_id(rng), rng.randint(3, 8)
    k = rng.randint(1, n - 1)
    p = m.rand(rng, lo, min(hi, lo * 2))
    rec = [f"Order {oid}: {n} x {name} at {m.fmt(p)} each", f"Returned: {k}"]
    q = rng.choice([f"How much is refunded for the {k} I sent back?",
                    f"I returned {k} of the {n}. What's my refund?"])
    return rec, q, [m.num(k * p)]


def re_label(rng, m):
    name, lo, hi = product(rng)
    oid = order_id(rng)
    p, lab = m.rand(rng, lo, hi), m.small(rng, 4, 9)
    rec = [f"Order {oid}: paid {m.fmt(p)} for the {name}",
           f"Return label: {m.fmt(lab)}, deducted from the refund"]
    q = rng.choice([f"What will my refund for order {oid} come to?",
                    f"How much do I get back for the {name} from order {oid}?"])
    return rec, q, [m.num(p - lab)]


def re_timing(rng, m):
    p = m.rand(rng, 15, 400)
    oid = order_id(rng)
    d = rand_date(rng, weekday=True)
    n = rng.randint(3, 10)
    style = rng.choice(["wdmy", "wmdy"])
    rec = [f"Order {oid}: refund of {m.fmt(p)} issued {fmt_date(d, style)}",
           f"Card refunds take {n} business days (Monday to Friday)"]
    q = rng.choice([f"How much is my refund for order {oid}, and by what date should I see it?",
                    f"When will the refund for order {oid} reach my card, and for how much?"])
    return rec, q, [m.num(p)] + date_expect(add_bdays(d, n), style)


# Chinese templates: CNY, Chinese dates.

def zh_money(rng) -> Money:
    return Money("CNY", rng.choice(["sym", "sym", "yuan"]), rng.random() < 0.8)


def zh_price(rng, m):
    name, lo, hi = zh_product(rng)
    iid, p = item_id(rng), cny(rng, lo, hi)
    rec = [f"商品：{name}（货号{iid}）", f"价格：{m.fmt(p)}"]
    q = rng.choice([f"请问{name}（货号{iid}）多少钱？", f"货号{iid}的价格是多少？"])
    return rec, q, [m.num(p)]


def zh_stock(rng, m):
    name, _, _ = zh_product(rng)
    iid, n = item_id(rng), rng.randint(1, 300)
    rec = [f"{name}（货号{iid}）库存：{n}件",
           f"发货仓：{rng.choice(['上海', '广州', '成都', '武汉', '杭州'])}"]
    q = rng.choice([f"货号{iid}还有多少件库存？", f"货号{iid}的{name}现在还有货吗？有几件？"])
    return rec, q, [str(n)]


def zh_order(rng, m):
    oid = order_id(rng)
    carrier = rng.choice(ZH_CARRIERS)
    trk = tracking(rng, carrier)
    rec = [f"订单号：{oid}", "状态：已发货", f"快递：{carrier}，运单号{trk}"]
    q = rng.choice([f"我的订单{oid}的运单号是多少？", f"订单{oid}用的是哪家快递？单号多少？"])
    return rec, q, [trk]


def zh_discount(rng, m):
    name, lo, hi = zh_product(rng)
    p = rng.randint(lo, hi) * 100
    zhe = rng.choice([9, 8.5, 8, 7.5, 7, 6])
    off = 100 - int(zhe * 10)
    rec = [f"{name}原价{m.fmt(p)}", f"活动：全场{pct_str(zhe)}折"]
    q = rng.choice([f"{name}原价{m.fmt(p)}，打折后多少钱？", f"打{pct_str(zhe)}折后{name}要付多少？"])
    return rec, q, [m.num(p - m.pct(p, off))]


def zh_date_probe(rng, m):
    d = rand_date(rng)
    n = rng.randint(2, 7)
    rec = [f"发货日期：{zh_date(d)}", f"运输时间：{n}天"]
    q = rng.choice([f"我的包裹{zh_date(d, year=False)}发货，哪天能到？",
                    f"请问{zh_date(d, year=False)}发出的包裹预计几号送到？"])
    a = d + dt.timedelta(days=n)
    return rec, q, [f"{a.month}月{a.day}日"]


def zh_total(rng, m):
    name, lo, hi = zh_product(rng)
    p, s = cny(rng, lo, hi), rng.choice([6, 8, 10, 12, 15, 18, 20]) * 100
    rec = [f"{name}：{m.fmt(p)}", f"运费：{m.fmt(s)}"]
    q = rng.choice([f"{name}{m.fmt(p)}，加上运费一共要付多少钱？",
                    f"运费{m.fmt(s)}的话，买{name}总共多少？"])
    return rec, q, [m.num(p + s)]


def zh_shipping(rng, m):
    thr = rng.choice([49, 59, 88, 99, 199]) * 100
    s = rng.choice([6, 8, 10, 12]) * 100
    cart = rng.randint(10, thr // 100 - 3) * 100 + rng.choice([0, 50, 90])
    rec = [f"满{m.fmt(thr)}包邮", f"不满运费{m.fmt(s)}"]
    q = rng.choice([f"我买了{m.fmt(cart)}的东西，还差多少可以包邮？",
                    f"购物车现在是{m.fmt(cart)}，再买多少才包邮？"])
    return rec, q, [m.num(thr - cart)]


def zh_refund(rng, m):
    name, lo, hi = zh_product(rng)
    oid, n = order_id(rng), rng.randint(2, 6)
    k = rng.randint(1, n - 1)
    p = cny(rng, lo, min(hi, lo * 2))
    rec = [f"订单{oid}：{n}件{name}，每件{m.fmt(p)}", f"已退回{k}件"]
    q = rng.choice([f"我退回了{k}件，退款金额是多少？", f"退回的{k}件能退多少钱？"])
    return rec, q, [m.num(k * p)]


PROBE_TEMPLATES = {
    "price": [pr_lookup, pr_adjacent, pr_pack, pr_sale, pr_difference],
    "stock": [st_units, st_sizes, st_warehouses, st_restock, st_limit],
    "order": [or_confirm, or_tracking, or_total, or_which, or_quantity],
    "discount": [di_percent, di_coupon, di_savings, di_three_for_two, di_member],
    "date": [da_business, da_return, da_warranty, da_transit, da_release],
    "total": [to_shipping, to_quantity, to_pair, to_tax, to_cart],
    "shipping": [sh_express, sh_below, sh_needed, sh_weight, sh_country],
    "refund": [re_full, re_restocking, re_partial, re_label, re_timing],
}
ZH_PROBE_TEMPLATES = {
    "price": zh_price, "stock": zh_stock, "order": zh_order, "discount": zh_discount,
    "date": zh_date_probe, "total": zh_total, "shipping": zh_shipping, "refund": zh_refund,
}


def word_count(s: str) -> int:
    return len(s.split()) + sum(1 for ch in s if cjk(ch)) // 2


def gen_probes() -> list[dict]:
    rng = Random(PROBE_SEED)
    probes, seen = [], set()
    kinds = list(PROBE_TEMPLATES)
    for j in range(N_PROBES_PER_KIND):
        for kind in kinds:
            zh = j % 11 == 5
            for _ in range(100):
                if zh:
                    m = zh_money(rng)
                    rec, q, expect = ZH_PROBE_TEMPLATES[kind](rng, m)
                    system = rng.choice(SYSTEM_ZH).format(shop=rng.choice(ZH_SHOPS),
                                                          rec="\n".join(rec))
                else:
                    m = rand_money(rng)
                    tmpl = PROBE_TEMPLATES[kind][(j - (j + 5) // 11) % len(PROBE_TEMPLATES[kind])]
                    rec, q, expect = tmpl(rng, m)
                    q = greet(rng, q)
                    system = rng.choice(SYSTEM_EN).format(shop=rng.choice(SHOPS),
                                                          rec="\n".join(rec))
                key = (system, q)
                if key not in seen:
                    break
            else:
                raise RuntimeError("could not make a distinct probe")
            seen.add(key)
            assert expect and all(re.search(r"\d", e) for e in expect), (kind, expect)
            assert re.search(r"\d", q), q
            assert word_count(system + " " + q) < 120, (system, q)
            probes.append({
                "id": f"p{len(probes) + 1:03d}", "kind": kind,
                "messages": [{"role": "system", "content": system},
                             {"role": "user", "content": q}],
                "expect": expect,
            })
    return probes


# ----------------------------------------------------------------------------------------------
# 2. Calibration Q&A


def cap(s: str) -> str:
    return s[0].upper() + s[1:]


def c_ship_threshold(rng):
    m = rand_money(rng, (("USD", 5), ("EUR", 3), ("GBP", 2)))
    thr, s = m.whole(rng, 35, 120, 5), m.small(rng, 3, 9)
    below = rng.random() < 0.6
    cart = m.rand(rng, 8, m.to_usd(thr) * 0.9) if below else thr + m.rand(rng, 2, 60)
    prompt = rng.choice([
        f"Standard shipping is {m.fmt(s)} and free on orders over {m.fmt(thr)}. My cart is {m.fmt(cart)}. Do I pay for shipping?",
        f"Your site says free delivery over {m.fmt(thr)}, otherwise {m.fmt(s)}. I'm ordering {m.fmt(cart)} worth of stuff. Will I be charged shipping?",
    ])
    if below:
        ans = (f"Yes. Your cart of {m.fmt(cart)} is below the {m.fmt(thr)} free-shipping threshold, "
               f"so standard shipping of {m.fmt(s)} applies. Adding {m.fmt(thr - cart)} more to "
               "your order would make delivery free.")
    else:
        ans = (f"No. Your cart of {m.fmt(cart)} is over {m.fmt(thr)}, so standard shipping is free. "
               f"Your total stays at {m.fmt(cart)}.")
    return prompt, ans


def c_ship_bdays(rng):
    d = rand_date(rng, weekday=True)
    n = rng.randint(2, 8)
    a = add_bdays(d, n)
    prompt = rng.choice([
        f"I ordered on {fmt_date(d, 'wdmy')} and delivery takes {n} business days. When will it arrive?",
        f"If I place my order on {fmt_date(d, 'wmdy')}, with {n}-business-day shipping, what day does it come?",
    ])
    ans = (f"Counting {n} business days from {fmt_date(d, 'wdm')}, your order should arrive by "
           f"{fmt_date(a, 'wdm')}. Weekends are not counted as business days.")
    return prompt, ans


def c_ship_express(rng):
    m = rand_money(rng, (("USD", 5), ("EUR", 3), ("GBP", 2)))
    city, s = rng.choice(CALIB_CITIES), m.small(rng, 12, 30)
    a = rng.choice([1, 2])
    prompt = f"Can I get express delivery to {city}? The checkout shows express at {m.fmt(s)} for {a}-{a + 1} days."
    ans = rng.choice([
        f"Yes, express delivery to {city} is available for {m.fmt(s)}. Orders placed before 2 pm usually arrive within {a} to {a + 1} business days.",
        f"Yes, you can choose express at checkout for {m.fmt(s)}, and it normally reaches {city} in {a} to {a + 1} business days.",
    ])
    return prompt, ans


def c_ship_tracking(rng):
    carrier = rng.choice(CARRIERS[:7])
    trk = tracking(rng, carrier)
    n = rng.randint(1, 7)
    k = rng.choice([3, 4, 5])
    prompt = f"My {carrier} tracking number {trk} hasn't updated in {plural(n, 'day')}. What should I do?"
    if n < k:
        ans = (f"Tracking can pause for up to {k} days while a parcel moves between hubs, so a "
               f"{n}-day gap is normal. If {trk} still shows no movement after {k} days, "
               f"let us know and we will open an investigation with {carrier}.")
    else:
        ans = (f"A gap of {plural(n, 'day')} is longer than the usual {k} days, so I have asked "
               f"{carrier} to investigate {trk}. If the parcel is not found within 2 business days, "
               "we will send a replacement or a full refund.")
    return prompt, ans


def c_ship_address(rng):
    oid = order_id(rng)
    city = rng.choice(CALIB_CITIES)
    shipped = rng.random() < 0.4
    prompt = rng.choice([
        f"Can I change the delivery address on order {oid}? I've moved to {city}.",
        f"I entered the wrong address for order {oid}. The right city is {city}. Can you fix it?",
    ])
    if shipped:
        ans = (f"Order {oid} has already shipped, so we can no longer edit the address ourselves. "
               "Use the carrier's link in your shipping email to redirect the parcel, or refuse it "
               "and we will refund you once it comes back.")
    else:
        ans = (f"Yes, order {oid} has not shipped yet, so the address can still be changed. Reply "
               f"with the full street address in {city} and I will update it before the parcel "
               "is packed.")
    return prompt, ans


def c_ret_window(rng):
    name, _, _ = cproduct(rng)
    n = rng.choice([14, 30, 30, 45, 60])
    k = rng.randint(3, n + 20)
    prompt = rng.choice([
        f"Your return window is {n} days. I received my {name} {k} days ago. Can I still return it?",
        f"The {name} arrived {k} days ago and I don't like it. Returns are {n} days, right? Am I in time?",
    ])
    if k <= n:
        ans = (f"Yes. {k} days is within the {n}-day return window, so you can still send the "
               f"{name} back. You have {plural(n - k, 'day')} left to start the return.")
        if n == k:
            ans = (f"Yes, but only just: today is day {k} of the {n}-day return window, so please "
                   "start the return today.")
    else:
        ans = (f"I'm sorry, {k} days is past the {n}-day return window, so the {name} can no longer "
               "be returned for a refund. If it is faulty, it may still be covered by the warranty.")
    return prompt, ans


def c_ret_how(rng):
    name, _, _ = cproduct(rng)
    oid = order_id(rng)
    prompt = rng.choice([f"How do I return the {name} from order {oid}?",
                         f"What are the steps to send back the {name}? Order number {oid}."])
    ans = rng.choice([
        f"Open order {oid} in your account, choose Return item next to the {name}, and print the "
        "prepaid label we email you. Pack the item in its original box and drop it at any "
        "carrier location.",
        f"Start a return for order {oid} from the Orders page and select the {name}. We will email "
        "a return label within a few minutes; attach it to the parcel and keep the drop-off receipt.",
    ])
    return prompt, ans


def c_ret_exchange(rng):
    name, _, _ = cproduct(rng, apparel=True)
    sizes = ["XS", "S", "M", "L", "XL", "XXL"]
    i = rng.randint(0, 4)
    a, b = (sizes[i], sizes[i + 1]) if rng.random() < 0.5 else (sizes[i + 1], sizes[i])
    prompt = f"I ordered the {name} in size {a} but it doesn't fit. Can I swap it for size {b}?"
    ans = (f"Yes. Start an exchange from your order page and pick the {name} in size {b}. We "
           f"ship the {b} as soon as the carrier scans the {a} you send back, and the exchange "
           "costs nothing.")
    return prompt, ans


def c_ref_label(rng):
    m = rand_money(rng, (("USD", 5), ("EUR", 3), ("GBP", 2)))
    name, lo, hi = cproduct(rng)
    p, lab = m.rand(rng, lo, hi), m.small(rng, 4, 9)
    prompt = f"I returned the {name}, which cost {m.fmt(p)}. The return label was {m.fmt(lab)}. How much will I be refunded?"
    ans = (f"Your refund will be {m.fmt(p - lab)}: the {m.fmt(p)} item price minus the "
           f"{m.fmt(lab)} return label.")
    return prompt, ans


def c_ref_when(rng):
    d = rand_date(rng, weekday=True)
    a = rng.randint(2, 5)
    b = a + rng.randint(2, 5)
    prompt = rng.choice([
        f"When will I get my money back? Your email said the refund was issued on {fmt_date(d, 'dmy')}.",
        f"My refund was processed on {fmt_date(d, 'mdy')}. How long until it shows up on my card?",
    ])
    ans = (f"Card refunds take {a} to {b} business days to appear after they are issued, so with "
           f"the refund issued on {fmt_date(d, 'dm')}, you should see it by "
           f"{fmt_date(add_bdays(d, b), 'wdm')} at the latest.")
    return prompt, ans


def c_ref_partial(rng):
    m = rand_money(rng, (("USD", 5), ("EUR", 3), ("GBP", 2)))
    name, lo, hi = cproduct(rng, cheap=True)
    n = rng.randint(3, 8)
    k = rng.randint(1, n - 1)
    p = m.rand(rng, lo, min(hi, lo * 2))
    prompt = f"I bought {n} of the {name} at {m.fmt(p)} each and sent {k} back. How much is refunded?"
    ans = (f"You will be refunded {m.fmt(k * p)} for the {k} returned, that is {k} x {m.fmt(p)}. "
           f"The other {n - k} stay on your order.")
    return prompt, ans


def c_ref_restock(rng):
    m = rand_money(rng, (("USD", 5), ("EUR", 3), ("GBP", 2)))
    name, lo, hi = cproduct(rng)
    p = m.rand(rng, lo, hi, rounded=True)
    fee = rng.choice([10, 15, 20])
    prompt = f"I opened the {name} ({m.fmt(p)}) and want to return it. There's a {fee}% restocking fee on opened items. What do I get back?"
    ans = (f"The {fee}% restocking fee on {m.fmt(p)} is {m.fmt(m.pct(p, fee))}, so your refund "
           f"will be {m.fmt(p - m.pct(p, fee))}.")
    return prompt, ans


def c_price_sale(rng):
    m = rand_money(rng, (("USD", 5), ("EUR", 3), ("GBP", 2)))
    name, lo, hi = cproduct(rng)
    p1 = m.rand(rng, lo, hi, rounded=True)
    off = rng.choice([10, 20, 25, 30, 40, 50])
    p2 = p1 - m.pct(p1, off)
    prompt = f"Is the {name} on sale? It was {m.fmt(p1)} and now the page shows {m.fmt(p2)}."
    ans = (f"Yes, the {name} is on sale for {m.fmt(p2)}, which saves you {m.fmt(p1 - p2)}, or "
           f"{off}% off the original {m.fmt(p1)}.")
    return prompt, ans


def c_price_pct(rng):
    m = rand_money(rng, (("USD", 5), ("EUR", 3), ("GBP", 2)))
    name, lo, hi = cproduct(rng)
    p = m.rand(rng, lo, hi, rounded=rng.random() < 0.5)
    pc = rng.choice([10, 15, 20, 25, 30, 40])
    d = m.pct(p, pc)
    prompt = rng.choice([f"What is {pc}% off {m.fmt(p)} for the {name}?",
                         f"The {name} is {m.fmt(p)} and I have a {pc}% off code. What will I pay?"])
    ans = f"{pc}% off {m.fmt(p)} is a discount of {m.fmt(d)}, so you pay {m.fmt(p - d)} for the {name}."
    return prompt, ans


def c_price_match(rng):
    m = rand_money(rng, (("USD", 5), ("EUR", 3), ("GBP", 2)))
    name, lo, hi = cproduct(rng)
    p1 = m.rand(rng, lo, hi)
    p2 = p1 - m.pct(p1, rng.choice([5, 8, 10, 12]))
    prompt = f"I found the {name} for {m.fmt(p2)} on another site, but you charge {m.fmt(p1)}. Will you match that price?"
    ans = (f"We match prices from major retailers when the item is identical and in stock. Send us "
           f"a link to the {m.fmt(p2)} listing, and once it is verified we will refund the "
           f"{m.fmt(p1 - p2)} difference.")
    return prompt, ans


def c_price_qty(rng):
    m = rand_money(rng, (("USD", 5), ("EUR", 3), ("GBP", 2)))
    name, lo, hi = cproduct(rng, cheap=True)
    k = rng.randint(2, 10)
    p = m.rand(rng, lo, min(hi, lo * 2))
    prompt = rng.choice([f"How much for {k} of the {name} at {m.fmt(p)} each?",
                         f"I need {k} units of the {name}. They're {m.fmt(p)} each. What's the total?"])
    ans = f"{k} x {m.fmt(p)} comes to {m.fmt(k * p)} before shipping."
    if k >= 5:
        ans += " For 10 or more units, our business team can quote a volume price."
    return prompt, ans


def c_ord_cancel(rng):
    oid = order_id(rng)
    lim = rng.choice([30, 60, 120])
    n = rng.randint(5, 180)
    prompt = f"Can I cancel order {oid}? I placed it {n} minutes ago. Your policy says orders can be cancelled within {lim} minutes."
    if n <= lim:
        ans = (f"Yes. Order {oid} is still inside the {lim}-minute cancellation window, so I have "
               "cancelled it. The full amount goes back to your payment method.")
    else:
        ans = (f"I'm sorry, {n} minutes is past the {lim}-minute cancellation window, so order {oid} "
               "is already being packed. Once it arrives you can return it for a full refund.")
    return prompt, ans


def c_ord_missing(rng):
    oid = order_id(rng)
    n = rng.randint(3, 8)
    k = rng.randint(1, n - 1)
    prompt = f"My order {oid} says {n} items but only {k} arrived."
    ans = (f"Sorry about that. Large orders sometimes ship in more than one box, and the other "
           f"{n - k} from order {oid} may be in a second parcel. If they haven't arrived within 3 "
           "days, tell us and we will send them again at no cost.")
    return prompt, ans


def c_ord_status(rng):
    oid = order_id(rng)
    carrier = rng.choice(CARRIERS[:7])
    d = rand_date(rng, weekday=True)
    n = rng.randint(2, 5)
    prompt = (f"What's the status of order {oid}? It shipped with {carrier} on "
              f"{fmt_date(d, 'dmy')} and delivery takes {n} business days.")
    ans = (f"Order {oid} left our warehouse on {fmt_date(d, 'dm')} with {carrier}. With "
           f"{n}-business-day delivery it should reach you by {fmt_date(add_bdays(d, n), 'wdm')}.")
    return prompt, ans


def c_ord_add(rng):
    oid = order_id(rng)
    name, _, _ = cproduct(rng)
    prompt = f"Can I add the {name} to my order {oid}?"
    ans = (f"Items can't be added to an order once it is placed. Please place a separate order for "
           f"the {name}; if order {oid} hasn't shipped yet, we will try to pack both in one box.")
    return prompt, ans


def c_size_chart(rng):
    name, _, _ = cproduct(rng, apparel=True)
    chart = [("S", 86, 91), ("M", 92, 99), ("L", 100, 107), ("XL", 108, 115)]
    x = rng.randint(86, 115)
    size, lo, hi = next(c for c in chart if c[1] <= x <= c[2])
    prompt = (f"Size chart for the {name}: S chest 86-91 cm, M 92-99 cm, L 100-107 cm, "
              f"XL 108-115 cm. My chest is {x} cm. Which size should I get?")
    ans = (f"With a {x} cm chest you fall in size {size} ({lo}-{hi} cm), so order the {name} in "
           f"{size}.")
    if x in (91, 92, 99, 100, 107, 108):
        ans += " You are close to the edge, so size up if you prefer a looser fit."
    return prompt, ans


def c_size_shoe(rng):
    eu_to_us = {39: "6.5", 40: "7", 41: "8", 42: "8.5", 43: "9.5", 44: "10", 45: "11", 46: "12"}
    eu = rng.choice(list(eu_to_us))
    model = rng.choice(CALIB_COLLECTIONS) + " " + rng.choice(
        ["Trail Runner shoes", "City Sneakers", "Court Classic trainers", "Hiking Boots",
         "Penny Loafers"])
    prompt = f"Our chart lists EU {eu} as US {eu_to_us[eu]}. I wear EU {eu}. What US size of the {model} should I order?"
    ans = f"Order the {model} in US {eu_to_us[eu]}, which matches EU {eu} on our chart."
    if model.endswith(("Hiking Boots", "Trail Runner shoes")):
        ans += " If you wear thick socks, consider going half a size up."
    return prompt, ans


def c_size_fit(rng):
    name, _, _ = cproduct(rng, apparel=True)
    fit = rng.choice(["runs small", "runs large", "is true to size"])
    prompt = f"Does the {name} run small? The product page says it {fit}."
    if fit == "runs small":
        ans = f"Yes, the {name} runs small, so we suggest ordering one size up from your usual size."
    elif fit == "runs large":
        ans = f"No, it's the other way round: the {name} runs large, so you may want one size down."
    else:
        ans = (f"No, the {name} is true to size, so order your usual size. If you are between two "
               "sizes, the larger one gives a more relaxed fit.")
    return prompt, ans


def c_warranty_date(rng):
    name, _, _ = cproduct(rng, electric=True)
    d = rand_date(rng)
    n = rng.choice([1, 2, 3])
    today = d + dt.timedelta(days=rng.randint(100, 1300))
    end = d.replace(year=d.year + n)
    prompt = (f"I bought the {name} on {fmt_date(d, 'dmy')} and it has a {n}-year warranty. "
              f"Today is {fmt_date(today, 'dmy')}. Is it still covered?")
    if today <= end:
        ans = (f"Yes. The {n}-year warranty runs until {fmt_date(end, 'dmy')}, so the {name} is still "
               "covered. Send us a short description of the fault and a photo to start a claim.")
    else:
        ans = (f"Unfortunately not. The {n}-year warranty ended on {fmt_date(end, 'dmy')}. We can "
               "still offer a paid repair, and we will send a quote before any work starts.")
    return prompt, ans


def c_warranty_months(rng):
    name, _, _ = cproduct(rng, electric=True)
    w = rng.choice([6, 12, 24])
    k = rng.randint(2, 30)
    prompt = f"My {name} stopped working after {k} months. The warranty is {w} months. Can I get it fixed for free?"
    if k <= w:
        ans = (f"Yes. At {k} months the {name} is still within its {w}-month warranty, so the repair "
               "or replacement is free. We will email you a prepaid label to send it in.")
    else:
        ans = (f"The {w}-month warranty has run out, since the {name} is {k} months old. We can "
               "quote a repair, or offer 15% off a replacement.")
    return prompt, ans


def c_pay_installments(rng):
    m = rand_money(rng, (("USD", 5), ("EUR", 3), ("GBP", 2)))
    n = rng.choice([3, 4, 6])
    thr = m.whole(rng, 50, 100, 50)
    inst = m.rand(rng, 20, 120)
    while n * inst <= thr:
        inst = m.rand(rng, 20, 120)
    total = n * inst
    prompt = f"Can I pay in {n} instalments? My order is {m.fmt(total)}, and you offer instalments on orders over {m.fmt(thr)}."
    ans = (f"Yes. Your {m.fmt(total)} order is over {m.fmt(thr)}, so you can split it into {n} "
           f"interest-free payments of {m.fmt(inst)}. Choose Pay in {n} at checkout.")
    return prompt, ans


def c_pay_twice(rng):
    m = rand_money(rng, (("USD", 5), ("EUR", 3), ("GBP", 2)))
    oid = order_id(rng)
    p = m.rand(rng, 20, 300)
    k = rng.choice([3, 5, 7])
    prompt = f"I was charged twice for order {oid}, {m.fmt(p)} each time."
    ans = (f"I can see only one payment of {m.fmt(p)} captured for order {oid}. The second charge "
           f"is a pending authorization, and your bank will release it within {k} business days.")
    return prompt, ans


def c_pay_giftcard(rng):
    m = rand_money(rng, (("USD", 5), ("EUR", 3), ("GBP", 2)))
    g = m.whole(rng, 25, 100, 25)
    p = m.rand(rng, 15, 180)
    prompt = f"I have a gift card worth {m.fmt(g)} and my order is {m.fmt(p)}. How much goes on my credit card?"
    if p > g:
        ans = (f"The gift card covers the first {m.fmt(g)}, so {m.fmt(p - g)} will be charged to "
               "your credit card.")
    else:
        ans = (f"Nothing. The gift card covers the whole {m.fmt(p)}, and {m.fmt(g - p)} stays on the "
               "card for your next order.")
    return prompt, ans


def c_pay_methods(rng):
    shop = rng.choice(SHOPS)
    country = rng.choice(COUNTRIES)
    paypal = rng.random() < 0.5
    prompt = (f"Can I pay with PayPal at {shop}? I'm ordering from {country}." if paypal else
              f"Which payment methods does {shop} accept for orders to {country}?")
    ans = (("Yes. " if paypal else "")
           + f"For orders to {country}, {shop} accepts Visa, Mastercard, American Express, PayPal "
           "and Apple Pay. Gift cards can be combined with any of them.")
    return prompt, ans


def c_acc_points(rng):
    m = rand_money(rng, (("USD", 5), ("EUR", 3), ("GBP", 2)))
    r = rng.choice([1, 2, 3, 5])
    p = m.rand(rng, 20, 400)
    prompt = f"How many loyalty points do I get for a {m.fmt(p)} order if I earn {r} points per {m.sym}1?"
    pts = r * (p // 100)
    ans = (f"You earn {r} points for each full {m.sym}1, so a {m.fmt(p)} order gives you {pts} "
           "points. They appear in your account once the order ships.")
    return prompt, ans


def c_acc_redeem(rng):
    m = rand_money(rng, (("USD", 5), ("EUR", 3), ("GBP", 2)))
    per = rng.choice([100, 200, 500])
    val = m.whole(rng, 1, 10, 1) if per == 100 else m.whole(rng, 5, 10, 5)
    pts = rng.randint(per, per * 12)
    k = pts // per
    prompt = f"I have {pts} points. Every {per} points is worth {m.fmt(val)} off. How much can I redeem?"
    ans = (f"{pts} points make {plural(k, 'full block')} of {per}, so you can redeem {m.fmt(k * val)}. "
           f"The remaining {pts - k * per} points stay in your account.")
    return prompt, ans


def c_acc_password(rng):
    name, shop = rng.choice(CALIB_NAMES), rng.choice(SHOPS)
    mins = rng.choice([15, 30, 60])
    prompt = rng.choice([f"Hi, this is {name}. I forgot my {shop} password. How do I reset it?",
                         f"{name} here, I can't log in to my {shop} account. Can you help me reset my password?"])
    ans = (f"Of course, {name}. Click Sign in, then Forgot password, and enter your email address. "
           f"The reset link we send is valid for {mins} minutes.")
    return prompt, ans


def c_acc_email(rng):
    name, shop = rng.choice(CALIB_NAMES), rng.choice(SHOPS)
    prompt = f"How do I change the email address on my {shop} account? This is {name}."
    ans = (f"Go to Account settings at {shop}, choose Email, and enter the new address, {name}. We send a "
           "confirmation link to it, and the change takes effect once you click it.")
    return prompt, ans


def c_acc_delete(rng):
    name, shop = rng.choice(CALIB_NAMES), rng.choice(SHOPS)
    days = rng.choice([14, 30])
    prompt = f"I'd like to delete my {shop} account. What happens to my data? - {name}"
    ans = (f"We can close the {shop} account for you, {name}. Your personal data is erased within {days} "
           "days, except order records we must keep for tax purposes.")
    return prompt, ans


# Chinese calibration templates


def cz_ship(rng):
    thr = rng.choice([49, 59, 88, 99]) * 100
    s = rng.choice([6, 8, 10]) * 100
    cart = rng.randint(15, thr // 100 - 2) * 100
    m = Money("CNY")
    prompt = f"你们满{m.fmt(thr)}包邮吗？我现在购物车是{m.fmt(cart)}。"
    ans = f"是的，满{m.fmt(thr)}包邮。您现在是{m.fmt(cart)}，再买{m.fmt(thr - cart)}就可以免运费，否则运费是{m.fmt(s)}。"
    return prompt, ans


def cz_return(rng):
    name, _, _ = czp(rng)
    n = rng.choice([7, 15, 30])
    k = rng.randint(2, n + 10)
    prompt = f"{name}收到{k}天了，还能退货吗？你们是{n}天无理由退货吧？"
    if k <= n:
        ans = f"可以的。{k}天还在{n}天无理由退货期内，请在订单页面申请退货，商品保持完好即可。"
    else:
        ans = f"很抱歉，{k}天已经超过{n}天的退货期，无法办理无理由退货。如果是质量问题，可以申请保修。"
    return prompt, ans


def cz_refund(rng):
    name, lo, hi = czp(rng)
    n = rng.randint(2, 5)
    k = rng.randint(1, n - 1)
    p = cny(rng, lo, min(hi, lo * 2))
    m = Money("CNY")
    prompt = f"我买了{n}件{name}，每件{m.fmt(p)}，退了{k}件，能退多少钱？"
    ans = f"退回的{k}件共退款{m.fmt(k * p)}，会在3到5个工作日内原路退回。"
    return prompt, ans


def cz_discount(rng):
    name, lo, hi = czp(rng)
    p = rng.randint(lo, hi) * 100
    zhe = rng.choice([9, 8.5, 8, 7, 6])
    off = 100 - int(zhe * 10)
    m = Money("CNY")
    prompt = f"{name}原价{m.fmt(p)}，现在打{pct_str(zhe)}折是多少钱？"
    ans = f"打{pct_str(zhe)}折后是{m.fmt(p - m.pct(p, off))}，比原价便宜{m.fmt(m.pct(p, off))}。"
    return prompt, ans


def cz_order(rng):
    oid = order_id(rng)
    carrier = rng.choice(ZH_CARRIERS)
    trk = tracking(rng, carrier)
    d = rand_date(rng)
    prompt = f"订单{oid}发货了吗？"
    ans = f"订单{oid}已于{zh_date(d, year=False)}通过{carrier}发出，运单号是{trk}，一般2到4天送达。"
    return prompt, ans


def cz_size(rng):
    h = rng.randint(155, 190)
    size = "S" if h < 165 else "M" if h < 175 else "L" if h < 183 else "XL"
    name = rng.choice(ZH_COLORS) + rng.choice(["卫衣", "羽绒服", "衬衫", "冲锋衣", "毛衣"])
    prompt = f"我身高{h}厘米，这件{name}穿什么码？尺码表上S是155-164，M是165-174，L是175-182，XL是183-190。"
    ans = f"按尺码表，身高{h}厘米的话，{name}建议选{size}码。如果喜欢宽松一点，可以再大一码。"
    return prompt, ans


def cz_warranty(rng):
    name, _, _ = czp(rng)
    w = rng.choice([1, 2])
    k = rng.randint(2, 30)
    prompt = f"{name}买了{k}个月坏了，保修期是{w}年，可以免费修吗？"
    if k <= 12 * w:
        ans = f"可以。{k}个月还在{w}年保修期内，我们提供免费维修或更换，请提供订单号和故障照片。"
    else:
        ans = f"很抱歉，{k}个月已经超过{w}年保修期，可以付费维修，我们会先给您报价。"
    return prompt, ans


def cz_points(rng):
    pts = rng.randint(100, 5000)
    k = pts // 100
    prompt = f"我有{pts}积分，100积分抵1元，能抵多少钱？"
    ans = f"{pts}积分可以抵{k}元，剩下的{pts - k * 100}积分会保留在账户里。"
    return prompt, ans


# More calibration templates (2000 items in all, about a quarter Chinese): products, prices,
# shipping, returns, orders, payments, accounts, subscriptions and repairs, each with its own
# wording. A calibration-only catalogue adds to the shared one, so the probes and the held-out
# text (which use the shared one) do not change.

CALIB_EXTRA_PRODUCTS = [
    ("Wireless Earbuds", 30, 250, False), ("Smartwatch", 90, 500, False),
    ("Mechanical Keyboard", 50, 220, False), ("Gaming Mouse", 20, 120, False),
    ("Monitor Arm", 30, 150, False), ("Sunglasses", 20, 180, False),
    ("Leather Wallet", 25, 120, False), ("Bath Towel Set", 25, 90, False),
    ("Baby Stroller", 180, 900, False), ("Dog Bed", 30, 150, False), ("Cat Tree", 40, 200, False),
    ("Garden Hose", 20, 80, False), ("Cordless Drill", 50, 300, False), ("Board Game", 15, 70, False),
    ("Jigsaw Puzzle", 10, 40, False), ("Face Serum", 15, 90, False), ("Notebook Set", 8, 30, False),
    ("Fountain Pen", 20, 250, False), ("Bookshelf", 80, 600, False), ("Bed Frame", 200, 1500, False),
    ("Mattress", 250, 2000, False), ("Rice Cooker", 40, 250, False), ("Air Fryer", 50, 300, False),
    ("Toaster", 25, 150, False), ("Electric Scooter", 300, 1200, False),
    ("Tablet Stand", 12, 60, False), ("Power Bank", 15, 90, False), ("Swim Shorts", 20, 60, True),
    ("Polo Shirt", 25, 90, True), ("Chinos", 40, 120, True), ("Pajama Set", 30, 100, True),
    ("Winter Gloves", 15, 70, False), ("Beanie", 12, 45, False), ("Picnic Blanket", 20, 80, False),
]
CALIB_EXTRA_ELECTRIC = {"Wireless Earbuds", "Smartwatch", "Mechanical Keyboard", "Gaming Mouse",
                        "Cordless Drill", "Rice Cooker", "Air Fryer", "Toaster", "Electric Scooter",
                        "Power Bank"}
CALIB_PRODUCTS = PRODUCTS + CALIB_EXTRA_PRODUCTS
CALIB_APPAREL = [p for p in CALIB_PRODUCTS if p[3]]
CALIB_ELECTRIC = ELECTRIC + [p for p in CALIB_EXTRA_PRODUCTS if p[0] in CALIB_EXTRA_ELECTRIC]
CALIB_CHEAP = [p for p in CALIB_PRODUCTS if p[2] <= 250]
CALIB_COLLECTIONS = COLLECTIONS + ["Aurora", "Basalt", "Cobalt", "Driftwood", "Ember", "Fjord",
                                   "Granite", "Hazel", "Indigo", "Kestrel", "Linden", "Marlow"]
CALIB_CITIES = CITIES + ["Glasgow", "Seattle", "Bordeaux", "Kyoto", "Phoenix", "Antwerp", "Cork",
                         "Vancouver", "Munich", "Seville", "Perth", "Tampa"]
CALIB_NAMES = FIRST_NAMES + ["Ada", "Felix", "Ines", "Jonas", "Keiko", "Luca", "Mira", "Noah",
                             "Olga", "Pablo", "Ruth", "Theo"]
WEEKDAY_CUTOFFS = [11, 12, 13, 14, 15, 16]


def cproduct(rng: Random, apparel: bool = False, electric: bool = False, cheap: bool = False):
    """(name, low, high) from the calibration catalogue (the shared one and its extras)."""
    pool = (CALIB_APPAREL if apparel else CALIB_ELECTRIC if electric else CALIB_CHEAP if cheap
            else CALIB_PRODUCTS)
    noun, lo, hi, _ = rng.choice(pool)
    return f"{rng.choice(CALIB_COLLECTIONS)} {noun}", lo, hi


def cmoney(rng: Random) -> Money:
    return rand_money(rng, (("USD", 5), ("EUR", 3), ("GBP", 2)))


def ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def hour12(h: int) -> str:
    return f"{h % 12 or 12} {'am' if h < 12 else 'pm'}"


# Shipping


def c_ship_locker(rng):
    carrier = rng.choice(CARRIERS[:7])
    days = rng.choice([3, 5, 7])
    city = rng.choice(CALIB_CITIES)
    prompt = rng.choice([
        f"Can my parcel go to a {carrier} locker in {city} instead of my home? I'm out all day.",
        f"Is delivery to a parcel locker possible? I'd like {carrier} to leave it at one near my work in {city}.",
    ])
    ans = (f"Yes. Choose Locker at checkout and pick one in {city} from the {carrier} map. You get a "
           f"code by text when it arrives, and the parcel waits there for {days} days before it is "
           "sent back.")
    return prompt, ans


def c_ship_saturday(rng):
    m = cmoney(rng)
    fee = m.small(rng, 4, 12)
    base = m.small(rng, 3, 8)
    prompt = rng.choice([
        f"Do you deliver on Saturdays? Standard delivery on my order is {m.fmt(base)}.",
        f"I'm only home at weekends. Can my order of standard delivery ({m.fmt(base)}) come on a Saturday?",
    ])
    ans = (f"Saturday delivery is available for an extra {m.fmt(fee)}, so with standard delivery "
           f"at {m.fmt(base)} you would pay {m.fmt(base + fee)} for shipping in total. Sunday "
           "delivery is not offered.")
    return prompt, ans


def c_ship_cutoff(rng):
    cut = rng.choice(WEEKDAY_CUTOFFS)
    h = rng.randint(8, 20)
    mins = rng.choice([0, 10, 15, 25, 30, 40, 45, 55])
    if h == cut and mins == 0:
        mins = 5
    when = f"{h % 12 or 12}:{mins:02d} {'am' if h < 12 else 'pm'}"
    prompt = rng.choice([
        f"If I order now, at {when}, will it still go out today? Your site says same-day dispatch before {hour12(cut)}.",
        f"It's {when} on a weekday. Same-day dispatch ends at {hour12(cut)}. Does my order make it?",
    ])
    if h < cut:
        ans = (f"Yes. {when} is before the {hour12(cut)} cut-off, so your order is packed and handed "
               "to the carrier today.")
    else:
        ans = (f"Not today: {when} is past the {hour12(cut)} cut-off, so it will be dispatched on "
               "the next working day.")
    return prompt, ans


def c_ship_pickup(rng):
    name, _, _ = cproduct(rng)
    city = rng.choice(CALIB_CITIES)
    h = rng.choice([2, 3, 4, 24])
    k = rng.choice([5, 7, 10, 14])
    prompt = rng.choice([
        f"Can I collect the {name} from your {city} store instead of paying for delivery?",
        f"Is click and collect available in {city}? I want to pick up the {name} myself.",
    ])
    ans = (f"Yes, click and collect is free at our {city} store. We email you when the {name} is "
           f"ready, usually within {plural(h, 'hour')}, and we hold it for {k} days. Bring the "
           "email and a photo ID.")
    return prompt, ans


def c_ship_per_kg(rng):
    m = cmoney(rng)
    base = m.small(rng, 4, 9)
    incl = rng.choice([1, 2, 5])
    per = m.small(rng, 1, 3)
    w = rng.randint(incl + 1, incl + 12)
    extra = w - incl
    prompt = (f"Shipping is {m.fmt(base)} for the first {incl} kg and {m.fmt(per)} for each extra kg. "
              f"My parcel weighs {w} kg. What do I pay?")
    ans = (f"The first {incl} kg cost {m.fmt(base)}, and the other {extra} kg add {extra} x "
           f"{m.fmt(per)} = {m.fmt(extra * per)}, so shipping comes to {m.fmt(base + extra * per)}.")
    return prompt, ans


def c_ship_combined(rng):
    m = cmoney(rng)
    (n1, lo1, hi1), (n2, lo2, hi2) = cproduct(rng, cheap=True), cproduct(rng)
    if n1 == n2:
        n2 = "matching " + n2
    s = m.small(rng, 3, 9)
    prompt = rng.choice([
        f"I ordered the {n1} and the {n2} separately, a few minutes apart. Do I pay shipping of {m.fmt(s)} twice?",
        f"Two orders today: one for the {n1}, one for the {n2}. Each charged {m.fmt(s)} shipping. Can you combine them?",
    ])
    ans = (f"If neither order has been packed yet, we can ship them together and refund one of the "
           f"{m.fmt(s)} shipping charges. I have merged them, so {m.fmt(s)} goes back to your card.")
    return prompt, ans


def c_ship_remote(rng):
    m = cmoney(rng)
    s = m.small(rng, 3, 8)
    sur = m.small(rng, 5, 20)
    area = rng.choice(["the Scottish Highlands", "the Channel Islands", "Alaska", "Hawaii",
                       "the Canary Islands", "Corsica", "Tasmania"])
    prompt = f"Is there a surcharge for delivery to {area}? Normal shipping is {m.fmt(s)}."
    ans = (f"Yes, remote areas such as {area} carry a {m.fmt(sur)} surcharge, so delivery there is "
           f"{m.fmt(s + sur)} and takes 2 to 4 days longer than usual.")
    return prompt, ans


# Returns and refunds


def c_ret_final_sale(rng):
    name, _, _ = cproduct(rng)
    off = rng.choice([50, 60, 70])
    prompt = rng.choice([
        f"I bought the {name} in the clearance sale at {off}% off. Can I still return it?",
        f"The {name} was marked final sale ({off}% off). It's not what I expected. Can I send it back?",
    ])
    ans = (f"Items sold at {off}% off in the clearance sale are final sale, so the {name} can't be "
           "returned for a refund. If it turns out to be faulty, the warranty still applies.")
    return prompt, ans


def c_ret_gift(rng):
    m = cmoney(rng)
    name, lo, hi = cproduct(rng)
    p = m.rand(rng, lo, hi)
    prompt = rng.choice([
        f"I got the {name} as a gift and would like to return it without the giver knowing. It sells for {m.fmt(p)}.",
        f"Can I return a present? It's the {name}, about {m.fmt(p)}, and I have the gift receipt.",
    ])
    ans = (f"Yes. With the gift receipt you receive the {m.fmt(p)} as a gift card in your name, and "
           "the person who bought it is not told about the return.")
    return prompt, ans


def c_ref_credit_bonus(rng):
    m = cmoney(rng)
    name, lo, hi = cproduct(rng)
    p = m.rand(rng, lo, hi)
    bonus = rng.choice([5, 10, 15])
    extra = m.pct(p, bonus)
    prompt = (f"For the {name} ({m.fmt(p)}) I can take a refund or store credit with a {bonus}% bonus. "
              "How much credit would that be?")
    ans = (f"Store credit would be {m.fmt(p)} plus a {bonus}% bonus of {m.fmt(extra)}, so "
           f"{m.fmt(p + extra)} in total. A refund to your card would be {m.fmt(p)}.")
    return prompt, ans


def c_ref_shipping_back(rng):
    m = cmoney(rng)
    name, lo, hi = cproduct(rng)
    p, s = m.rand(rng, lo, hi), m.small(rng, 3, 9)
    faulty = rng.random() < 0.5
    why = "it arrived broken" if faulty else "I changed my mind"
    prompt = (f"I'm returning the {name} because {why}. I paid {m.fmt(p)} plus {m.fmt(s)} shipping. "
              "Do I get the shipping back too?")
    if faulty:
        ans = (f"Yes. Because the {name} arrived broken, we refund everything: {m.fmt(p)} for the "
               f"item and {m.fmt(s)} for shipping, {m.fmt(p + s)} in total.")
    else:
        ans = (f"For a change of mind we refund the {m.fmt(p)} item price, but the original "
               f"{m.fmt(s)} shipping charge is not refundable.")
    return prompt, ans


def c_ref_method(rng):
    method, days = rng.choice([("PayPal", "1 to 2"), ("a gift card", "a few minutes"),
                               ("a debit card", "3 to 7"), ("Apple Pay", "3 to 5"),
                               ("a bank transfer", "2 to 4")])
    oid = order_id(rng)
    prompt = rng.choice([f"I paid for order {oid} with {method}. How long does the refund take?",
                         f"How fast will my refund for order {oid} arrive? I used {method}."])
    ans = (f"Refunds always go back to the way you paid. For {method}, the money for order {oid} "
           f"usually arrives {'within' if days == 'a few minutes' else 'in'} {days}"
           f"{'' if days == 'a few minutes' else ' business days'} after we approve the return.")
    return prompt, ans


def c_ret_no_box(rng):
    name, _, _ = cproduct(rng)
    prompt = rng.choice([f"I threw away the box of the {name}. Can I still send it back?",
                         f"Does the {name} have to be returned in its original packaging?"])
    ans = (f"The original box is not required. Pack the {name} securely in any sturdy box so it "
           "can't move around, and attach the return label to the outside.")
    return prompt, ans


# Prices and discounts


def c_price_second_half(rng):
    m = cmoney(rng)
    name, lo, hi = cproduct(rng, cheap=True)
    p = m.rand(rng, lo, hi)
    half = m.pct(p, 50)
    prompt = rng.choice([
        f"The {name} is {m.fmt(p)} and the second one is half price. What do two cost?",
        f"There's a second-item-half-price deal on the {name} at {m.fmt(p)}. Total for two?",
    ])
    ans = (f"The first {name} is {m.fmt(p)} and the second is half of that, {m.fmt(half)}, so two "
           f"cost {m.fmt(p + half)} together.")
    return prompt, ans


def c_price_coupon_min(rng):
    m = cmoney(rng)
    off = m.whole(rng, 5, 25, 5)
    mini = m.whole(rng, 50, 150, 10)
    cart = m.rand(rng, 25, 200)
    code = rng.choice(["SAVE", "EXTRA", "TAKE", "SPRING", "AUTUMN"]) + str(rng.randint(5, 30))
    prompt = (f"Code {code} takes {m.fmt(off)} off orders of {m.fmt(mini)} or more. My cart is "
              f"{m.fmt(cart)}. What's my total with the code?")
    if cart >= mini:
        ans = (f"Your cart of {m.fmt(cart)} qualifies, so {code} brings it down to "
               f"{m.fmt(cart - off)}.")
    else:
        ans = (f"The code won't apply yet: {m.fmt(cart)} is {m.fmt(mini - cart)} short of the "
               f"{m.fmt(mini)} minimum, so the total stays {m.fmt(cart)}.")
    return prompt, ans


def c_price_tax(rng):
    m = Money("USD", "sym", rng.random() < 0.85)
    name, lo, hi = cproduct(rng)
    p = m.rand(rng, lo, hi)
    state, rate = rng.choice([("Texas", 8.25), ("California", 7.25), ("Arizona", 5.6),
                              ("Ohio", 5.75), ("Washington", 6.5), ("Florida", 6)])
    tax = m.pct(p, rate)
    prompt = f"How much sales tax is added to the {name} at {m.fmt(p)} if I ship to {state} at {pct_str(rate)}%?"
    ans = (f"At {pct_str(rate)}%, the tax on {m.fmt(p)} is {m.fmt(tax)}, so the {name} costs "
           f"{m.fmt(p + tax)} delivered to {state}.")
    return prompt, ans


def c_price_student(rng):
    m = cmoney(rng)
    name, lo, hi = cproduct(rng)
    p = m.rand(rng, lo, hi)
    pc = rng.choice([10, 15, 20])
    cap_ = m.whole(rng, 20, 60, 10)
    d = min(m.pct(p, pc), cap_)
    prompt = (f"Is there a student discount on the {name} ({m.fmt(p)})? I saw {pc}% off, up to "
              f"{m.fmt(cap_)}.")
    capped = m.pct(p, pc) > cap_
    ans = (f"Yes. {pc}% of {m.fmt(p)} is {m.fmt(m.pct(p, pc))}"
           + (f", which is over the {m.fmt(cap_)} cap, so you save {m.fmt(cap_)}" if capped else "")
           + f". You pay {m.fmt(p - d)} after verifying your student status.")
    return prompt, ans


def c_price_preorder(rng):
    m = cmoney(rng)
    name, lo, hi = cproduct(rng)
    p = m.rand(rng, lo, hi, rounded=True)
    dep = rng.choice([10, 20, 25])
    d = rand_date(rng)
    prompt = (f"The {name} is on pre-order for {m.fmt(p)} with a {dep}% deposit. How much do I pay "
              f"now, and when is the rest due? It ships on {fmt_date(d, 'dmy')}.")
    ans = (f"You pay a deposit of {m.fmt(m.pct(p, dep))} today. The remaining "
           f"{m.fmt(p - m.pct(p, dep))} is charged on {fmt_date(d, 'dm')}, when the {name} ships.")
    return prompt, ans


def c_price_unit(rng):
    m = cmoney(rng)
    k = rng.choice([2, 3, 4, 6, 8, 10, 12])
    item = rng.choice(["AA batteries", "coffee pods", "tea lights", "hangers", "socks",
                       "glass jars", "gel pens", "microfibre cloths"])
    unit = m.rand(rng, 0.5, 4)
    pack = k * unit
    prompt = rng.choice([f"A pack of {k} {item} is {m.fmt(pack)}. What is that per item?",
                         f"How much is each one in the {k}-pack of {item} at {m.fmt(pack)}?"])
    ans = f"{m.fmt(pack)} for {k} {item} works out to {m.fmt(unit)} each."
    return prompt, ans


def c_price_bundle(rng):
    m = cmoney(rng)
    (n1, lo1, hi1), (n2, lo2, hi2) = cproduct(rng), cproduct(rng, cheap=True)
    if n1 == n2:
        n2 = "spare " + n2
    p1, p2 = m.rand(rng, lo1, hi1), m.rand(rng, lo2, hi2)
    off = rng.choice([10, 15, 20])
    both = p1 + p2
    prompt = (f"If I buy the {n1} ({m.fmt(p1)}) with the {n2} ({m.fmt(p2)}), the bundle is {off}% "
              "off. What's the bundle price?")
    ans = (f"Together they are {m.fmt(both)}; {off}% off takes away {m.fmt(m.pct(both, off))}, so "
           f"the bundle costs {m.fmt(both - m.pct(both, off))}.")
    return prompt, ans


# Orders


def c_ord_change_qty(rng):
    m = cmoney(rng)
    name, lo, hi = cproduct(rng, cheap=True)
    oid = order_id(rng)
    p = m.rand(rng, lo, min(hi, lo * 2))
    a = rng.randint(1, 5)
    b = rng.choice([x for x in range(1, 9) if x != a])
    prompt = (f"On order {oid} I asked for {plural(a, 'unit')} of the {name} at {m.fmt(p)} each. "
              f"Can you make it {b}?")
    diff = (b - a) * p
    ans = (f"Done: order {oid} now has {plural(b, 'unit')} of the {name}, {m.fmt(b * p)} in total. "
           + (f"We will charge the extra {m.fmt(diff)} to the same card." if diff > 0 else
              f"The {m.fmt(-diff)} difference goes back to your card."))
    return prompt, ans


def c_ord_invoice(rng):
    oid = order_id(rng)
    company = rng.choice(["Brightwell Ltd", "Nordlys AS", "Casa Blanca SL", "Fenwick & Hart",
                          "Kawa Trading", "Greenfield GmbH", "Lakeside Dental"])
    prompt = rng.choice([f"I need a VAT invoice for order {oid} made out to {company}.",
                         f"Can I get a company invoice for order {oid}? The business name is {company}."])
    ans = (f"Of course. Add {company} and its VAT number under Invoice details on order {oid}, and "
           "the invoice is generated as a PDF within 24 hours.")
    return prompt, ans


def c_ord_backorder(rng):
    name, _, _ = cproduct(rng)
    oid = order_id(rng)
    d = rand_date(rng)
    w = rng.randint(2, 6)
    prompt = f"Order {oid} says the {name} is on backorder. I ordered on {fmt_date(d, 'dmy')}. When will it ship?"
    ans = (f"The {name} is expected back in stock {w} weeks after your order, around "
           f"{fmt_date(d + dt.timedelta(weeks=w), 'dm')}, and order {oid} ships as soon as it "
           "arrives. You can cancel for free until then.")
    return prompt, ans


def c_ord_giftwrap(rng):
    m = cmoney(rng)
    k = rng.randint(1, 6)
    fee = m.small(rng, 2, 6)
    prompt = rng.choice([f"How much is gift wrapping for {plural(k, 'item')}? It says {m.fmt(fee)} per item.",
                         f"I'd like {plural(k, 'present')} wrapped at {m.fmt(fee)} each. What's the charge?"])
    ans = (f"Gift wrapping is {m.fmt(fee)} per item, so {k} x {m.fmt(fee)} = {m.fmt(k * fee)}. "
           "You can add a message card to each one for free.")
    return prompt, ans


def c_ord_duplicate(rng):
    m = cmoney(rng)
    o1, o2 = order_id(rng), order_id(rng)
    p = m.rand(rng, 15, 300)
    prompt = f"I think I ordered twice by mistake: orders {o1} and {o2}, both {m.fmt(p)}. Please cancel one."
    ans = (f"I've cancelled order {o2} and kept {o1}. The {m.fmt(p)} for the cancelled order is "
           "released back to your card, usually within 3 business days.")
    return prompt, ans


def c_ord_confirm_email(rng):
    oid = order_id(rng)
    mins = rng.choice([10, 15, 30])
    prompt = rng.choice([f"I never got a confirmation email for order {oid}.",
                         f"Where is my order confirmation? The number on screen was {oid}."])
    ans = (f"Order {oid} went through. Confirmation emails can take up to {mins} minutes and "
           "sometimes land in the spam folder; I have sent it again to the address on your account.")
    return prompt, ans


# Products


def c_prod_fit_space(rng):
    name, _, _ = cproduct(rng)
    w = rng.randint(30, 180)
    space = w + rng.choice([-15, -8, -3, 2, 6, 12, 25])
    prompt = f"The {name} is {w} cm wide. Will it fit in a gap of {space} cm?"
    if space >= w + 2:
        ans = f"Yes. At {w} cm wide it leaves {space - w} cm to spare in a {space} cm gap."
    elif space >= w:
        ans = f"Only just: {w} cm in a {space} cm gap leaves {space - w} cm, so measure again before you order."
    else:
        ans = f"No. The {name} is {w} cm wide, {w - space} cm more than your {space} cm gap."
    return prompt, ans


def c_prod_battery(rng):
    name, _, _ = cproduct(rng, electric=True)
    h = rng.choice([6, 8, 10, 12, 20, 24, 30])
    c = rng.choice([1, 1.5, 2, 3])
    prompt = rng.choice([f"How long does the battery of the {name} last?",
                         f"What's the battery life of the {name}, and how long does it take to charge?"])
    ans = (f"The {name} runs for up to {h} hours on a full charge, and charging from empty takes "
           f"about {pct_str(c)} {'hour' if c == 1 else 'hours'}.")
    return prompt, ans


def c_prod_capacity(rng):
    litres = rng.choice([1.2, 1.5, 1.7, 2.0, 2.5])
    cup = rng.choice([200, 250])
    cups = int(litres * 1000) // cup
    name = rng.choice(CALIB_COLLECTIONS) + rng.choice([" Kettle", " Teapot", " Coffee Maker"])
    prompt = f"How many {cup} ml cups does the {name} make? It holds {pct_str(litres)} litres."
    ans = (f"The {name} holds {pct_str(litres)} litres, that is {int(litres * 1000)} ml: enough "
           f"for {cups} cups of {cup} ml.")
    return prompt, ans


def c_prod_care(rng):
    name, _, _ = cproduct(rng, apparel=True)
    t = rng.choice([30, 40])
    prompt = rng.choice([f"How should I wash the {name}?", f"Can the {name} go in the washing machine?"])
    ans = (f"Yes, machine wash the {name} at {t}°C with similar colours, inside out. Don't tumble "
           "dry: hang it to dry to keep its shape.")
    return prompt, ans


def c_prod_store_stock(rng):
    name, _, _ = cproduct(rng)
    c1, c2 = rng.sample(CALIB_CITIES, 2)
    a, b = rng.randint(0, 12), rng.randint(1, 15)
    prompt = f"Do your {c1} or {c2} stores have the {name} in stock?"
    if a == 0:
        ans = (f"The {c1} store is out of the {name} at the moment, but {c2} has {b} on the shelf. "
               "You can reserve one online for pickup today.")
    else:
        ans = f"Yes: {c1} has {a} and {c2} has {b} of the {name} right now. Stock updates every hour."
    return prompt, ans


def c_prod_restock_alert(rng):
    name, _, _ = cproduct(rng)
    w = rng.randint(1, 6)
    prompt = rng.choice([f"The {name} is sold out. Can you tell me when it's back?",
                         f"When will the {name} be available again?"])
    ans = (f"We expect the {name} back in about {plural(w, 'week')}. Click Notify me on the "
           "product page and we'll email you the moment it can be ordered.")
    return prompt, ans


def c_prod_compat(rng):
    acc = rng.choice(["charger", "replacement filter", "spare battery", "carry case", "wall mount"])
    name, _, _ = cproduct(rng, electric=True)
    gen = rng.randint(2, 5)
    prompt = f"Does the {acc} for generation {gen - 1} fit the new {name} (generation {gen})?"
    ans = (f"No. The generation {gen} {name} uses a new {acc}. Accessories for generation {gen - 1} "
           f"don't fit, so look for the ones marked Gen {gen}.")
    return prompt, ans


# Payments


def c_pay_declined(rng):
    m = cmoney(rng)
    p = m.rand(rng, 20, 600)
    prompt = rng.choice([f"My card was declined for a {m.fmt(p)} order. Why?",
                         f"Checkout keeps refusing my card. The order is {m.fmt(p)}."])
    ans = (f"We don't see the reason, but declines usually come from the bank: a daily limit below "
           f"{m.fmt(p)}, a billing address that doesn't match, or an online-payment block. Your bank "
           "can check it, or you can try PayPal.")
    return prompt, ans


def c_pay_cod(rng):
    m = cmoney(rng)
    p = m.rand(rng, 15, 300)
    fee = m.small(rng, 1, 5)
    prompt = f"Can I pay cash on delivery for my {m.fmt(p)} order?"
    ans = (f"Yes, cash on delivery costs an extra {m.fmt(fee)}, so the courier will collect "
           f"{m.fmt(p + fee)}. Please have the exact amount ready.")
    return prompt, ans


def c_pay_instalments_month(rng):
    m = cmoney(rng)
    name, lo, hi = cproduct(rng)
    n = rng.choice([3, 6, 10, 12])
    per = m.rand(rng, max(lo / n, 5), max(hi / n, 10))
    prompt = f"If I pay for the {name} over {n} months, what is each payment? The price is {m.fmt(per * n)}."
    ans = (f"{m.fmt(per * n)} over {n} months is {m.fmt(per)} a month, with no interest if every "
           "payment is made on time.")
    return prompt, ans


def c_pay_currency(rng):
    code = rng.choice(["EUR", "GBP", "USD"])
    country = rng.choice(COUNTRIES)
    prompt = rng.choice([f"I'm in {country}. Which currency will I be charged in?",
                         f"Will my card be charged in {code} when I order from {country}?"])
    ans = (f"Orders to {country} are charged in {code}, as all our prices are. Your bank converts "
           "the amount, and some banks add a small foreign transaction fee.")
    return prompt, ans


# Accounts and membership


def c_acc_locked(rng):
    n = rng.choice([3, 5, 10])
    mins = rng.choice([15, 30, 60])
    name = rng.choice(CALIB_NAMES)
    prompt = f"This is {name}. My account is locked after I typed the wrong password {n} times."
    ans = (f"For your security, {n} failed attempts lock the account for {mins} minutes, {name}. "
           "After that you can sign in again, or use Forgot password to set a new one right away.")
    return prompt, ans


def c_acc_2fa(rng):
    s = rng.choice([30, 60, 90, 120, 300])
    name = rng.choice(CALIB_NAMES)
    via = rng.choice(["text message", "email", "authenticator app"])
    prompt = rng.choice([f"Hi, {name} here. My login code from the {via} doesn't work.",
                         f"The verification code I got by {via} is rejected. - {name}"])
    ans = (f"Sorry about that, {name}. Each code sent by {via} is valid for {s} seconds and only "
           "for the latest request. Request a new code and enter it straight away; older codes "
           "stop working.")
    return prompt, ans


def c_acc_membership(rng):
    m = cmoney(rng)
    fee = m.whole(rng, 20, 80, 5)
    s = m.small(rng, 4, 9)
    k = -(-fee // s)
    prompt = (f"Membership is {m.fmt(fee)} a year and includes free shipping, which is normally "
              f"{m.fmt(s)} an order. After how many orders does it pay for itself?")
    ans = (f"{m.fmt(fee)} divided by {m.fmt(s)} per order is more than {k - 1} but less than {k}, "
           f"so from your {ordinal(k)} order in the year the membership saves you money.")
    if (k - 1) * s == fee:
        ans = (f"{m.fmt(fee)} is exactly {k - 1} orders at {m.fmt(s)}, so it breaks even after "
               f"{k - 1} orders and saves money from the {ordinal(k)}.")
    return prompt, ans


def c_acc_referral(rng):
    m = cmoney(rng)
    per = m.whole(rng, 5, 20, 5)
    cap_n = rng.choice([5, 10])
    k = rng.randint(1, 14)
    prompt = (f"I get {m.fmt(per)} for every friend who orders with my link, for up to {cap_n} "
              f"friends. {plural(k, 'friend has', 'friends have')} ordered. What have I earned?")
    got = min(k, cap_n)
    ans = (f"{got} x {m.fmt(per)} = {m.fmt(got * per)} in credit"
           + (f"; the referral limit is {cap_n} friends, so the others don't add more." if k > cap_n
              else "."))
    return prompt, ans


def c_acc_birthday(rng):
    m = cmoney(rng)
    v = m.whole(rng, 5, 20, 5)
    d = rng.choice([14, 30])
    name, shop = rng.choice(CALIB_NAMES), rng.choice(SHOPS)
    prompt = rng.choice([f"Do {shop} members get anything on their birthday? I'm {name}.",
                         f"{name} here. I added my birthday to my {shop} account. Is there a reward?"])
    ans = (f"Yes, {name}: {shop} emails members a {m.fmt(v)} voucher at the start of their "
           f"birthday month. It works on any order and is valid for {d} days.")
    return prompt, ans


def c_acc_unsubscribe(rng):
    d = rng.choice([2, 3, 5, 7])
    name = rng.choice(CALIB_NAMES)
    shop = rng.choice(SHOPS)
    prompt = rng.choice([f"How do I stop the marketing emails from {shop}? This is {name}.",
                         f"I keep getting {shop} newsletters. Please take me off the list. {name}"])
    ans = (f"Of course, {name}. Click Unsubscribe at the bottom of any {shop} newsletter, or turn "
           f"off Marketing emails in your account. It can take up to {d} days for the last "
           "scheduled emails to stop; order and delivery emails keep coming.")
    return prompt, ans


# Subscriptions and repairs


def c_sub_saving(rng):
    m = cmoney(rng)
    item = rng.choice(["coffee", "dog food", "contact lenses", "shaving kit", "protein powder",
                       "printer ink", "cat litter"])
    p = m.rand(rng, 10, 60)
    pc = rng.choice([5, 10, 15])
    per_year = rng.choice([4, 6, 12])
    save = m.pct(p, pc)
    prompt = (f"The {item} is {m.fmt(p)}, or {pc}% less on subscribe and save. How much do I save "
              f"with {per_year} deliveries a year?")
    ans = (f"Each delivery costs {m.fmt(p - save)} instead of {m.fmt(p)}, a saving of "
           f"{m.fmt(save)}; over {per_year} deliveries that is {m.fmt(per_year * save)} a year.")
    return prompt, ans


def c_sub_cancel(rng):
    d = rand_date(rng)
    k = rng.choice([1, 2, 3])
    prompt = (f"My subscription renews on {fmt_date(d, 'mdy')}. How late can I cancel without "
              "being charged again?")
    last = d - dt.timedelta(days=k)
    ans = (f"Cancel by {fmt_date(last, 'md')}, {plural(k, 'day')} before the renewal, and you won't be "
           "charged again. You keep access until the end of the period you have paid for.")
    return prompt, ans


def c_rep_quote(rng):
    m = cmoney(rng)
    name, _, _ = cproduct(rng, electric=True)
    parts = m.small(rng, 10, 80)
    labour = m.whole(rng, 20, 60, 5)
    prompt = (f"My {name} is out of warranty. The repair quote says parts {m.fmt(parts)} and "
              f"labour {m.fmt(labour)}. What's the total?")
    ans = (f"The repair costs {m.fmt(parts + labour)}: {m.fmt(parts)} for parts plus "
           f"{m.fmt(labour)} for labour. Return shipping to you is included.")
    return prompt, ans


def c_war_extended(rng):
    m = cmoney(rng)
    name, lo, hi = cproduct(rng, electric=True)
    p = m.rand(rng, lo, hi, rounded=True)
    pc = rng.choice([10, 12, 15])
    y = rng.choice([2, 3])
    prompt = f"What does the {y}-year extended warranty cost on the {name} ({m.fmt(p)})? It's {pc}% of the price."
    ans = (f"{pc}% of {m.fmt(p)} is {m.fmt(m.pct(p, pc))}, so the {name} with the {y}-year "
           f"extended warranty comes to {m.fmt(p + m.pct(p, pc))}.")
    return prompt, ans


# Chinese


def zm(rng) -> Money:
    return Money("CNY", rng.choice(["sym", "yuan", "yuan"]), rng.random() < 0.7)


ZH_EXTRA_PRODUCTS = [
    ("智能手表", 399, 2499), ("空气炸锅", 199, 899), ("电饭煲", 199, 1299), ("扫地机器人", 999, 4999),
    ("充电宝", 69, 299), ("儿童推车", 599, 3999), ("猫爬架", 129, 699), ("电动滑板车", 1299, 4999),
    ("护肤精华", 99, 599), ("登山鞋", 399, 1299), ("真丝睡衣", 299, 999), ("书架", 299, 1599),
    ("床垫", 999, 6999), ("烤面包机", 149, 599), ("电钻", 199, 899), ("桌游", 59, 299),
]
ZH_ALL_PRODUCTS = ZH_PRODUCTS + ZH_EXTRA_PRODUCTS
ZH_CITIES = ["北京", "上海", "广州", "深圳", "杭州", "成都", "武汉", "西安", "南京", "重庆", "苏州",
             "厦门"]
ZH_REMOTE = ["新疆", "西藏", "青海", "内蒙古", "宁夏"]
ZH_NUM = "零一二三四五六七八九"


def zh_small(n: int) -> str:
    """1-99 in Chinese numerals (十五, 二十, 三十七)."""
    if n < 10:
        return ZH_NUM[n]
    t, u = divmod(n, 10)
    return ("" if t == 1 else ZH_NUM[t]) + "十" + (ZH_NUM[u] if u else "")


def czp(rng):
    noun, lo, hi = rng.choice(ZH_ALL_PRODUCTS)
    return rng.choice(ZH_COLORS) + noun, lo, hi


def cz_ship_time(rng):
    city = rng.choice(ZH_CITIES)
    carrier = rng.choice(ZH_CARRIERS)
    h = rng.choice([24, 48, 72])
    n = rng.randint(1, 4)
    name, _, _ = czp(rng)
    prompt = rng.choice([f"{name}发到{city}一般几天能到？", f"我在{city}，今天下单{name}什么时候能收到？"])
    ans = rng.choice([
        f"我们会在{h}小时内发货，默认{carrier}，发到{city}一般{n}到{n + 2}天送达。",
        f"付款后{h}小时内发出，{city}通常{zh_small(n)}到{zh_small(n + 2)}天可以收到，发货后可以在订单里查看物流。",
    ])
    return prompt, ans


def cz_ship_remote(rng):
    area = rng.choice(ZH_REMOTE)
    m = zm(rng)
    fee = rng.choice([10, 15, 20, 25]) * 100
    name, _, _ = czp(rng)
    prompt = rng.choice([f"{name}寄到{area}还包不包邮？", f"买{name}寄到{area}需要加运费吗？"])
    extra = rng.randint(1, 4)
    ans = f"{area}属于偏远地区，不参加包邮活动，每单需补运费{m.fmt(fee)}，到货时间比其他地区多{extra}到{extra + 2}天。"
    return prompt, ans


def cz_full_reduction(rng):
    m = zm(rng)
    th = rng.choice([199, 299, 399, 499]) * 100
    off = rng.choice([20, 30, 50, 60]) * 100
    cart = rng.randint(120, 700) * 100 + rng.choice([0, 0, 50, 90])
    prompt = f"满{m.fmt(th)}减{m.fmt(off)}，我的购物车是{m.fmt(cart)}，实付多少？"
    if cart >= th:
        ans = f"您的购物车{m.fmt(cart)}已满{m.fmt(th)}，可以减{m.fmt(off)}，实付{m.fmt(cart - off)}。"
    else:
        ans = f"您的购物车{m.fmt(cart)}还差{m.fmt(th - cart)}才满{m.fmt(th)}，暂时不能减，实付{m.fmt(cart)}。"
    return prompt, ans


def cz_coupon_stack(rng):
    m = zm(rng)
    a = rng.choice([10, 20, 30, 40]) * 100
    b = rng.choice([5, 8, 10, 15]) * 100
    cart = rng.randint(100, 900) * 100 + rng.choice([0, 0, 50, 90])
    prompt = rng.choice([f"店铺券{m.fmt(a)}和平台券{m.fmt(b)}能一起用吗？我买了{m.fmt(cart)}。",
                         f"订单{m.fmt(cart)}，我有一张{m.fmt(a)}的店铺优惠券，还有一张{m.fmt(b)}的平台券，可以叠加吗？"])
    ans = (f"可以叠加。店铺券和平台券各用一张，一共优惠{m.fmt(a + b)}，{m.fmt(cart)}的订单实付"
           f"{m.fmt(cart - a - b)}。同一种券每单只能用一张。")
    return prompt, ans


def cz_member_discount(rng):
    m = zm(rng)
    name, lo, hi = czp(rng)
    p = rng.randint(lo, hi) * 100
    zhe = rng.choice([9.5, 9, 8.8, 8.5])
    off = round(100 - zhe * 10, 1)
    pay = p - m.pct(p, off)
    prompt = f"会员打{pct_str(zhe)}折，{name}原价{m.fmt(p)}，会员价是多少？"
    ans = f"{name}原价{m.fmt(p)}，会员打{pct_str(zhe)}折后是{m.fmt(pay)}，便宜了{m.fmt(p - pay)}。"
    return prompt, ans


def cz_invoice(rng):
    oid = order_id(rng)
    prompt = rng.choice([f"订单{oid}可以开增值税专票吗？", f"订单{oid}需要开公司抬头的发票，怎么弄？"])
    ans = rng.choice([
        f"可以。在订单{oid}的发票页面填写公司名称和税号，电子发票一般在确认收货后{zh_small(rng.choice([1, 2, 3]))}个工作日内发到您的邮箱。",
        f"可以开。请在订单{oid}详情里点“申请发票”，填写抬头和税号，我们会在3个工作日内开好。",
    ])
    return prompt, ans


def cz_price_protect(rng):
    m = zm(rng)
    name, lo, hi = czp(rng)
    paid = rng.randint(lo, hi) * 100
    drop = rng.choice([10, 20, 30, 50, 80]) * 100
    k = rng.randint(2, 40)
    days = rng.choice([7, 15, 30])
    prompt = f"我{k}天前买的{name}花了{m.fmt(paid)}，现在降了{m.fmt(drop)}，能退差价吗？"
    if k <= days:
        ans = f"可以。我们支持{days}天价格保护，您购买{k}天，在保价期内，差价{m.fmt(drop)}会退回到您的账户。"
    else:
        ans = f"很抱歉，价格保护期是{days}天，您的订单已经{k}天了，超过保价期，差价{m.fmt(drop)}无法退还。"
    return prompt, ans


def cz_trade_in(rng):
    m = zm(rng)
    name, lo, hi = czp(rng)
    p = rng.randint(lo, hi) * 100
    sub = rng.choice([x for x in (50, 100, 200, 300) if x * 100 * 2 <= p] or [20]) * 100
    prompt = f"以旧换新能补贴多少？我想买{m.fmt(p)}的{name}。"
    ans = f"旧机评估合格后可以补贴{m.fmt(sub)}，新买的{name}实付{m.fmt(p - sub)}。旧机由快递上门免费取件。"
    return prompt, ans


def cz_instalment(rng):
    m = zm(rng)
    n = rng.choice([3, 6, 12, 24])
    per = rng.randint(50, 900) * 100
    name, _, _ = czp(rng)
    prompt = rng.choice([f"{name}{m.fmt(per * n)}，分{n}期免息每期多少钱？",
                         f"{m.fmt(per * n)}的{name}可以分{n}期吗？每个月还多少？"])
    ans = f"可以分{n}期免息，{m.fmt(per * n)}分{n}期，每期{m.fmt(per)}，没有手续费。"
    return prompt, ans


def cz_tracking(rng):
    carrier = rng.choice(ZH_CARRIERS)
    trk = tracking(rng, carrier)
    n = rng.randint(2, 6)
    prompt = rng.choice([f"运单号{trk}的物流{n}天没更新了，怎么回事？",
                         f"{carrier}单号{trk}显示{n}天没动了，是不是丢件了？"])
    if n <= 3:
        ans = f"中转期间物流可能{zh_small(n)}天不更新，属于正常情况。如果超过{zh_small(4)}天还没有更新，我们会联系{carrier}核查。"
    else:
        ans = f"已经{n}天没有更新，我们已联系{carrier}核查运单{trk}，2个工作日内给您答复，如确认丢件会补发或全额退款。"
    return prompt, ans


def cz_change_address(rng):
    oid = order_id(rng)
    city = rng.choice(ZH_CITIES)
    shipped = rng.random() < 0.4
    prompt = f"订单{oid}的收货地址填错了，应该是{city}，能改吗？"
    if shipped:
        ans = f"订单{oid}已经发货，我们无法直接修改地址。您可以联系快递员改派，或拒收后我们安排退款。"
    else:
        ans = f"可以，订单{oid}还没有发货。请把{city}的详细地址和收件人电话发给我，我马上帮您修改。"
    return prompt, ans


def cz_cancel(rng):
    oid = order_id(rng)
    mins = rng.choice([30, 60])
    k = rng.randint(5, 120)
    prompt = f"订单{oid}是{k}分钟前下的，还能取消吗？"
    if k <= mins:
        ans = f"可以取消。订单{oid}下单{k}分钟，还在{mins}分钟的取消时限内，款项会原路退回。"
    else:
        ans = f"订单{oid}已经下单{k}分钟，超过了{mins}分钟的取消时限，仓库已经在打包。收到后可以申请退货。"
    return prompt, ans


def cz_restock(rng):
    name, _, _ = czp(rng)
    d = rng.randint(3, 20)
    prompt = rng.choice([f"{name}什么时候补货？", f"{name}显示缺货，还会有吗？"])
    ans = rng.choice([
        f"{name}预计{d}天后补货，您可以点击“到货提醒”，补货后会第一时间短信通知您。",
        f"这款{name}大约{zh_small(d)}天后到货，可以先收藏，到货后我们会发消息提醒。",
    ])
    return prompt, ans


def cz_shoe_size(rng):
    foot = rng.choice([230, 235, 240, 245, 250, 255, 260, 265, 270])
    size = (foot - 230) // 5 + 36
    name = rng.choice(ZH_COLORS) + rng.choice(["运动鞋", "登山鞋", "帆布鞋", "皮鞋"])
    prompt = f"我的脚长{foot}毫米，这款{name}穿多大码？尺码表上36码是230毫米，每大一码加5毫米。"
    ans = f"按尺码表，脚长{foot}毫米穿{name}对应{size}码。脚背较高的话建议选大一码，也就是{size + 1}码。"
    return prompt, ans


def cz_gift(rng):
    m = zm(rng)
    th = rng.choice([99, 199, 299]) * 100
    cart = rng.randint(50, 400) * 100
    gift = rng.choice(["保温杯", "帆布袋", "收纳盒", "数据线"])
    prompt = f"买满{m.fmt(th)}送{gift}，我买了{m.fmt(cart)}，有赠品吗？"
    if cart >= th:
        ans = f"有的。您的订单{m.fmt(cart)}已满{m.fmt(th)}，{gift}会和商品一起发出，不需要另外领取。"
    else:
        ans = f"暂时没有。您的订单{m.fmt(cart)}还差{m.fmt(th - cart)}才满{m.fmt(th)}，凑够后{gift}会自动加入订单。"
    return prompt, ans


def cz_points_redeem(rng):
    pts = rng.randint(200, 20000)
    per = rng.choice([100, 200, 500])
    val = rng.choice([1, 2, 5])
    k = pts // per
    prompt = f"我有{pts}积分，每{per}积分抵{val}元，最多能抵多少钱？"
    ans = f"{pts}积分按每{per}积分抵{val}元计算，可以抵{k * val}元，剩下{pts - k * per}积分继续保留。"
    return prompt, ans


def cz_password(rng):
    s = rng.choice(ZH_SURNAMES)
    mins = rng.choice([5, 10, 15])
    tail = rng.randint(1000, 9999)
    prompt = rng.choice([f"我是{s}先生，手机尾号{tail}，忘记登录密码了怎么办？",
                         f"{s}女士，尾号{tail}的账号登不上去，密码忘了。"])
    ans = (f"{s}{'先生' if '先生' in prompt else '女士'}您好，请在登录页点“忘记密码”，用尾号{tail}的手机获取"
           f"验证码，验证码{mins}分钟内有效，然后设置新密码即可。")
    return prompt, ans


def cz_phone_change(rng):
    s = rng.choice(ZH_SURNAMES)
    tail = rng.randint(1000, 9999)
    prompt = rng.choice([f"我是{s}女士，手机号换了，尾号{tail}的旧号不用了，账号怎么换绑？",
                         f"{s}先生，我换了新手机号，原来尾号{tail}的号码收不到验证码了。"])
    d = rng.choice([1, 2, 3, 5, 7])
    ans = (f"请在“账户设置-安全中心”里选择更换手机号。尾号{tail}的旧号码如果已停用，可以上传身份证照片"
           f"申请人工换绑，审核需要{zh_small(d)}个工作日。")
    return prompt, ans


def cz_delete_account(rng):
    d = rng.choice([7, 15, 30])
    pts = rng.randint(50, 9000)
    prompt = rng.choice([f"账号要怎么注销？我还有{pts}积分。", f"我想注销会员账户，账户里的{pts}积分会怎样？"])
    ans = f"注销申请提交后有{d}天冷静期，期满后账号和{pts}积分会被清空且无法恢复，建议先把积分用掉。订单记录会按法律要求保存。"
    return prompt, ans


def cz_install(rng):
    m = zm(rng)
    name = rng.choice(["空调", "洗衣机", "热水器", "油烟机", "电视挂架", "洗碗机", "净水器"])
    name = rng.choice(["", "", "新买的", "刚下单的", "这台"]) + name
    fee = rng.choice([0, 50, 80, 100, 150]) * 100
    d = rng.randint(1, 3)
    prompt = rng.choice([f"{name}包安装吗？", f"买{name}上门安装要收费吗？"])
    if fee == 0:
        ans = f"{name}免费上门安装，送货后{d}天内安装师傅会联系您预约时间。"
    else:
        ans = f"{name}基础安装收费{m.fmt(fee)}，送货后{d}天内师傅会电话预约，辅材费用按实际使用另算。"
    return prompt, ans


def cz_refund_time(rng):
    way, days = rng.choice([("支付宝", "1到3"), ("微信", "1到3"), ("银行卡", "3到7"), ("信用卡", "5到10")])
    oid = order_id(rng)
    prompt = rng.choice([f"订单{oid}退款多久能到账？我用的是{way}。", f"{way}付的款，退款几天到？订单{oid}。"])
    ans = f"订单{oid}的退款审核通过后会原路退回{way}，一般{days}个工作日到账，请留意账户通知。"
    return prompt, ans


def cz_damaged(rng):
    name, _, _ = czp(rng)
    prompt = rng.choice([f"收到的{name}外壳破了，怎么处理？", f"{name}到货就有划痕，可以换吗？"])
    h = rng.choice([24, 48, 72])
    ans = f"非常抱歉。请在签收后{h}小时内把{name}的照片上传到订单页面，我们核实后免费换新，退回的运费由我们承担。"
    return prompt, ans


def cz_unit_price(rng):
    m = zm(rng)
    n = rng.choice([2, 3, 4, 5, 6, 10, 12])
    unit = rng.randint(5, 200) * 100 + rng.choice([0, 0, 50, 90])
    item = rng.choice(["抽纸", "洗衣液", "矿泉水", "咖啡胶囊", "牙刷", "毛巾"])
    prompt = rng.choice([f"{item}一组{n}件卖{m.fmt(unit * n)}，一件合多少钱？",
                         f"{n}件装的{item}{m.fmt(unit * n)}，单价是多少？"])
    ans = f"{m.fmt(unit * n)}除以{n}件，每件{m.fmt(unit)}。"
    return prompt, ans


def cz_total(rng):
    m = zm(rng)
    (n1, lo1, hi1), (n2, lo2, hi2) = czp(rng), czp(rng)
    p1, p2 = cny(rng, lo1, hi1), cny(rng, lo2, hi2)
    k = rng.randint(1, 3)
    prompt = f"买{k}件{n1}（{m.fmt(p1)}一件）和一件{n2}（{m.fmt(p2)}），一共多少钱？"
    ans = f"{k}件{n1}是{m.fmt(k * p1)}，加上{n2}的{m.fmt(p2)}，一共{m.fmt(k * p1 + p2)}。"
    return prompt, ans


def cz_deposit(rng):
    m = zm(rng)
    name, lo, hi = czp(rng)
    dep = rng.choice([50, 100, 200]) * 100
    off = rng.choice([100, 150, 300]) * 100
    p = rng.randint(max(lo, off // 100 + 50), max(hi, off // 100 + 100)) * 100
    d = rand_date(rng)
    prompt = f"{name}预售，定金{m.fmt(dep)}抵{m.fmt(off)}，到手价{m.fmt(p)}的话尾款多少？"
    ans = f"定金{m.fmt(dep)}可以抵{m.fmt(off)}，所以尾款是{m.fmt(p - off)}，请在{zh_date(d, year=False)}当天支付尾款。"
    return prompt, ans


def cz_same_day(rng):
    city = rng.choice(ZH_CITIES)
    cut = rng.choice([11, 12, 14, 15])
    h = rng.randint(8, 20)
    prompt = f"我在{city}，现在{h}点下单，今天能送到吗？"
    if h < cut:
        ans = f"可以。{city}支持当日达，{cut}点前下单当天送到，您{h}点下单赶得上。"
    else:
        ans = f"今天送不到了。{city}当日达要在{cut}点前下单，{h}点下单会在明天送达。"
    return prompt, ans


def cz_warranty_claim(rng):
    name, _, _ = czp(rng)
    y = rng.choice([1, 2, 3])
    prompt = rng.choice([f"{name}的保修期有多长？", f"{name}坏了保修怎么申请？"])
    ans = f"{name}整机保修{zh_small(y)}年，在订单页面点“申请售后”，上传故障照片和购买凭证，审核通过后我们安排上门取件。"
    return prompt, ans


CALIB_EN_MORE = [c_ship_locker, c_ship_saturday, c_ship_cutoff, c_ship_pickup, c_ship_per_kg,
                 c_ship_combined, c_ship_remote, c_ret_final_sale, c_ret_gift, c_ref_credit_bonus,
                 c_ref_shipping_back, c_ref_method, c_ret_no_box, c_price_second_half,
                 c_price_coupon_min, c_price_tax, c_price_student, c_price_preorder, c_price_unit,
                 c_price_bundle, c_ord_change_qty, c_ord_invoice, c_ord_backorder, c_ord_giftwrap,
                 c_ord_duplicate, c_ord_confirm_email, c_prod_fit_space, c_prod_battery,
                 c_prod_capacity, c_prod_care, c_prod_store_stock, c_prod_restock_alert,
                 c_prod_compat, c_pay_declined, c_pay_cod, c_pay_instalments_month, c_pay_currency,
                 c_acc_locked, c_acc_2fa, c_acc_membership, c_acc_referral, c_acc_birthday,
                 c_acc_unsubscribe, c_sub_saving, c_sub_cancel, c_rep_quote, c_war_extended]
CALIB_ZH_MORE = [cz_ship_time, cz_ship_remote, cz_full_reduction, cz_coupon_stack,
                 cz_member_discount, cz_invoice, cz_price_protect, cz_trade_in, cz_instalment,
                 cz_tracking, cz_change_address, cz_cancel, cz_restock, cz_shoe_size, cz_gift,
                 cz_points_redeem, cz_password, cz_phone_change, cz_delete_account, cz_install,
                 cz_refund_time, cz_damaged, cz_unit_price, cz_total, cz_deposit, cz_same_day,
                 cz_warranty_claim]


CALIB_EN = [c_ship_threshold, c_ship_bdays, c_ship_express, c_ship_tracking, c_ship_address,
            c_ret_window, c_ret_how, c_ret_exchange, c_ref_label, c_ref_when, c_ref_partial,
            c_ref_restock, c_price_sale, c_price_pct, c_price_match, c_price_qty, c_ord_cancel,
            c_ord_missing, c_ord_status, c_ord_add, c_size_chart, c_size_shoe, c_size_fit,
            c_warranty_date, c_warranty_months, c_pay_installments, c_pay_twice, c_pay_giftcard,
            c_pay_methods, c_acc_points, c_acc_redeem, c_acc_password, c_acc_email, c_acc_delete]
CALIB_ZH = [cz_ship, cz_return, cz_refund, cz_discount, cz_order, cz_size, cz_warranty, cz_points]


def gen_calib() -> list[dict]:
    rng = Random(CALIB_SEED)
    out, seen_p, seen_a = [], set(), set()
    en_order: list = []
    zh_order_: list = []
    for i in range(N_CALIB):
        zh = i % CALIB_ZH_EVERY == CALIB_ZH_EVERY - 1
        pool = zh_order_ if zh else en_order
        if not pool:
            pool.extend(CALIB_ZH + CALIB_ZH_MORE if zh else CALIB_EN + CALIB_EN_MORE)
            rng.shuffle(pool)
        tmpl = pool.pop()
        for _ in range(200):
            p, a = tmpl(rng)
            if p not in seen_p and a not in seen_a:
                break
        else:
            raise RuntimeError(f"could not make a distinct line from {tmpl.__name__}")
        seen_p.add(p)
        seen_a.add(a)
        out.append({"prompt": p, "answer": a})
    return out


# ----------------------------------------------------------------------------------------------
# 3. Held-out prose (its own templates and wording, no sentence shared with the calibration set)


class Shop:
    def __init__(self, rng: Random, name: str):
        self.rng = rng
        self.name = name
        self.m = Money(rng.choice(["USD", "USD", "EUR", "GBP"]), "sym", True)
        m = self.m
        self.free = m.whole(rng, 40, 100, 5)
        self.std = m.small(rng, 3, 7)
        self.std_days = (rng.randint(2, 4), 0)
        self.std_days = (self.std_days[0], self.std_days[0] + rng.randint(2, 3))
        self.exp = m.small(rng, 11, 22)
        self.exp_days = rng.choice([1, 2])
        self.cutoff = rng.choice([12, 13, 14, 15, 16])
        self.ret = rng.choice([14, 21, 30, 45, 60, 100])
        self.check = rng.choice([2, 3, 5])
        self.bank = (rng.randint(2, 4), rng.randint(5, 10))
        self.warranty = rng.choice([1, 2, 3])
        self.points = rng.choice([1, 2, 5, 10])
        self.block = rng.choice([100, 250, 500])
        self.block_val = m.whole(rng, 5, 10, 5) if self.block >= 250 else m.whole(rng, 1, 3, 1)
        self.hours = rng.choice([("8 am", "8 pm"), ("9 am", "6 pm"), ("7 am", "10 pm")])
        self.label = m.small(rng, 3, 7)
        self.intl = m.small(rng, 14, 40)


def pick(rng, *variants):
    return rng.choice(variants)


def h_faq(rng, s: Shop) -> list[str]:
    m = s.m
    a, b = s.std_days
    title = pick(rng, f"{s.name}: help centre", f"Frequently asked questions at {s.name}",
                 f"{s.name} customer guide", f"About ordering from {s.name}")
    paras = [
        pick(rng,
             f"Delivery. Every order is packed within one working day. Standard delivery costs "
             f"{m.fmt(s.std)} and reaches most addresses in {a} to {b} working days; it is free "
             f"once your basket passes {m.fmt(s.free)}. Express costs {m.fmt(s.exp)} and arrives "
             f"in {plural(s.exp_days, 'working day')} if you order before {s.cutoff}:00.",
             f"How fast is delivery? Most parcels leave us the same day and land {a} to {b} working "
             f"days later. The standard rate is {m.fmt(s.std)}, dropping to nothing above "
             f"{m.fmt(s.free)}, while express ({m.fmt(s.exp)}) gets there in "
             f"{plural(s.exp_days, 'working day')} when the order is in by {s.cutoff}:00."),
        pick(rng,
             f"Returns. You can send unused items back within {s.ret} days of delivery. The return "
             f"label costs {m.fmt(s.label)} and is taken off your refund, unless the item arrived "
             "damaged or we sent the wrong thing, in which case the label is on us.",
             f"Changed your mind? Unworn and unused goods may come back to us for up to {s.ret} "
             f"days after they arrive. We charge {m.fmt(s.label)} for the prepaid label, which we "
             "simply subtract from the amount we pay back; faulty or incorrect items travel free."),
        pick(rng,
             f"Refunds. We inspect returned parcels within {plural(s.check, 'working day')} of "
             f"receiving them. The money then goes back to the card you paid with, and banks take "
             f"a further {s.bank[0]} to {s.bank[1]} days to show it on your statement.",
             f"Where is my money? After a return reaches the warehouse, a member of the team checks "
             f"it within {plural(s.check, 'working day')} and releases the payment to your "
             f"original card. Allow {s.bank[0]} to {s.bank[1]} more days for your bank."),
        pick(rng,
             f"Guarantee. Electrical goods carry a {s.warranty}-year guarantee from the date on your "
             "receipt. Wear and tear, accidents and water damage are not included.",
             f"Anything with a plug or a battery is guaranteed for {plural(s.warranty, 'year')}. "
             "Keep your receipt, because the cover starts on the day you bought the item, not on "
             "the day it was delivered."),
        pick(rng,
             f"Rewards. Members collect {plural(s.points, 'point')} for every {m.sym}1 spent. Each "
             f"{s.block} points can be swapped for {m.fmt(s.block_val)} off a later order, and "
             "points expire after 18 months without a purchase.",
             f"Our rewards club is free to join. You earn {plural(s.points, 'point')} per {m.sym}1, "
             f"and every {s.block} points turn into a {m.fmt(s.block_val)} voucher at checkout."),
        pick(rng,
             f"International orders. We post to most of Europe, North America and Oceania for a "
             f"flat {m.fmt(s.intl)}. Import duty, where it applies, is collected by the courier.",
             f"Shipping abroad costs {m.fmt(s.intl)} whatever the size of the parcel, and tracking "
             "is included on every international order."),
        f"Opening hours. Our team answers chat and phone from {s.hours[0]} to {s.hours[1]}, "
        f"Monday to Saturday.",
    ]
    keep = sorted(rng.sample(range(len(paras)), rng.randint(4, 6)))
    lines = [title]
    for k in keep:
        lines += ["", paras[k]]
    return lines


def h_qa(rng, s: Shop) -> list[str]:
    m = s.m
    name, lo, hi = product(rng)
    p = m.rand(rng, lo, hi)
    spend = m.rand(rng, 15, 400)
    basket = m.rand(rng, 10, m.to_usd(s.free) * 0.9)
    pairs = [
        (f"Q: I have {m.fmt(basket)} in my basket. What would standard delivery add?",
         f"A: It adds {m.fmt(s.std)}, bringing the total to {m.fmt(basket + s.std)}. Spend another "
         f"{m.fmt(s.free - basket)} and delivery drops to zero."),
        (f"Q: If I send back the {name}, which cost {m.fmt(p)}, how much reaches my card?",
         f"A: {m.fmt(p - s.label)}, which is the price less the {m.fmt(s.label)} label, provided it "
         f"comes back unused within {s.ret} days."),
        (f"Q: I spend {m.fmt(spend)} as a member. How many points is that?",
         f"A: Points are counted on whole units of currency, so {m.fmt(spend)} earns "
         f"{s.points * (spend // 100)} points."),
        (f"Q: Does express still arrive on time if I order at {s.cutoff + 2}:30?",
         f"A: No. The cut-off is {s.cutoff}:00, so an order at {s.cutoff + 2}:30 leaves a day later "
         f"and needs {s.exp_days + 1} working days."),
    ]
    rng.shuffle(pairs)
    lines = []
    for q, a in pairs[:2]:
        lines += [q, a, ""]
    return lines[:-1]


def h_late(rng, s: Shop) -> list[str]:
    cust, agent = rng.choice(FIRST_NAMES), rng.choice(AGENT_NAMES)
    name, _, _ = product(rng)
    oid = order_id(rng)
    carrier = rng.choice(CARRIERS[:7])
    d = rand_date(rng, weekday=True)
    sent = add_bdays(d, rng.randint(0, 1))
    due = add_bdays(sent, s.std_days[1])
    trk = tracking(rng, carrier)
    opening = pick(rng,
                   f"Customer: Hello, I'm {cust}. I ordered the {name} on {fmt_date(d, 'wdm')} and "
                   f"it still hasn't turned up. The order number is {oid}.",
                   f"Customer: Hi, {cust} here. Order {oid}, the {name}, was placed on "
                   f"{fmt_date(d, 'wdm')} and there's no sign of it yet.")
    return [
        opening,
        f"Agent: Thanks, {cust}, this is {agent}. Order {oid} was handed to {carrier} on "
        f"{fmt_date(sent, 'wdm')}, and the tracking reference is {trk}.",
        pick(rng, "Customer: So when should I actually expect it?",
             "Customer: What's the latest it could arrive?"),
        f"Agent: Standard delivery is {s.std_days[0]} to {s.std_days[1]} working days from dispatch, "
        f"which puts the latest date at {fmt_date(due, 'wdm')}. If nothing has come by then, "
        "message us and we'll send a replacement straight away.",
        pick(rng, "Customer: That works. Thank you.", "Customer: Great, I'll keep an eye out."),
    ]


def h_damaged(rng, s: Shop) -> list[str]:
    m = s.m
    cust = rng.choice(FIRST_NAMES)
    apparel = rng.random() < 0.25
    name, lo, hi = product(rng, apparel=apparel)
    p = m.rand(rng, lo, hi)
    oid = order_id(rng)
    flaw = rng.choice(["a torn seam", "a pulled thread", "a small hole near the hem"] if apparel
                      else ["a cracked corner", "a dent in the side", "a chipped edge",
                            "a deep scratch across the top"])
    return [
        f"Customer: This is {cust}. My {name} came with {flaw}. I paid {m.fmt(p)} for it on "
        f"order {oid}.",
        pick(rng, "Agent: I'm really sorry about that. Could you send a photo of the damage and of the box?",
             "Agent: Oh no, that's not how it should arrive. Can you upload a picture or two for me?"),
        "Customer: Done, I've just uploaded two pictures.",
        f"Agent: Thank you, {cust}. Because it arrived damaged, the return label is free and you'll "
        f"get the full {m.fmt(p)} back rather than the price minus the usual {m.fmt(s.label)} fee. "
        f"Once our warehouse scans it, the refund goes out within {plural(s.check, 'working day')}.",
        "Customer: Could I have a replacement instead of the money?",
        "Agent: Of course. I've reserved one for you, and it will ship as soon as the damaged one is "
        "on its way back to us.",
    ]


def h_promo(rng, s: Shop) -> list[str]:
    m = s.m
    off = rng.choice([10, 15, 20, 25])
    code = rng.choice(["HELLO", "FRESH", "BONUS", "WINTER", "GIFT", "TREAT"]) + str(off)
    minimum = m.whole(rng, 60, 150, 10)
    basket = m.rand(rng, 20, m.to_usd(minimum) * 0.9)
    gap = minimum - basket
    later = basket + gap + m.rand(rng, 1, 15)
    return [
        pick(rng, f"Customer: The code {code} keeps saying it isn't valid. My basket is {m.fmt(basket)}.",
             f"Customer: Why won't {code} work? I've got {m.fmt(basket)} of things in my basket."),
        f"Agent: {code} gives {off}% off, but only on baskets of {m.fmt(minimum)} or more. You're "
        f"{m.fmt(gap)} short at the moment.",
        f"Customer: Okay, if I add a few things and reach {m.fmt(later)}, what would I pay?",
        f"Agent: {off}% of {m.fmt(later)} is {m.fmt(m.pct(later, off))}, so you'd pay "
        f"{m.fmt(later - m.pct(later, off))}"
        + (", and delivery would be free as well." if later > s.free else
           f", plus {m.fmt(s.std)} for delivery."),
    ]


def h_subscription(rng, s: Shop) -> list[str]:
    m = s.m
    item = rng.choice(["coffee beans", "filter cartridges", "pet food", "razor blades",
                       "loose-leaf tea", "vitamin packs", "dishwasher tablets"])
    price = m.rand(rng, 12, 45)
    d = rand_date(rng)
    weeks = rng.choice([2, 4, 6, 8])
    nxt = d + dt.timedelta(weeks=weeks)
    skip = nxt + dt.timedelta(weeks=weeks)
    return [
        f"Customer: I get {item} from you every {weeks} weeks at {m.fmt(price)}. The last box came "
        f"on {fmt_date(d, 'dm')}. Can I skip the next one?",
        f"Agent: Yes. Your next box was due on {fmt_date(nxt, 'dm')}. I've skipped it, so the "
        f"following delivery will be on {fmt_date(skip, 'dm')} and you won't be charged until then.",
        "Customer: And the price stays the same?",
        f"Agent: It does. You'll be billed {m.fmt(price)} two days before each delivery, and you can "
        "pause or cancel at any time from the Subscriptions page.",
    ]


def h_repair(rng, s: Shop) -> list[str]:
    name, _, _ = product(rng, electric=True)
    d = rand_date(rng)
    today = d + dt.timedelta(days=rng.randint(60, 1100))
    end = d.replace(year=d.year + s.warranty)
    fault = rng.choice(["has started grinding", "keeps switching itself off",
                        "won't charge any more", "makes a loud rattling noise"])
    lines = [
        f"Customer: My {name} {fault}. I bought it on {fmt_date(d, 'mdy')}. Is that still under "
        "guarantee?",
    ]
    if today <= end:
        lines += [
            f"Agent: It is. Your {s.warranty}-year guarantee lasts until {fmt_date(end, 'mdy')}, "
            f"so as of today, {fmt_date(today, 'md')}, you still have {plural((end - today).days, 'day')} "
            "of cover. I'll book a collection, and the repair costs you nothing.",
            "Customer: How long will I be without it?",
            "Agent: Repairs usually take about ten days door to door, and we'll email you at each step.",
        ]
    else:
        lines += [
            f"Agent: I'm afraid the {s.warranty}-year guarantee finished on {fmt_date(end, 'mdy')}. "
            "Our repair partner can still look at it for a fixed inspection fee, which is deducted "
            "if you go ahead with the repair.",
            "Customer: Fine, please send me the details.",
        ]
    return lines


def h_bulk(rng, s: Shop) -> list[str]:
    m = s.m
    name, lo, hi = product(rng, cheap=True)
    unit = m.rand(rng, lo, min(hi, lo * 2))
    qty = rng.choice([12, 20, 25, 30, 40, 50, 60, 80, 100])
    tier = 10 if qty < 50 else 15
    gross = qty * unit
    disc = m.pct(gross, tier)
    why = rng.choice(["as end-of-year gifts for our staff", "for a charity raffle",
                      "for our new holiday cottages", "for a team event"])
    return [
        f"Customer: We need {qty} of the {name} {why}. Do you do a volume price?",
        f"Agent: We do. Orders of 20 to 49 units get 10% off and 50 or more get 15% off. At "
        f"{m.fmt(unit)} each, {qty} units come to {m.fmt(gross)} before the discount.",
        "Customer: And after it?",
        f"Agent: With {tier}% off you save {m.fmt(disc)}, so the order total is "
        f"{m.fmt(gross - disc)}, and delivery is included."
        if qty >= 20 else
        f"Agent: At {qty} units you're just under the 20-unit tier, so the price stays at "
        f"{m.fmt(gross)}. Adding {20 - qty} more would unlock the 10% discount.",
    ]


def h_split(rng, s: Shop) -> list[str]:
    (n1, _, _), (n2, _, _) = two_products(rng)
    oid = order_id(rng)
    carrier = rng.choice(CARRIERS[:7])
    d = rand_date(rng, weekday=True)
    later = add_bdays(d, rng.randint(2, 5))
    return [
        f"Customer: Order {oid} arrived on {fmt_date(d, 'wdm')}, but only the {n1} was inside. "
        f"Where is the {n2}?",
        f"Agent: The {n2} is coming from our second warehouse, so it travels in its own parcel. "
        f"It is with {carrier} now and should be with you by {fmt_date(later, 'wdm')}.",
        "Customer: Will I pay delivery twice?",
        "Agent: No, you paid once for the whole order. Splitting the parcels was our choice, so the "
        "second delivery is free.",
    ]


def h_international(rng, s: Shop) -> list[str]:
    m = s.m
    country = rng.choice(COUNTRIES)
    name, lo, hi = product(rng)
    p = m.rand(rng, lo, hi)
    duty = rng.choice([0, 5, 10, 12])
    lines = [
        f"Customer: I live in {country}. What would it cost to get the {name} sent over?",
        f"Agent: International delivery is a flat {m.fmt(s.intl)}, so the {m.fmt(p)} item comes to "
        f"{m.fmt(p + s.intl)} at checkout.",
        "Customer: Are there import charges on top?",
    ]
    if duty:
        lines.append(f"Agent: Possibly. Customs in {country} may add about {duty}% of the item "
                     f"value, roughly {m.fmt(m.pct(p, duty))} here, which the courier collects on "
                     "delivery.")
    else:
        lines.append(f"Agent: Not for {country}; duties are already included in the price you see.")
    return lines


def h_wrong_item(rng, s: Shop) -> list[str]:
    name, _, _ = product(rng)
    got = rng.choice([c for c in COLLECTIONS if c != name.split()[0]])
    oid = order_id(rng)
    d = rand_date(rng, weekday=True)
    return [
        f"Customer: I ordered the {name} but the box has the {got} version in it. Order {oid}.",
        f"Agent: Apologies for the mix-up. I've sent the right one today by express at no charge, so "
        f"it should reach you by {fmt_date(add_bdays(d, s.exp_days), 'wdm')}.",
        f"Customer: What do I do with the {got} one?",
        f"Agent: A courier will collect it when the new parcel arrives; please keep it in the "
        "original packaging until then.",
    ]


def h_price_drop(rng, s: Shop) -> list[str]:
    m = s.m
    name, lo, hi = product(rng)
    paid = m.rand(rng, lo, hi, rounded=True)
    drop = m.pct(paid, rng.choice([10, 15, 20, 30]))
    days = rng.randint(2, 20)
    window = 14
    lines = [
        f"Customer: {plural(days, 'day')} ago I bought the {name} for {m.fmt(paid)}, and now it's "
        f"down to {m.fmt(paid - drop)}. Can I get the difference back?",
    ]
    if days <= window:
        lines.append(f"Agent: Yes. Price drops within {window} days of purchase are refunded, so "
                     f"I've returned {m.fmt(drop)} to your card.")
    else:
        lines.append(f"Agent: Sorry, our price protection only lasts {window} days and your order is "
                     f"{days} days old, so the {m.fmt(drop)} difference can't be refunded.")
    return lines


def h_giftcard(rng, s: Shop) -> list[str]:
    m = s.m
    bal = m.whole(rng, 20, 150, 10)
    name, lo, hi = product(rng)
    p = m.rand(rng, lo, hi)
    lines = [
        f"Customer: My gift card has {m.fmt(bal)} on it. I'd like the {name}, which is {m.fmt(p)}.",
    ]
    if p > bal:
        lines.append(f"Agent: The card will cover {m.fmt(bal)}, leaving {m.fmt(p - bal)} to pay by "
                     "card or PayPal in the same checkout.")
    else:
        lines.append(f"Agent: The gift card pays for it in full and keeps {m.fmt(bal - p)} for "
                     "another time.")
    return lines


DIALOGUES = [h_late, h_damaged, h_promo, h_subscription, h_repair, h_bulk, h_split,
             h_international, h_wrong_item, h_price_drop, h_giftcard]


def hz_section(rng) -> list[str]:
    shop = rng.choice(ZH_SHOPS)
    m = Money("CNY")
    name, lo, hi = zh_product(rng)
    p = cny(rng, lo, hi)
    thr = rng.choice([59, 88, 99, 129]) * 100
    ret = rng.choice([7, 15])
    d = rand_date(rng)
    carrier = rng.choice(ZH_CARRIERS)
    n = rng.randint(2, 5)
    oid = order_id(rng)
    arrive = d + dt.timedelta(days=n)
    faq = pick(rng,
               f"配送：订单满{m.fmt(thr)}免运费，一般48小时内发货，{carrier}配送{n}天左右到达。"
               f"退换：签收后{ret}天内可申请退换，商品需保持完好。",
               f"本店商品满{m.fmt(thr)}包邮，默认使用{carrier}，下单后48小时内发出。"
               f"支持签收后{ret}天无理由退换，吊牌和包装请保留。")
    return [
        pick(rng, f"{shop}常见问题", f"{shop}购物须知"),
        "",
        faq,
        "",
        f"顾客：你好，我的订单{oid}买了{name}，{zh_date(d, year=False)}发的货，现在到哪了？",
        f"客服：您好，订单{oid}由{carrier}承运，预计{zh_date(arrive, year=False)}送达，请留意取件短信。",
        f"顾客：如果不合适，{m.fmt(p)}能全额退吗？",
        f"客服：可以，签收后{ret}天内退回且不影响二次销售，{m.fmt(p)}会原路退回到您的支付账户。",
    ]


def gen_heldout() -> str:
    rng = Random(HELDOUT_SEED)
    shops = list(SHOPS)
    rng.shuffle(shops)
    blocks: list[list[str]] = []
    size = 0
    i = 0
    while size < HELDOUT_MIN_BYTES:
        s = Shop(rng, shops[i % len(shops)])
        section = h_faq(rng, s) + [""] + h_qa(rng, s)
        dlg = list(DIALOGUES)
        rng.shuffle(dlg)
        for f in dlg[:3]:
            section += [""] + f(rng, s)
        blocks.append(section)
        if i % 2 == 1:
            blocks.append(hz_section(rng))
        i += 1
        size = len(("\n\n".join("\n".join(b) for b in blocks)).encode("utf-8"))
    return "\n\n".join("\n".join(b) for b in blocks) + "\n"


# ----------------------------------------------------------------------------------------------


def jsonl(rows) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent,
                    help="output folder (default: the folder of this script)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    probes = gen_probes()
    calib = gen_calib()
    heldout = gen_heldout()

    answers = {c["answer"] for c in calib}
    for line in heldout.splitlines():
        assert line not in answers, line
    for c in calib:  # tests/python/test_quant_data.py checks sentences and the other files
        assert c["answer"] not in heldout and c["prompt"] not in heldout, c

    for name, text in [(PROBES_FILE, jsonl(probes)), (CALIB_FILE, jsonl(calib)),
                       (HELDOUT_FILE, heldout)]:
        (args.out / name).write_bytes(text.encode("utf-8"))
    print(f"{len(probes)} probes, {len(calib)} calibration lines, "
          f"{len(heldout.encode('utf-8'))} bytes of held-out text -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
