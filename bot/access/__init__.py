"""Who may read which collection: the asker and everyone who sees the answer (docs/DESIGN.md, section 3.8).

policy.py decides, as pure functions, from what resolver.py learns from Slack (cached in Redis); scope.py
chooses the collections a question may draw on where its answer is shown.
"""
