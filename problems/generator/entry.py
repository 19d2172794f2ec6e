"""One catalogue problem: a template applied to a model."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..load import Problem
from .models import ModelConfig


@dataclass(frozen=True)
class Entry:
    """A template applied to a model, with optional template options."""

    template: Callable[..., Problem]
    model: ModelConfig
    options: Mapping[str, Any] = field(default_factory=dict)

    def build(self) -> Problem:
        return self.template(self.model, **self.options)
