"""Verification of a draft against the blocks it cites, as pure functions, no I/O: citations.py
and claims.py check each sentence or claim with the checks they share (numbers.py, links.py,
refs.py, text.py), policy.py says what each finding does, judgement.py applies the judge's reply."""
