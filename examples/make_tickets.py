"""Generate the synthetic datasets in examples/data/ (seeded, so the output never changes).

- ``tickets.jsonl``: support tickets for ``flows.ticket_routing`` (600 by default): damaged,
  late, lost and wrong orders, double charges, refunds, login trouble, app crashes, praise,
  spam and vague messages, in several tones and channels, some with typos, some in French,
  German or Spanish, with line items where an order is involved.
- ``incidents.jsonl``: production alerts for ``flows.incident_triage`` (60 by default).

Run ``python examples/make_tickets.py`` to rewrite both files; ``--check`` exits 1 when
the committed files differ from what the script generates.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"
SEED = 20_240_601

PRODUCTS = [
    ("MUG-01", "ceramic mug", 12.0),
    ("TEA-07", "green tea (100 g)", 8.5),
    ("KTL-02", "electric kettle", 49.9),
    ("HDP-11", "wireless headphones", 129.0),
    ("CBL-03", "USB-C cable", 9.99),
    ("LMP-05", "desk lamp", 34.0),
    ("BAG-09", "canvas backpack", 59.0),
    ("BTL-04", "steel water bottle", 19.5),
    ("PLT-08", "dinner plate set", 42.0),
    ("CHR-12", "office chair", 189.0),
    ("KBD-06", "mechanical keyboard", 99.0),
    ("SOC-10", "wool socks (3 pairs)", 15.0),
]
FIRST = ["Ana", "Ben", "Chloé", "Dario", "Emma", "Farid", "Greta", "Hiro", "Ines", "Jonas"]
CHANNELS = ["email", "email", "chat", "web", "phone"]
OPENERS = {
    "polite": ["Hello,", "Hi there,", "Good morning,", "Dear support team,"],
    "angry": ["This is unacceptable.", "I am really fed up.", "Third time I write!", "Seriously?"],
    "terse": ["", "Hi.", "Quick one:"],
}
CLOSERS = {
    "polite": ["Thanks a lot, {name}", "Kind regards, {name}", "Thank you! {name}"],
    "angry": ["Fix this NOW. {name}", "I expect an answer today.", "Or I go to my bank. {name}"],
    "terse": ["{name}", "", "thx"],
}


def _items(rng: random.Random, n: int | None = None) -> list[dict[str, Any]]:
    chosen = rng.sample(PRODUCTS, n or rng.choice([1, 1, 2, 2, 3, 4]))
    return [
        {"sku": sku, "name": name, "quantity": rng.choice([1, 1, 1, 2, 3]), "price": price}
        for sku, name, price in chosen
    ]


def _order(rng: random.Random) -> str:
    return f"A-{rng.randrange(10_000, 99_999)}"


# Each kind of ticket writes (subject, body) from the order's items and number.
Kind = Callable[[random.Random, list[dict[str, Any]], str], tuple[str, str]]


def damaged(rng: random.Random, items: list[dict[str, Any]], order: str) -> tuple[str, str]:
    item = rng.choice(items)["name"]
    body = rng.choice(
        [
            f"Order {order} arrived today but the {item} is broken.",
            f"The {item} from order #{order} came cracked, the box was crushed.",
            f"my {item} was damaged in transit (order {order}), can I get a replacement or refund",
        ]
    )
    return f"Damaged {item}", body


def late(rng: random.Random, items: list[dict[str, Any]], order: str) -> tuple[str, str]:
    days = rng.randrange(5, 30)
    body = rng.choice(
        [
            f"I ordered {days} days ago (order {order}) and nothing has arrived.",
            f"Where is my parcel? Order {order}, tracking has not moved for {days} days.",
            f"Order {order} still says 'shipped' after {days} days. Is it lost?",
        ]
    )
    return "Where is my order?", body


def wrong_item(rng: random.Random, items: list[dict[str, Any]], order: str) -> tuple[str, str]:
    ordered = rng.choice(items)["name"]
    got = rng.choice([p[1] for p in PRODUCTS if p[1] != ordered])
    return "Wrong item", f"I ordered a {ordered} (order {order}) but received a {got}."


def missing(rng: random.Random, items: list[dict[str, Any]], order: str) -> tuple[str, str]:
    item = rng.choice(items)["name"]
    return "Item missing", f"The parcel for {order} came without the {item}. Rest is fine."


def double_charge(rng: random.Random, items: list[dict[str, Any]], order: str) -> tuple[str, str]:
    amount = sum(i["price"] * i["quantity"] for i in items)
    return "Charged twice", (
        f"My card was charged twice for order {order}: two payments of {amount:.2f} EUR."
    )


def refund_request(rng: random.Random, items: list[dict[str, Any]], order: str) -> tuple[str, str]:
    item = rng.choice(items)["name"]
    reason = rng.choice(["I changed my mind", "it is too small", "it does not work with my Mac"])
    return "Return and refund", f"I want to return the {item} from {order}, {reason}."


def login(rng: random.Random, items: list[dict[str, Any]], order: str) -> tuple[str, str]:
    body = rng.choice(
        [
            "I cannot log in, the password reset email never arrives.",
            "How do I change the email address on my account?",
            "My account is locked after too many attempts.",
            "Please delete my account and all my personal data.",
        ]
    )
    return "Account problem", body


def crash(rng: random.Random, items: list[dict[str, Any]], order: str) -> tuple[str, str]:
    version = f"{rng.randrange(3, 6)}.{rng.randrange(0, 12)}.{rng.randrange(0, 9)}"
    body = rng.choice(
        [
            f"The app (version {version}) crashes when I open my orders.",
            "Checkout page shows an error 500 when I click pay.",
            f"Android app {version} freezes on the login screen.",
        ]
    )
    return "App is broken", body


def praise(rng: random.Random, items: list[dict[str, Any]], order: str) -> tuple[str, str]:
    body = rng.choice(
        [
            "Just wanted to say the delivery was super fast, thanks!",
            "Your support agent Maria was fantastic yesterday.",
            "Love the new design of the website.",
            "Suggestion: please add a dark mode to the app.",
        ]
    )
    return "Feedback", body


def vague(rng: random.Random, items: list[dict[str, Any]], order: str) -> tuple[str, str]:
    body = rng.choice(
        ["It doesn't work.", "Call me back.", "Problem with my thing", "??", "help pls"]
    )
    return rng.choice(["Problem", "Help", "(no subject)"]), body


def spam(rng: random.Random, items: list[dict[str, Any]], order: str) -> tuple[str, str]:
    body = rng.choice(
        [
            "Boost your SEO ranking today!!! Click here.",
            "Congratulations, you won a free cruise. Reply with your bank details.",
        ]
    )
    return "Great offer", body


FOREIGN = [
    ("Colis endommagé", "Ma commande {order} est arrivée cassée. Je voudrais un remboursement."),
    ("Paket fehlt", "Meine Bestellung {order} ist nach zwei Wochen immer noch nicht da."),
    ("Cobro doble", "Me han cobrado dos veces el pedido {order}. ¿Pueden devolverme el dinero?"),
]

# (kind, weight, involves an order with line items)
KINDS: list[tuple[Kind, int, bool]] = [
    (damaged, 14, True),
    (late, 12, True),
    (wrong_item, 8, True),
    (missing, 7, True),
    (double_charge, 7, True),
    (refund_request, 9, True),
    (login, 11, False),
    (crash, 9, False),
    (praise, 8, False),
    (vague, 6, False),
    (spam, 3, False),
]


def _typos(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(rng.randrange(1, 4)):
        i = rng.randrange(1, max(2, len(chars) - 1))
        chars[i - 1], chars[i] = chars[i], chars[i - 1]
    return "".join(chars)


def ticket(rng: random.Random, index: int) -> dict[str, Any]:
    """Return one synthetic support ticket."""
    kind, _, with_order = rng.choices(KINDS, weights=[k[1] for k in KINDS])[0]
    items = _items(rng) if with_order else []
    order = _order(rng)
    subject, body = kind(rng, items, order)
    if with_order and rng.random() < 0.05:
        subject, template = rng.choice(FOREIGN)
        body = template.format(order=order)
    tone = rng.choice(["polite", "polite", "angry", "terse"])
    name = rng.choice(FIRST)
    text = " ".join(
        p
        for p in (
            rng.choice(OPENERS[tone]),
            body,
            rng.choice(CLOSERS[tone]).format(name=name),
        )
        if p
    )
    if rng.random() < 0.12:
        text = _typos(rng, text)
    record: dict[str, Any] = {
        "id": f"T-{index:05d}",
        "customer_id": f"C-{rng.randrange(1000, 9999)}",
        "channel": rng.choice(CHANNELS),
        "subject": subject,
        "body": text,
    }
    if with_order:
        # Some customers forget the order number in the form field (it is in the text).
        record["order_id"] = order if rng.random() < 0.85 else None
        record["line_items"] = items
    return record


SERVICES = [
    ("checkout-api", "checkout"),
    ("payments-gateway", "payments"),
    ("search-indexer", "search"),
    ("k8s-ingress", "platform"),
    ("orders-db", "platform"),
    ("nightly-etl", "data"),
    ("mobile-bff", "mobile"),
]
SYMPTOMS = [
    ("5xx spike", "returns 502/503 for a share of requests", 0.05, 0.6),
    ("latency regression", "p95 latency is far above its SLO", 0.0, 0.05),
    ("crash loop", "pods restart every few minutes (OOMKilled)", 0.02, 0.3),
    ("queue backlog", "consumer lag keeps growing", 0.0, 0.02),
    ("job failure", "the scheduled run failed twice", 0.0, 0.0),
    ("cert expiry", "the TLS certificate expires in 3 days", 0.0, 0.0),
]


def incident(rng: random.Random, index: int) -> dict[str, Any]:
    """Return one synthetic production incident."""
    service, _ = rng.choice(SERVICES)
    title, description, low, high = rng.choice(SYMPTOMS)
    error_rate = round(rng.uniform(low, high), 3)
    return {
        "id": f"INC-{index:04d}",
        "service": service,
        "title": f"{service}: {title}",
        "description": f"{service}: {description}.",
        "error_rate": error_rate,
        "p95_latency_ms": rng.randrange(80, 6000),
        "customers_affected": int(error_rate * rng.randrange(100, 20_000)),
        "recent_deploy": rng.random() < 0.4,
        "alerts": [f"{service} {title}"] + (["SLO burn rate > 10"] if error_rate > 0.1 else []),
    }


def generate(make: Callable[[random.Random, int], dict[str, Any]], n: int, seed: int) -> str:
    """Return ``n`` records, one JSON object a line."""
    rng = random.Random(seed)
    return "".join(json.dumps(make(rng, i + 1), ensure_ascii=False) + "\n" for i in range(n))


def main(argv: list[str] | None = None) -> int:
    """Write (or, with ``--check``, verify) the datasets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tickets", type=int, default=600)
    parser.add_argument("--incidents", type=int, default=60)
    parser.add_argument("--out", type=Path, default=DATA)
    parser.add_argument("--check", action="store_true", help="fail if the files would change")
    args = parser.parse_args(argv)
    files = {
        args.out / "tickets.jsonl": generate(ticket, args.tickets, SEED),
        args.out / "incidents.jsonl": generate(incident, args.incidents, SEED + 1),
    }
    if args.check:
        stale = [p for p, text in files.items() if not p.exists() or p.read_text("utf-8") != text]
        for path in stale:
            print(f"{path} is out of date; run python examples/make_tickets.py", file=sys.stderr)
        return 1 if stale else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {text.count(chr(10))} records to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
