"""Fixtures every test module can use, and the test kinds.

Fixtures (no import needed in a test module):
  redis_url        a real Redis DB of its own, flushed around each test (tests/redis_fixtures.py)
  citebot, index_dir
                   a running citebot: serve + workers, fake Slack, fake LLM (tests/citebot_fixtures.py)
  backends, sleeps chat backends with instant retries, and the delays they asked for (tests/backend_fixtures.py)

Kinds (pytest markers, registered in pyproject.toml):
  e2e     starts citebot's serve/worker processes or another server process, or goes
          through the Slack flow end to end; marked in the test modules
  faults  the fault suite (tests/faults): kills Redis, workers and Slack on purpose
  unit    everything else, added here: `python -m pytest -m unit` is the fast run
"""

from __future__ import annotations

import pytest

pytest_plugins = ["tests.redis_fixtures", "tests.redis_ha_fixtures", "tests.citebot_fixtures", "tests.backend_fixtures"]

KINDS = ("unit", "e2e", "faults")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("e2e") is None and item.get_closest_marker("faults") is None:
            item.add_marker(pytest.mark.unit)
