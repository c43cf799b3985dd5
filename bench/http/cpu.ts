/**
 * Server CPU time per request, A/B: `npx tsx bench/http/cpu.ts <framework> <checkout>...`.
 *
 * Starts bench/http/server.ts of each checkout (a directory holding this repository's bench/
 * and src/, e.g. a worktree of an older commit) with an in-memory store, and drives each server
 * in turn, alternating, with a fixed number of requests per scenario (`raw` and `mr-stateless`
 * by default, BENCH_SCENARIOS to choose), reading the server process's CPU time
 * from /proc before and after. Prints the median microseconds per request of each checkout and
 * scenario, each checkout's raw / stateless ratio (of the medians, and the median of each
 * round's own ratio), and each other checkout against the first, round by round. Req/s would
 * mostly measure the other work of a shared machine; CPU time per request does not depend on it
 * as much.
 *
 * Environment: BENCH_REQUESTS (per run, default 5000), BENCH_ROUNDS (default 21),
 * BENCH_CONNECTIONS (default 10), BENCH_SCENARIOS (names or paths, comma-separated),
 * BENCH_SERVER (another server script of the checkouts, default bench/http/server.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { driveStateless } from './stateless-load.js';
import { readyLine } from '../ready-line.js';
import { serverCpuMicros as cpuMicros } from '../server-cpu.js';
import { otelEnvironment, serverCheckout } from './otel-checkout.js';

const [framework = 'fastify', ...checkouts] = process.argv.slice(2);
if (checkouts.length === 0) checkouts.push(resolve(import.meta.dirname, '../..'));
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 5_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 21);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const SCENARIOS = (process.env.BENCH_SCENARIOS ?? 'raw,mr-stateless').split(',');
// A scenario is one of these names or a path of the server (`/quotes/increment`).
// Another server script of the checkout (same arguments, same READY line), for experiments.
const SERVER = process.env.BENCH_SERVER ?? 'bench/http/server.ts';

async function start(checkout: string): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(
    process.execPath,
    [
      '--conditions=machine-routes-source',
      '--import',
      'tsx',
      resolve(serverCheckout(checkout), SERVER),
      framework,
      'memory:',
    ],
    {
      cwd: serverCheckout(checkout),
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, ...otelEnvironment(checkout) },
    },
  );
  const [port] = await readyLine(child, `server of ${checkout}`);
  return { child, port: Number(port) };
}

const drive = (port: number, scenario: string, amount: number) =>
  driveStateless(port, scenario, amount, CONNECTIONS);

const servers: { checkout: string; child: ChildProcess; port: number }[] = [];
for (const checkout of checkouts) servers.push({ checkout, ...(await start(checkout)) });
try {
  // Warm-up: JIT and connection set-up before anything is measured.
  for (const server of servers)
    for (const scenario of SCENARIOS) await drive(server.port, scenario, 10_000);
  const figures = new Map<string, number[]>();
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const scenario of SCENARIOS) {
      for (const server of round % 2 === 0 ? servers : [...servers].reverse()) {
        const before = cpuMicros(server.child.pid!);
        await drive(server.port, scenario, REQUESTS);
        const used = (cpuMicros(server.child.pid!) - before) / REQUESTS;
        const key = `${server.checkout}|${scenario}`;
        figures.set(key, [...(figures.get(key) ?? []), used]);
      }
    }
  }
  const median = (values: number[]) =>
    [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  /** Median and quartiles of `a[i] / b[i]` over the rounds. */
  const pairedMedian = (a: number[], b: number[]) => {
    const ratios = a.map((value, index) => value / b[index]!).sort((x, y) => x - y);
    const at = (q: number) => ratios[Math.floor((ratios.length - 1) * q)]!.toFixed(2);
    return `${at(0.5)}x (quartiles ${at(0.25)}-${at(0.75)})`;
  };
  console.log(
    `${framework}, ${ROUNDS} rounds x ${REQUESTS} requests, ${CONNECTIONS} connections; ` +
      'server CPU us per request, median (min-max)',
  );
  for (const { checkout } of servers) {
    const row = SCENARIOS.map((scenario) => {
      const values = figures.get(`${checkout}|${scenario}`)!;
      return `${scenario} ${median(values).toFixed(1)} (${Math.min(...values).toFixed(1)}-${Math.max(...values).toFixed(1)})`;
    });
    const raw = figures.get(`${checkout}|raw`);
    const stateless = figures.get(`${checkout}|mr-stateless`);
    if (raw && stateless) {
      row.push(`raw/stateless ${(median(raw) / median(stateless)).toFixed(2)}x`);
      // Each round's own ratio (its raw and stateless runs were seconds apart): the load of the
      // machine drifts over a run, and the paired ratio drifts much less than either figure.
      row.push(`per round ${pairedMedian(raw, stateless)}`);
    }
    console.log(`${checkout}: ${row.join(', ')}`);
  }
  // A/B: each checkout's CPU per request over the first one's, round by round.
  for (const { checkout } of servers.slice(1)) {
    const row = SCENARIOS.map((scenario) => {
      const first = figures.get(`${servers[0]!.checkout}|${scenario}`)!;
      const other = figures.get(`${checkout}|${scenario}`)!;
      return `${scenario} ${pairedMedian(other, first)}`;
    });
    console.log(`${checkout} / ${servers[0]!.checkout}, per round: ${row.join(', ')}`);
  }
} finally {
  for (const server of servers) server.child.kill('SIGTERM');
}
