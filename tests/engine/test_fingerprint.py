"""A request's journal fingerprint is one fixed function of what it asks.

Old journals replay only while it stays so: the fingerprint is checked here against its
definition (role and text of each message, the tools' names, the choices' names, hashed), for
any messages, blocks, tools and choices, and for requests that differ only in settings.
"""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from engine._run._records import request_fingerprint
from engine.models import ChoiceSpec, ImageBlock, Message, Request, TextBlock, ToolSpec

_text = st.text(max_size=40)  # any code points, lone surrogates included
_block = st.one_of(
    st.builds(TextBlock, text=_text), st.builds(ImageBlock, url=st.just("https://x.test/a.png"))
)
_message = st.builds(
    Message,
    role=st.sampled_from(["system", "user", "assistant", "tool"]),
    content=st.lists(_block, max_size=3),
)
_names = st.lists(st.text(alphabet="abcdefgh_", min_size=1, max_size=8), max_size=3)


def _defined(request: Request) -> str:
    parts = [
        f"{m.role}\x1f{''.join(b.text for b in m.content if isinstance(b, TextBlock))}"
        for m in request.messages
    ]
    parts.append("\x1f".join(t.name for t in request.tools or ()))
    parts.append("\x1f".join(c.name for c in request.choices or ()))
    text = "\x1e".join(parts).encode(errors="surrogatepass")
    return hashlib.blake2b(text, digest_size=8).hexdigest()


@given(
    messages=st.lists(_message, min_size=1, max_size=4),
    tools=st.one_of(st.none(), _names),
    choices=st.one_of(st.none(), _names),
)
def test_fingerprint_is_its_definition(
    messages: list[Message], tools: list[str] | None, choices: list[str] | None
) -> None:
    request = Request(
        messages=messages,
        tools=None if tools is None else [ToolSpec(name=n) for n in tools],
        choices=None if choices is None else [ChoiceSpec(name=n) for n in choices],
    )
    assert request_fingerprint(request) == _defined(request)
    assert request_fingerprint(request.model_copy(update={"max_tokens": 7})) == _defined(request)


def test_a_known_fingerprint_stays() -> None:
    # Journals written before this test replay against this very value.
    request = Request(messages=[Message.of("user", "Pick one.\n\n- a\n- b")])
    assert request_fingerprint(request) == _defined(request) == "37f28dd1ce013789"
