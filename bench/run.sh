#!/usr/bin/env bash
# Runs the benchmarks one after another and keeps this run's raw output in bench/results/
# (one file per benchmark, headed by the command, commit, Node version and load average).
#
#   bench/run.sh                  every benchmark (about 15 minutes)
#   bench/run.sh http reads       only those
#
# PostgreSQL scenarios use the test database (MACHINE_ROUTES_TEST_PG_URL's server, see README).
set -uo pipefail
cd "$(dirname "$0")/.."

declare -A COMMANDS=(
  [http]="npx tsx bench/http/run.ts"
  [reads]="npx tsx bench/reads/run.ts"
  [startup]="npx tsx bench/startup/run.ts"
  [startup-compiled]="npx tsx bench/startup/run.ts --compiled"
  [generate]="npx tsx bench/generate/run.ts"
  [watch]="npx tsx bench/generate/watch.ts"
  [idempotency]="npx tsx bench/idempotency/run.ts"
  [create-or-send]="npx tsx bench/create-or-send/run.ts"
  [interpreter]="npx tsx bench/interpreter/run.ts"
  [persistence]="npx tsx bench/persistence/run.ts"
  [timers]="npx tsx bench/timers/run.ts"
  [operations]="npx tsx bench/operations/run.ts"
  [scale-round-trips]="npx tsx bench/scale/round-trips.ts"
  [scale-notify]="npx tsx bench/scale/notify-in-commit.ts"
  [scale-growth]="npx tsx bench/scale/growth.ts"
  [scale-read-plans]="npx tsx bench/scale/read-plans.ts"
  [scale-timers]="npx tsx bench/scale/timers.ts"
  [scale-contention]="npx tsx bench/scale/contention.ts"
  [scale-timer-lag]="npx tsx bench/scale/timer-lag.ts"
  [scale-subscribers]="npx tsx bench/scale/subscribers.ts"
  [scale-dbos]="npx tsx bench/scale/dbos.ts"
  [scale-jobs]="npx tsx bench/scale/jobs.ts"
  [scale-processes]="npx tsx bench/scale/processes.ts"
  [versioning]="npx tsx bench/versioning/run.ts"
)
ORDER=(http reads startup startup-compiled generate watch idempotency interpreter persistence timers)
selected=("$@")
[ ${#selected[@]} -eq 0 ] && selected=("${ORDER[@]}")

# The compiled start-up case and the package entry points run from dist/.
npm run -s build >/dev/null || exit 1
mkdir -p bench/results
load() { cut -d' ' -f1-3 /proc/loadavg; }
status=0
for name in "${selected[@]}"; do
  command="${COMMANDS[$name]:-}"
  [ -n "$command" ] || { echo "unknown benchmark: $name (one of: ${ORDER[*]})"; exit 2; }
  out="bench/results/$name.txt"
  echo "== $name: $command"
  {
    echo "\$ $command"
    echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD), node $(node --version), $(nproc) cores, load average $(load)"
    $command 2>&1 | grep --line-buffered -v '^npm warn'
    echo "# exit ${PIPESTATUS[0]}, load average at end $(load)"
  } > "$out"
  grep -q '^# exit 0,' "$out" || { echo "   failed: see $out"; status=1; }
done
exit $status
