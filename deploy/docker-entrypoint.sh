#!/bin/sh
# Entrypoint of the citebot image.
#
# - A citebot command as the first argument (serve, worker, index, search, ask, review, doctor)
#   (and sync) runs `citebot` with the arguments: `docker run IMAGE worker --concurrency 8`.
#   Anything else runs as given: `docker run -it IMAGE sh`.
# - Before serve, worker, search and ask, the index is built from CITEBOT_KB_DIR when
#   CITEBOT_INDEX_ON_START says so:
#     missing (default)  only when CITEBOT_INDEX_DIR holds no index yet (a KB mounted at
#                        run time, or an image built with BAKE_INDEX=false)
#     update             at every start, incrementally: only changed entries are re-indexed
#     never              never; the command fails if there is no index
#   Broken KB files are reported and skipped (--keep-going): a half-usable KB answers
#   more questions than a bot that does not start. `citebot index` builds into a new
#   generation and switches atomically, so processes already running are never disturbed.
set -eu

case "${1:-}" in
  serve|worker|index|sync|search|ask|review|doctor|-h|--help)
    set -- citebot "$@"
    ;;
esac

index_missing() {
  # Ask citebot itself where the index is, so CITEBOT_INDEX_DIR, a .env file and the
  # defaults are read exactly as the command will read them.
  python - <<'PY'
import sys

from bot.config import ConfigError, load_settings
from kb_index.index import IndexNotFound, current_generation

try:
    settings = load_settings()
except ConfigError:
    sys.exit(1)  # the command itself reports the setting, in its own words
try:
    current_generation(settings.index_dir)
except IndexNotFound:
    sys.exit(0)
sys.exit(1)
PY
}

if [ "${1:-}" = "citebot" ]; then
  case "${2:-}" in
    serve|worker|search|ask)
      case "${CITEBOT_INDEX_ON_START:-missing}" in
        update)
          citebot index --keep-going --quiet
          ;;
        missing)
          if index_missing; then
            echo "docker-entrypoint: no index yet; indexing ${CITEBOT_KB_DIR:-the bundled sample KB}" >&2
            citebot index --keep-going --quiet
          fi
          ;;
        never)
          ;;
        *)
          echo "docker-entrypoint: CITEBOT_INDEX_ON_START must be missing, update or never (got '${CITEBOT_INDEX_ON_START}')" >&2
          exit 2
          ;;
      esac
      ;;
  esac
fi

exec "$@"
