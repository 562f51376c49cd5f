"""The reviewers' side: carrying out decisions on rejected drafts, and the KB gaps report."""
