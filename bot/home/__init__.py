"""citebot's Home tab: what it shows each person (data.py), how (view.py), and publishing it (publish.py)."""
