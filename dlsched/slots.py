"""Fast construction of frozen, slotted dataclasses made by the 10^5-10^6 (specs, records).

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` (a global
lookup and a call with the field's name per field); ``slot_builder`` writes the same
``__init__`` over the slots' own descriptors, as ``dataclasses`` writes its code: 2-3x faster.
It skips ``__post_init__``: use it only for a class without one, or where the caller has
already made the checks the class would (``JobSpec``'s ``plain_spec``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import MISSING, fields
from typing import Any, TypeVar

T = TypeVar("T")


def slot_builder(cls: type[T], params: Sequence[str] | None = None) -> Callable[..., T]:
    """A function taking ``params`` (default: every field, in order, with the dataclass's
    defaults) positionally that returns the instance ``cls(**those)`` would, without calling
    ``__init__`` or ``__post_init__``. Every other field takes its default."""
    every = fields(cls)  # type: ignore[arg-type]
    names = [f.name for f in every] if params is None else list(params)
    scope: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    signature, body = [], []
    for index, spec in enumerate(every):
        if spec.default_factory is not MISSING:  # type: ignore[misc]
            raise TypeError(f"{cls.__name__}.{spec.name}: a default factory is not supported")
        scope[f"_set{index}"] = getattr(cls, spec.name).__set__
        if spec.name in names:
            value = spec.name
        elif spec.default is MISSING:
            raise TypeError(f"{cls.__name__}.{spec.name} has no default: pass it")
        else:
            scope[f"_default{index}"] = spec.default
            value = f"_default{index}"
        body.append(f"    _set{index}(obj, {value})")
    for name in names:
        spec = next(f for f in every if f.name == name)
        if params is None and spec.default is not MISSING:
            scope[f"_arg_{name}"] = spec.default
            signature.append(f"{name}=_arg_{name}")
        else:
            signature.append(name)
    source = "\n".join([f"def build({', '.join(signature)}):", "    obj = _new(_cls)", *body,
                        "    return obj"])
    exec(source, scope)  # noqa: S102 (our own text, as dataclasses writes __init__)
    return scope["build"]
