"""Answering a question: retrieve, prompt, generate, verify, assemble (pipeline.py wires them)."""
