"""Sources the KB is synced from (Confluence, Google Drive): `citebot sync`.

A source lists the documents in its scope with who may read each one
(model.Listed), and fetches the ones that changed (model.Fetched). The sync
(sync.py) converts them into entries, keeps them in the synced store
(store.py) beside the KB folder, and builds the index from the KB folder and
that store together, as `citebot index` does. Nothing here knows Slack: who a
source's reader is in Slack is asked of a `People` directory the caller hands in.
"""
