"""`GgufExportConfig`: how `loopfix patch apply` stores the touched tensors of a GGUF model."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["GgufExportConfig", "GgufType"]

GgufType = Literal["same", "f16", "q8_0"]


class GgufExportConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    gguf_type: GgufType = Field(
        "same",
        description="Type of the tensors a patch touches in a .gguf OUT: 'same' keeps the "
        "file's own type (only the changed blocks re-encoded; F16 where gguf cannot quantize "
        "that type), 'f16' or 'q8_0' re-encode the whole tensor in that type.",
    )
