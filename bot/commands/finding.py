"""One line of `citebot doctor`: which check, ok / warn / fail, what it found."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

OK, WARN, FAIL = "ok", "warn", "fail"


@dataclass(frozen=True)
class Finding:
    check: str  # model, judge, slack, help, redis, index, access, sources
    status: str  # OK, WARN or FAIL
    detail: str
    data: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"check": self.check, "status": self.status, "detail": self.detail, **self.data}
