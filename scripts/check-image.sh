#!/usr/bin/env bash
# Build the container image from deploy/Dockerfile and check it for real (docs/operations.md,
# "Checking the image"): the README's curl gets the fake model's answer, `docker inspect` turns
# healthy, every process runs as uid 1000, a burst of invokes kills no worker (the better-sqlite3 /
# Node 24 abort), `docker stop` drains and exits 0, and --cpus=1 / --cpus=2 give 1 / 2 workers.
# Prints the image size, the time to healthy and each worker's RSS.
#   scripts/check-image.sh                 build, then check
#   IMAGE=agenthost scripts/check-image.sh check an image already built
# Uses host networking (PORT, default 18080, and METRICS_PORT, default 19464, must be free) and needs
# a Docker daemon; without one it says so and exits 0, as there is nothing to check.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! docker info >/dev/null 2>&1; then
  echo "check-image: skipped: no Docker daemon answers \`docker info\`" >&2
  exit 0
fi

PORT="${PORT:-18080}"
METRICS_PORT="${METRICS_PORT:-19464}"
NAME="agenthost-check-$$"
if [ -z "${IMAGE:-}" ]; then
  IMAGE="agenthost:check"
  docker build --network host -f deploy/Dockerfile -t "$IMAGE" .
fi

fail() { echo "check-image: FAILED: $*" >&2; docker logs "$NAME" 2>&1 | tail -20 >&2 || true; exit 1; }
cleanup() { docker rm -f "$NAME" >/dev/null 2>&1 || true; }
trap cleanup EXIT

# Waits (at most $2 seconds) until the command in $1 succeeds.
wait_for() {
  local deadline=$((SECONDS + $2))
  until eval "$1"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.2
  done
}

start() { # start <extra docker run flags...>
  cleanup
  docker run -d --name "$NAME" --network host "$@" -e PORT="$PORT" -e METRICS_PORT="$METRICS_PORT" \
    -e USE_FAKE_MODEL=true -e AUTH_SECRET=change-me -e MEMORY_BACKEND=filedb "$IMAGE" >/dev/null
}

# Whether the container's log matches the regular expression $1 (read whole first: grep -q closing a
# pipe early would fail the pipeline under pipefail).
has_log() { grep -qE "$1" <<<"$(docker logs "$NAME" 2>&1)"; }

invoke() {
  curl -sf "localhost:$PORT/invoke" -H 'Authorization: Bearer change-me' \
    -d "{\"input\": {\"message\": \"Hello\"}, \"thread_id\": \"$1\"}"
}

echo "image size: $(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}')"

start
wait_for '[ "$(docker inspect -f "{{.State.Health.Status}}" "$NAME")" = healthy ]' 120 || fail "never healthy"
started_at="$(docker inspect -f '{{.State.StartedAt}}' "$NAME")"
healthy_at="$(docker inspect -f '{{(index .State.Health.Log 0).End.Format "2006-01-02T15:04:05.000Z07:00"}}' "$NAME")"
echo "time to healthy: $(echo "$(date -d "$healthy_at" +%s.%N) - $(date -d "$started_at" +%s.%N)" | bc) s (first check after the 10 s interval)"

answer="$(invoke demo)" || fail "the README's curl got no answer"
grep -q 'This is a test response from the fake model.' <<<"$answer" || fail "unexpected answer: $answer"
echo "README curl: $answer" | cut -c1-120

uids="$(docker exec "$NAME" sh -c 'for s in /proc/[0-9]*/status; do awk "/^Uid/{print \$2}" "$s"; done' | sort -u | tr '\n' ' ')"
[ "$uids" = "1000 " ] || fail "processes run as uid(s) $uids, not only 1000"
echo "processes run as: uid $uids"

for i in $(seq 1 300); do invoke "t$((i % 20))" >/dev/null || fail "invoke $i failed"; done
sleep 5 # let an idle-time garbage collection run: the abort happened there
if has_log 'worker exited|Assertion failed'; then fail "a worker died during the burst"; fi
echo "300 invokes: no worker died"
curl -s "localhost:$METRICS_PORT/metrics" | awk '/^process_resident_memory_bytes\{worker/ {printf "worker RSS %s: %.0f MB\n", $1, $2/1048576}'

started=$SECONDS
docker stop "$NAME" >/dev/null
code="$(docker inspect -f '{{.State.ExitCode}}' "$NAME")"
[ "$code" = 0 ] || fail "docker stop: exit code $code"
has_log '"msg":"primary exiting"' || fail "no clean shutdown logged"
echo "docker stop: exit 0 after $((SECONDS - started)) s, clean shutdown logged"

for cpus in 1 2; do
  start --cpus="$cpus"
  wait_for 'has_log "primary starting"' 60 || fail "--cpus=$cpus: no start"
  workers="$(grep -m1 '"primary starting"' <<<"$(docker logs "$NAME" 2>&1)" | sed -E 's/.*"workers":([0-9]+).*/\1/')"
  [ "$workers" = "$cpus" ] || fail "--cpus=$cpus gave $workers workers"
  echo "--cpus=$cpus: $workers worker(s)"
done
echo "check-image: all checks passed"
