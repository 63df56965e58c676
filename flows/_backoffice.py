"""A stand-in back office for the ready-made flows: orders, help-center articles, a ledger.

Everything here is deterministic (an order's details follow from its id), so a flow reads
the same facts on every replay and tests can assert on them. The ledger records side
effects (refunds, escalations, pages) so a test can prove each ran exactly once.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

from pydantic import BaseModel

__all__ = [
    "ARTICLES",
    "LEDGER",
    "Article",
    "Order",
    "find_order",
    "record",
    "search_articles",
]

OrderState = Literal["processing", "shipped", "delivered", "returned", "lost"]
_STATES: tuple[OrderState, ...] = ("processing", "shipped", "delivered", "delivered", "lost")
_CARRIERS = ("DHL", "UPS", "FedEx", "La Poste", "PostNL")


class Order(BaseModel):
    """One order as the order system knows it."""

    order_id: str
    state: OrderState
    total: float
    carrier: str
    days_since_order: int
    refunded: float = 0.0


class Article(BaseModel):
    """One help-center article."""

    slug: str
    title: str
    summary: str
    keywords: tuple[str, ...]


ARTICLES: tuple[Article, ...] = (
    Article(
        slug="refund-policy",
        title="Refunds and returns",
        summary="Damaged, wrong or missing items are refunded in full within 30 days.",
        keywords=("refund", "money back", "return", "damaged", "broken", "wrong"),
    ),
    Article(
        slug="late-delivery",
        title="Where is my parcel?",
        summary="Parcels not delivered 10 days after shipping are reported lost and refunded.",
        keywords=("late", "where", "tracking", "delivery", "parcel", "lost", "arrived"),
    ),
    Article(
        slug="change-email",
        title="Change the email on your account",
        summary="Settings > Account > Email; a confirmation link goes to the new address.",
        keywords=("email", "account", "login", "password", "sign in"),
    ),
    Article(
        slug="double-charge",
        title="Charged twice",
        summary="A second authorisation drops off within 5 days; a second capture is refunded.",
        keywords=("charged twice", "double", "charge", "invoice", "billing", "card"),
    ),
    Article(
        slug="app-crash",
        title="The app crashes or will not load",
        summary="Update the app, clear its cache, then reinstall; report the version if not.",
        keywords=("crash", "error", "bug", "app", "load", "freeze"),
    ),
)

#: Side effects of the flows' steps, in the order they happened.
LEDGER: list[dict[str, Any]] = []


def record(kind: str, **data: Any) -> dict[str, Any]:
    """Record a side effect in the ledger and return the entry."""
    entry = {"kind": kind, **data}
    LEDGER.append(entry)
    return entry


def _digest(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def find_order(order_id: str) -> Order | None:
    """Return the order with this id, or ``None`` when the id is not an order number.

    Any id of the form ``A-`` followed by digits is an order; its details follow from it.
    """
    order_id = order_id.strip().lstrip("#").upper()
    if not order_id.startswith("A-") or not order_id[2:].isdigit():
        return None
    h = _digest(order_id)
    return Order(
        order_id=order_id,
        state=_STATES[h % len(_STATES)],
        total=round(15 + (h >> 8) % 48500 / 100, 2),
        carrier=_CARRIERS[(h >> 24) % len(_CARRIERS)],
        days_since_order=1 + (h >> 32) % 40,
    )


def search_articles(query: str, limit: int = 2) -> list[Article]:
    """Return the help-center articles whose keywords best match ``query``."""
    text = query.lower()
    scored = [(sum(k in text for k in a.keywords), i, a) for i, a in enumerate(ARTICLES)]
    hits = sorted((s for s in scored if s[0] > 0), key=lambda s: (-s[0], s[1]))
    return [a for _, _, a in hits[:limit]]
