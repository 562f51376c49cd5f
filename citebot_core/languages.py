"""The languages citebot indexes (analyzers, detection), answers in and speaks (bot.i18n): one list for all three.

Adding one means an analyzer (kb_index.analysis), its function words for
detection, and a column of bot.i18n's table; tests/test_i18n.py and
tests/test_floor.py fail until all of them have it.
"""

from __future__ import annotations

LANGUAGES: tuple[str, ...] = ("en", "de")

__all__ = ["LANGUAGES"]
