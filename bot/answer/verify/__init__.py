"""Verification of a draft against the blocks it cites, as pure functions, no I/O.

citations.py and claims.py check what the model wrote, sentence by sentence or
claim by claim; support.py, numbers.py and links.py are the checks they share;
text.py splits text into sentences the same way for KB blocks and answers.
"""
