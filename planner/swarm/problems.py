"""Which problems a run works on: the filter applied to the problem folders and the bundled catalogue."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from solforge.problems import CATALOGUE_DIR

from .config import ProblemFilter

__all__ = ["ProblemRef", "resolve_problems"]


@dataclass(frozen=True)
class ProblemRef:
    """A problem a run may work on."""

    name: str
    ref: str
    """What a job request names: the catalogue name, or the folder's absolute path."""
    category: str | None
    op_type: str | None
    model: str | None


def _roots(flt: ProblemFilter) -> list[tuple[Path, bool]]:
    roots = [(Path(d).expanduser().resolve(), False) for d in flt.problem_dirs]
    if not flt.only_problem_dirs:
        roots.append((CATALOGUE_DIR.resolve(), True))
    return roots


def resolve_problems(flt: ProblemFilter) -> list[ProblemRef]:
    """The problems matching ``flt``, first folder first when a name appears twice, sorted by name.

    Raises
    ------
    ValueError
        When nothing matches, or a named problem does not exist (the message lists what does).
    """
    found: dict[str, ProblemRef] = {}
    for root, is_catalogue in _roots(flt):
        if not root.is_dir():
            raise ValueError(f"problem folder {root} does not exist")
        for folder in sorted(p for p in root.iterdir() if (p / "definition.json").is_file()):
            try:
                data = json.loads((folder / "definition.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            name = data.get("name") or folder.name
            if name in found:
                continue
            found[name] = ProblemRef(
                name=name,
                ref=name if is_catalogue and folder.name == name else str(folder),
                category=data.get("category"),
                op_type=data.get("op_type"),
                model=data.get("hf_id"),
            )
    missing = [n for n in flt.names if n not in found]
    if missing:
        raise ValueError(f"no problems named {missing}; known: {sorted(found)[:20]}")

    def keep(p: ProblemRef) -> bool:
        if flt.names and p.name not in flt.names:
            return False
        if flt.categories and p.category not in flt.categories:
            return False
        if flt.op_types and p.op_type not in flt.op_types:
            return False
        return not flt.models or any(m.lower() in (p.model or "").lower() for m in flt.models)

    chosen = sorted((p for p in found.values() if keep(p)), key=lambda p: p.name)
    if not chosen:
        raise ValueError(f"no problem matches the filter {flt.model_dump(exclude_defaults=True)}")
    return chosen


def server_problem_env(flt: ProblemFilter) -> dict[str, str]:
    """The environment that makes ``solforge serve`` see the same problems."""
    env: dict[str, str] = {}
    if flt.problem_dirs:
        env["SOLFORGE_PROBLEM_DIRS"] = os.pathsep.join(
            str(Path(d).expanduser().resolve()) for d in flt.problem_dirs
        )
    if flt.only_problem_dirs:
        env["SOLFORGE_ONLY_PROBLEM_DIRS"] = "1"
    return env
