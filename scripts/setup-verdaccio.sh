#!/usr/bin/env bash
# Installs Verdaccio 6.8.0 from the npm registry — the npm registry the marketplace's tests
# publish modules to and read them back from with the real npm client. 6.8.0 is the newest
# release that runs on Node.js 20 (6.9 and later need 22); one of its dependencies asks for the
# dist-tag `node-fetch@cjs`, which the registry no longer has, so it is pinned to 2.7.0 with an
# override. Safe to run again: it does nothing when the pinned Verdaccio is there. Its place:
# $DROVER_VERDACCIO_DIR, by default ~/.cache/drover/verdaccio.
set -euo pipefail

dir="${DROVER_VERDACCIO_DIR:-$HOME/.cache/drover/verdaccio}"
version=6.8.0

if [ -x "$dir/node_modules/.bin/verdaccio" ] \
  && [ "$(node -p "require('$dir/node_modules/verdaccio/package.json').version" 2>/dev/null)" = "$version" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "setup-verdaccio: npm is not installed (Debian: apt-get install nodejs npm)" >&2
  exit 1
fi
echo "setup: installing Verdaccio $version in $dir"
mkdir -p "$dir"
cat > "$dir/package.json" <<JSON
{"name": "drover-test-verdaccio", "private": true, "overrides": {"node-fetch@cjs": "2.7.0"}}
JSON
(cd "$dir" && npm install "verdaccio@$version" --save-exact --no-audit --no-fund --loglevel=error >/dev/null)
