#!/bin/sh
# The matrix test's request runner (matrix_test.go): run by an actor (a
# person's shell, an agent's tool command, a Codex's), so that its
# requests to st's socket come from that actor's processes. It serves the
# request files the test drops in $1: NAME.req holds the route on its
# first line and the body's file on its second; the answer goes to
# NAME.res (the HTTP status on the first line, then the body). $2 is
# st's socket. It ends when $1/stop appears.
dir=$1
sock=$2
while :; do
  for f in "$dir"/*.req; do
    [ -e "$f" ] || continue
    n=${f%.req}
    { read -r route; read -r body; } < "$f"
    rm -f "$f"
    code=$(curl -s -m 20 -o "$n.out" -w '%{http_code}' --unix-socket "$sock" -X POST \
      -H 'Content-Type: application/json' --data-binary @"$body" "http://st$route")
    { echo "$code"; cat "$n.out" 2>/dev/null; } > "$n.tmp" && mv "$n.tmp" "$n.res"
    rm -f "$n.out"
  done
  [ -e "$dir/stop" ] && exit 0
  sleep 0.02
done
