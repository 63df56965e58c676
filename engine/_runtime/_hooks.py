"""The one seam through which every model call, decision and step is carried out.

The runtime never calls a model, settles a decision or runs a picked step directly: it asks
the ambient :class:`Hooks`. The default hooks simply do the work. A durable run installs
hooks that journal each reply, pick and step result under the node's deterministic key,
and replay them on resume instead of doing the work again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from engine._base import WaitingForAnswer

if TYPE_CHECKING:
    from engine._base import Node
    from engine._decision import Menu, Pick
    from engine._runtime._questions import Approval, HumanAsk, Question
    from engine.models import Model, Request, Response

__all__ = ["Hooks", "current_hooks"]


class Hooks:
    """Carry out model calls, decisions and steps; subclasses journal and replay them.

    The runtime skips a method that a subclass leaves as it is here (it only passes the
    work through), so the plain hooks cost nothing on the hot path.
    """

    #: Whether :meth:`model_call`, :meth:`decision` and :meth:`step` only pass through
    #: (set per class from which of them it overrides).
    passes_model_call = True
    passes_decision = True
    passes_step = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.passes_model_call = cls.model_call is Hooks.model_call
        cls.passes_decision = cls.decision is Hooks.decision
        cls.passes_step = cls.step is Hooks.step

    def live_model(self, model: Model) -> Model:
        """Return the model that answers ``model``'s live calls (a resume may name another).

        A decision asks this model how it constrains a pick, so the mode is always that of
        the model that answers.
        """
        return model

    async def model_call(
        self,
        node: Node,
        model: Model,
        request: Request,
        call: Callable[[Model, Request], Awaitable[Response]],
    ) -> Response:
        """Answer one model request (``call`` does the live call, transport retries included)."""
        return await call(model, request)

    async def decision(
        self,
        node: Node,
        menu: Menu,
        request: Request,
        decide: Callable[[Request], Awaitable[Pick]],
    ) -> Pick:
        """Settle one decision (``decide`` asks the model, re-picks included)."""
        return await decide(request)

    async def step(
        self, node: Node, fn: object, run: Callable[[], Awaitable[Any]], returns: object
    ) -> Any:
        """Run one picked function option (``returns`` is its return annotation)."""
        return await run()

    async def human(
        self,
        node: Node,
        menu: Menu,
        request: Request,
        ask: HumanAsk,
        asked: Question,
        decide: Callable[[Request], Awaitable[Pick]],
    ) -> Pick:
        """Settle a human decision (``asked`` is its question; ``decide`` asks the model).

        Outside a run no one can answer later: the question is raised to the caller.
        """
        raise WaitingForAnswer([asked])

    async def approval(self, node: Node, menu: Menu, pick: Pick, asked: Question) -> Approval:
        """Return a person's answer to the approval of ``pick`` (``asked`` is the question).

        Outside a run no one can answer later: the question is raised to the caller.
        """
        raise WaitingForAnswer([asked])


current_hooks: ContextVar[Hooks] = ContextVar("engine_hooks", default=Hooks())  # noqa: B039
