"""Help channels: answering a channel's questions without a mention, and handing a question over to people.

asks.py      which messages ask something (pure, no model call)
listener.py  the web process: a help channel's messages -> the same answer job as a mention
handover.py  the "Still need help?" button, its click, and the worker's hand-over
learning.py  a person's answer in an escalated thread -> a review that can save it as a KB draft
"""
