"""The catalogue: which template runs on which model.

One line per problem, split by family so the lists stay readable: :mod:`.catalogue_llm` (language
models) and :mod:`.catalogue_media` (diffusion, vision, audio, video, multimodal). To add a model,
add its :class:`~.models.ModelConfig` (to ``models.py``, ``models_llm.py`` or the media family's
``models_*.py``) and a line in one of those lists, then run ``python -m solforge.problems.generator``
to write the folders.
"""

from __future__ import annotations

from .catalogue_llm import LLM_ENTRIES, LLM_MODELS
from .catalogue_media import MEDIA_ENTRIES, MEDIA_MODELS
from .entry import Entry
from .models import MODELS as STARTER_MODELS
from .models import ModelConfig

ENTRIES: tuple[Entry, ...] = (*LLM_ENTRIES, *MEDIA_ENTRIES)


def _unique(models: tuple[ModelConfig, ...]) -> tuple[ModelConfig, ...]:
    seen: dict[str, ModelConfig] = {}
    for model in models:
        if model.key in seen and seen[model.key] != model:
            raise ValueError(f"two model configurations share the key {model.key!r}")
        seen.setdefault(model.key, model)
    return tuple(seen.values())


ALL_MODELS: tuple[ModelConfig, ...] = _unique((*STARTER_MODELS, *LLM_MODELS, *MEDIA_MODELS))
"""Every model the catalogue draws from."""
