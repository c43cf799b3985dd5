/**
 * Instructions per request of the machineId-bound route, counted by valgrind's callgrind: a
 * measure the machine's load does not move, for A/B runs on a shared host:
 * `npx tsx bench/http/instructions.ts <checkout> ...` (e.g. `/tmp/untraced /tmp/untraced+otel .
 * .+otel`: see bench/http/untraced.ts and otel-checkout.ts).
 *
 * Each checkout's bench/http/server.ts (Fastify, a SQLite file of its own) runs under
 * `valgrind --tool=callgrind --instr-atstart=no`: uninstrumented while it starts, 100 instances
 * are created and BENCH_WARMUP requests let V8 optimise the route; then `callgrind_control -i on`
 * and BENCH_WINDOWS windows of BENCH_REQUESTS requests (POST /counters/{id}/increment, rotating
 * over the instances, no contention), each ended by `callgrind_control -d` (a dump per window).
 * Every thread of the process is counted (valgrind runs them one at a time): the main thread,
 * GC helpers, SQLite's checkpoints, the SDK's batch processor and metric reader.
 *
 * What is printed per request: the instructions of a window without those of V8's optimising
 * compilers (TurboFan, Maglev: still at work thousands of requests in, their share of a window
 * says when V8 got to the code, not what a request costs; shown apart), and the median over
 * windows (a major GC falls in one window of several and doubles it). JIT-compiled code is
 * counted like any other; which function it belongs to is not known (bench/http/profile-otel.ts
 * ranks functions by sampled time). Environment: BENCH_REQUESTS (default 200), BENCH_WINDOWS
 * (default 5), BENCH_WARMUP (default 6000), BENCH_ROUNDS (fresh processes per checkout, default
 * 1), BENCH_CONNECTIONS (default 4).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';
import { readyLine } from '../ready-line.js';
import { otelEnvironment, serverCheckout } from './otel-checkout.js';
import { rotatingRequest } from '../rotating-request.js';

const checkouts = process.argv.slice(2);
if (checkouts.length === 0) checkouts.push(resolve(import.meta.dirname, '../..'));
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 200);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 6_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const WINDOWS = Number(process.env.BENCH_WINDOWS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 4);
const INSTANCES = 100;
const BODY = JSON.stringify({ payload: { by: 1 } });

async function seed(base: string): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 0; index < INSTANCES; index += 1) {
    const response = await fetch(`${base}/counters/create`, { method: 'POST' });
    if (response.status !== 201) throw new Error(`seeding: HTTP ${response.status}`);
    ids.push(((await response.json()) as { data: { id: string } }).data.id);
  }
  return ids;
}

async function drive(base: string, ids: string[], amount: number): Promise<void> {
  const result = await autocannon({
    url: base,
    connections: CONNECTIONS,
    amount,
    timeout: 120,
    requests: [rotatingRequest((n) => `/counters/${ids[n % ids.length]}/increment`, BODY)],
  });
  if (result.non2xx + result.errors > 0)
    throw new Error(`${result.non2xx} non-2xx answers, ${result.errors} errors`);
}

/** Instructions of one callgrind dump: all, and those of V8's optimising compilers. */
interface Count {
  total: number;
  compile: number;
  /** Of V8's major (mark-compact) collector: in one window of several, so shown apart. */
  majorGc: number;
}

/**
 * V8's optimising compilers (TurboFan, Maglev) still finishing the route's code after the
 * warm-up: compile work counted in a window says when V8 got to it, not what a request costs.
 */
const COMPILER =
  /v8::internal::(compiler|maglev|turboshaft)::|OptimizedCompilationJob|v8::internal::Pipeline/;
const MAJOR_GC =
  /MarkCompact|ConcurrentMarking|MarkingVisitor|IncrementalMarking|MarkingBarrier|Sweeper|Evacuat|RememberedSetUpdating|RecordMigratedSlot|WhiteToGrey|MemoryChunk|ActiveSystemPages|SizeFromMap|__popcount|IterateObjectCache|RelocIterator|PointersUpdatingVisitor|StringTableCleaner|LiveObjectRange/;

function countOf(file: string): Count {
  const text = execFileSync('callgrind_annotate', ['--threshold=100', file], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  let total = 0;
  let compile = 0;
  let majorGc = 0;
  for (const line of text.split('\n')) {
    const match = /^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$/.exec(line);
    if (match === null) continue;
    const n = Number(match[1]!.replaceAll(',', ''));
    if (match[2]!.startsWith('PROGRAM TOTALS')) total = n;
    else if (COMPILER.test(match[2]!)) compile += n;
    else if (MAJOR_GC.test(match[2]!)) majorGc += n;
  }
  return { total, compile, majorGc };
}

/** Per-request counts of BENCH_WINDOWS windows of one fresh server process of a checkout. */
async function measure(checkout: string, dir: string, round: number): Promise<Count[]> {
  const out = join(dir, `cg-${round}-${checkouts.indexOf(checkout)}`);
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      `--callgrind-out-file=${out}`,
      process.execPath,
      '--conditions=machine-routes-source',
      '--import',
      'tsx',
      resolve(serverCheckout(checkout), 'bench/http/server.ts'),
      'fastify',
      `sqlite:${out}.db`,
    ],
    {
      cwd: serverCheckout(checkout),
      stdio: ['ignore', 'pipe', 'ignore'],
      env: { ...process.env, ...otelEnvironment(checkout) },
    },
  );
  try {
    const [port] = await readyLine(child, `server of ${checkout}`);
    const base = `http://127.0.0.1:${port}`;
    const ids = await seed(base);
    await drive(base, ids, WARMUP);
    execFileSync('callgrind_control', ['-i', 'on', String(child.pid)], { stdio: 'ignore' });
    const counts: Count[] = [];
    for (let window = 1; window <= WINDOWS; window += 1) {
      await drive(base, ids, REQUESTS);
      // Each dump writes `<out>.<n>` and zeroes the counters: one file per window.
      execFileSync('callgrind_control', ['-d', String(child.pid)], { stdio: 'ignore' });
      const count = countOf(`${out}.${window}`);
      if (count.total === 0) throw new Error(`no callgrind dump ${out}.${window}`);
      counts.push({
        total: count.total / REQUESTS,
        compile: count.compile / REQUESTS,
        majorGc: count.majorGc / REQUESTS,
      });
    }
    return counts;
  } finally {
    child.kill('SIGKILL');
  }
}

const dir = mkdtempSync(join(tmpdir(), 'instructions-'));
const startLoad = loadavg();
/** Per checkout, per window measured: instructions per request without the compilers'. */
const counts = new Map<string, number[]>(checkouts.map((checkout) => [checkout, []]));
/** The same without the major GC's too. */
const mutator = new Map<string, number[]>(checkouts.map((checkout) => [checkout, []]));
const format = (n: number) => Math.round(n).toLocaleString('en');
try {
  for (let round = 0; round < ROUNDS; round += 1)
    for (const checkout of checkouts) {
      const windows = await measure(checkout, dir, round);
      for (const window of windows) {
        counts.get(checkout)!.push(window.total - window.compile);
        mutator.get(checkout)!.push(window.total - window.compile - window.majorGc);
      }
      console.log(
        `round ${round + 1} ${checkout}: ${windows
          .map(
            (w) =>
              `${format(w.total - w.compile)} (${format(w.majorGc)} major GC; + ${format(w.compile)} compiling)`,
          )
          .join(', ')} Ir/request`,
      );
    }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};
const first = median(counts.get(checkouts[0]!)!);
const firstMutator = median(mutator.get(checkouts[0]!)!);
console.log(
  `\ninstructions per bound request without V8's optimising compilers, ${REQUESTS} requests a window, ${WINDOWS} windows after ${WARMUP} warm-up, ${ROUNDS} rounds, load ${startLoad[0]!.toFixed(1)} -> ${loadavg()[0]!.toFixed(1)}`,
);
for (const [checkout, values] of counts)
  console.log(
    `${checkout.padEnd(28)} median ${format(median(values)).padStart(10)}  ${(median(values) / first).toFixed(3)}x of ${checkouts[0]}  (min ${format(Math.min(...values))}, max ${format(Math.max(...values))});  without major GC ${format(median(mutator.get(checkout)!)).padStart(10)}  ${(median(mutator.get(checkout)!) / firstMutator).toFixed(3)}x`,
  );
