#!/usr/bin/env bash
# Creates (once) the Python venv with the tools in requirements.txt and prints its directory.
# Cached under $TOOLFIT_VENV (default ~/.cache/toolfit/venv); rebuilt when requirements.txt changes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=${TOOLFIT_VENV:-$HOME/.cache/toolfit/venv}
stamp=$(sha256sum "$here/requirements.txt" | cut -c1-16)
if [[ ! -x $venv/bin/python || ! -f $venv/.stamp || $(cat "$venv/.stamp") != "$stamp" ]]; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2
  echo "$stamp" >"$venv/.stamp"
fi
echo "$venv"
