#!/usr/bin/env bash
# Builds the virtual environment of Krake 1.0.1 from PyPI — its API server (`krake.api`), its
# client library (`krake.client`, what Krake's own controllers use) and its data classes — which
# the Krake dialect's tests drive Drover with and compare it against. Krake runs on Python 3.9
# or 3.10 only (on 3.11 `krake.data` fails to import), so this uses pyenv's 3.9 (or 3.10) and
# the pins in tests/compat/krake/requirements.txt. Safe to run again: it does nothing when the
# environment imports Krake already. The environment's place: $DROVER_KRAKE_VENV, by default
# ~/.cache/drover/krake-venv.
set -euo pipefail

venv="${DROVER_KRAKE_VENV:-$HOME/.cache/drover/krake-venv}"
requirements="$(cd "$(dirname "$0")/.." && pwd)/tests/compat/krake/requirements.txt"

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import krake.client, krake.api.app, krake.data.core' >/dev/null 2>&1; then
  exit 0
fi

python=""
for candidate in python3.9 python3.10 "$HOME"/.pyenv/versions/3.9*/bin/python3 "$HOME"/.pyenv/versions/3.10*/bin/python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys, venv; assert sys.version_info[:2] in ((3, 9), (3, 10))' >/dev/null 2>&1; then
    python="$candidate"
    break
  fi
done
if [ -z "$python" ]; then
  echo "setup-krake: Krake 1.0.1 needs Python 3.9 or 3.10 and neither is installed (pyenv install 3.9)" >&2
  exit 1
fi

echo "setup: building Krake 1.0.1's environment in $venv (with $python)"
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
pip=("$venv/bin/pip" install --quiet --disable-pip-version-check)
# PyYAML 5.4.1 (Krake's pin) builds its extension only with Cython < 3, outside pip's isolation.
"${pip[@]}" 'Cython<3' wheel 'setuptools<70'
"${pip[@]}" --no-build-isolation PyYAML==5.4.1
"${pip[@]}" -r "$requirements"
"$venv/bin/python" -c 'import krake.client, krake.api.app, krake.data.core'
