"""Secrets kept out of what the engine writes: logs, stored errors, retry records.

Masked: values of secret-looking environment variables wherever they appear, the password
of a URL with credentials, and API-key and bearer-token shapes; in mappings, the values of
keys named like credentials.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, MutableMapping

__all__ = [
    "MASK",
    "env_secrets",
    "is_secret_key",
    "known_secrets",
    "mask_secrets",
    "mask_value",
    "remember_secret",
]

MASK = "***"
_SECRET_KEY = re.compile(
    r"(api[_-]?key|secret|password|passwd|authorization|credentials?|bearer|(^|_)token)$", re.I
)
_SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.I)
# Shapes of provider keys and bearer tokens, masked even when no variable names them.
_SECRET_SHAPES = re.compile(
    r"\b(sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}|Bearer\s+[A-Za-z0-9._\-]{16,})"
)
# The password of a URL with credentials (postgresql://user:password@host/db).
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.\-]*://[^:/@\s]*:)([^@\s]+)(@)", re.I)
# Environment values shorter than this are too likely to be ordinary words to mask.
_MIN_SECRET_LEN = 8


def env_secrets(environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Return the values of secret-looking environment variables, longest first."""
    env = os.environ if environ is None else environ
    values = {v for k, v in env.items() if _SECRET_ENV.search(k) and len(v) >= _MIN_SECRET_LEN}
    return sorted(values, key=len, reverse=True)


# Secrets handed to the engine directly (a model's api_key=), masked like the environment's.
_REMEMBERED: set[str] = set()


def remember_secret(value: str | None) -> None:
    """Mask ``value`` from now on wherever the engine writes (a key given as an argument)."""
    if value and len(value) >= _MIN_SECRET_LEN:
        _REMEMBERED.add(value)


def known_secrets() -> list[str]:
    """Return the secret values to mask: the environment's and those remembered, longest first."""
    return sorted({*env_secrets(), *_REMEMBERED}, key=len, reverse=True)


def mask_secrets(text: str) -> str:
    """Return ``text`` with anything that looks like a secret replaced by ``***``."""
    masked = mask_value(text, known_secrets())
    assert isinstance(masked, str)
    return masked


def mask_value(value: object, secrets: Iterable[str]) -> object:
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, MASK)
        value = _URL_PASSWORD.sub(rf"\1{MASK}\3", value)
        return _SECRET_SHAPES.sub(MASK, value)
    if isinstance(value, dict):
        return {k: MASK if is_secret_key(k) else mask_value(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [mask_value(v, secrets) for v in value]
    return value


def is_secret_key(key: object) -> bool:
    return isinstance(key, str) and bool(_SECRET_KEY.search(key))
