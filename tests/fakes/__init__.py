"""Fakes of the services citebot talks to: real servers on 127.0.0.1, scripted, recording."""

from tests.fakes.llm_server import Call, FakeLLMServer, Reply

__all__ = ["Call", "FakeLLMServer", "Reply"]
