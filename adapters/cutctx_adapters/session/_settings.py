"""A session's settings read as its own attributes (``session.window``), typed as the field."""

from __future__ import annotations

from typing import Any, Generic, Self, TypeVar, overload

__all__ = ["Setting"]

T = TypeVar("T")

class Setting(Generic[T]):
    """A read-only attribute holding the owner's ``settings`` field of the same name."""

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self._name = name

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Self: ...

    @overload
    def __get__(self, obj: object, owner: type[Any]) -> T: ...

    def __get__(self, obj: object | None, owner: type[Any]) -> Self | T:
        if obj is None:
            return self
        value: T = getattr(obj.settings, self._name)  # type: ignore[attr-defined]
        return value

    def __set__(self, obj: object, value: T) -> None:
        raise AttributeError(f"{self._name} is a setting: make a new session with "
                             "settings.replace(...) to change it")
