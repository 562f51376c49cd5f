"""Grounding: prompt, verification and rendering as pure functions, no I/O.

prompt.py builds what the model sees; citations.py and claims.py verify what it
wrote; answer.py turns a verified draft into the posted Answer.
"""
