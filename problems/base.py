"""The shared base of every file format model."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, StringConstraints

NonEmptyStr = Annotated[str, StringConstraints(min_length=1)]


class FormatModel(BaseModel):
    """Base of the on-disk formats.

    Unknown keys are kept (``extra="allow"``) so that a file written by SOL-ExecBench or
    FlashInfer-Bench with fields solforge does not know survives a read and a write unchanged.
    """

    model_config = ConfigDict(use_attribute_docstrings=True, extra="allow", populate_by_name=True)

    def to_json_dict(self) -> dict:
        """The JSON-ready dict as the file stores it (defaults kept, unknown keys kept)."""
        return self.model_dump(mode="json", by_alias=True)
