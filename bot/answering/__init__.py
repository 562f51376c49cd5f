"""Answering: what a worker does with a question (bot.answering.answerer), a "Post in channel" click
(share.py), and the note under an answer whose source changed (source_changes.py)."""
