#!/bin/sh
# Copies xterm.js's built files from node_modules into the Go package's
# embedded assets, so that `go build` never needs npm. Run after
# `npm ci` whenever package.json changes; commit the copied files.
set -eu
cd "$(dirname "$0")"
dst=../internal/web/assets/vendor
mkdir -p "$dst"
x=node_modules/@xterm/xterm
f=node_modules/@xterm/addon-fit
# The source-map comment would make browsers ask for maps we do not ship.
sed '/^\/\/# sourceMappingURL=/d' "$x/lib/xterm.mjs" >"$dst/xterm.mjs"
sed '/^\/\/# sourceMappingURL=/d' "$f/lib/addon-fit.mjs" >"$dst/addon-fit.mjs"
cp "$x/css/xterm.css" "$dst/xterm.css"
{
  printf '@xterm/xterm %s and @xterm/addon-fit %s, from the npm registry (web/package.json).\n\n' \
    "$(node -p "require('./$x/package.json').version")" "$(node -p "require('./$f/package.json').version")"
  cat "$x/LICENSE"
} >"$dst/LICENSE"
