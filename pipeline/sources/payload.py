"""What a fetch received, as received: one ``RawPart`` per HTTP response, one ``RawPayload`` per fetch.

Kept below both the fetch code (``http.py``) and the source interface (``base.py``), which both need them.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class RawPart(BaseModel):
    """One HTTP response as received (body bytes unchanged)."""

    model_config = ConfigDict(frozen=True)

    url: str
    status: int
    body: bytes
    headers: dict[str, str] = Field(default_factory=dict)  # the ones we keep: content-type, etag, last-modified

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.body).hexdigest()


class RawPayload(BaseModel):
    """Everything one fetch of a source received: one part per request (pages, zones, regions)."""

    model_config = ConfigDict(frozen=True)

    source: str
    fetched_at: datetime
    parts: tuple[RawPart, ...]

    @property
    def sha256(self) -> str:
        digest = hashlib.sha256()
        for part in self.parts:
            digest.update(part.sha256.encode())
        return digest.hexdigest()

    @property
    def size(self) -> int:
        return sum(len(p.body) for p in self.parts)
