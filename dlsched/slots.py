"""Fast construction of frozen, slotted dataclasses made by the 10^5-10^6 (specs, records).

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` (a global
lookup and a call with the field's name per field). ``slot_builder`` writes the same
``__init__`` as ``dataclasses`` writes its code, over a twin class: the same slots in the same
order, without the frozen ``__setattr__``, so each field is a plain slot store (the
interpreter's specialized one); the finished instance is then given the class itself
(``__class__`` assignment, which CPython allows between classes of the same slots, or of none:
a class without slots keeps its fields in the instance's dict, as its ``__init__`` would).
Where the class's layout does not allow it, the fields are set through the slots' own descriptors (a
call each: a ``Start`` of four fields cost ~4,200 instructions that way, ~1,700 the twin's,
issue 14). It skips ``__post_init__``: use it only for a class without one, or where the
caller has already made the checks the class would (``JobSpec``'s ``plain_spec``).
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
    twin = _twin_of(cls, [f.name for f in every])
    scope: dict[str, Any] = {"_new": object.__new__, "_cls": cls, "_twin": twin}
    signature, body = [], []
    for index, spec in enumerate(every):
        if spec.default_factory is not MISSING and (  # type: ignore[misc]
                params is None or spec.name not in names):  # (passed: no default asked)
            raise TypeError(f"{cls.__name__}.{spec.name}: a default factory is not supported")
        if twin is None:
            scope[f"_set{index}"] = getattr(cls, spec.name).__set__
        if spec.name in names:
            value = spec.name
        elif spec.default is MISSING:
            raise TypeError(f"{cls.__name__}.{spec.name} has no default: pass it")
        else:
            scope[f"_default{index}"] = spec.default
            value = f"_default{index}"
        body.append(f"    obj.{spec.name} = {value}" if twin is not None
                    else f"    _set{index}(obj, {value})")
    if twin is not None:
        body.append("    obj.__class__ = _cls")
    for name in names:
        spec = next(f for f in every if f.name == name)
        if params is None and spec.default is not MISSING:
            scope[f"_arg_{name}"] = spec.default
            signature.append(f"{name}=_arg_{name}")
        else:
            signature.append(name)
    first = "    obj = _new(_cls)" if twin is None else "    obj = _new(_twin)"
    source = "\n".join([f"def build({', '.join(signature)}):", first, *body, "    return obj"])
    exec(source, scope)  # noqa: S102 (our own text, as dataclasses writes __init__)
    return scope["build"]


def _twin_of(cls: type, names: list[str]) -> type | None:
    """A class of ``cls``'s slots (its fields, in order) and nothing else, or of no slots
    where ``cls`` has none (its fields in the instance's dict), whose instances may become
    ``cls``'s (tried once here); None where ``cls`` has other bases, other slots or a layout
    such an assignment refuses."""
    slots = cls.__dict__.get("__slots__")
    if cls.__bases__ != (object,) or (slots is not None and list(slots) != names):
        return None
    twin = type(f"_{cls.__name__}Twin", (), {} if slots is None else {"__slots__": tuple(slots)})
    try:
        probe = object.__new__(twin)
        probe.__class__ = cls
    except TypeError:
        return None
    return twin
