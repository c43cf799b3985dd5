/**
 * Server CPU time per request of the machineId-bound route and the hand-written baselines, A/B:
 * `npx tsx bench/http/bound-cpu.ts <sqlite|postgres> [<checkout> ...]`.
 *
 * Starts bench/http/server.ts (Fastify) of each checkout (a directory holding this repository's
 * bench/ and src/, e.g. `git archive <commit> | tar -x -C /tmp/old` with node_modules linked) on
 * a SQLite file of its own, or a PostgreSQL schema of its own, creates 500 instances through
 * each bound create route (machine-routes and hand-written), and drives each server in turn,
 * alternating, with a fixed number of requests per scenario rotating over the instances (as
 * bench/http/run.ts does: no request meets contention). The CPU time the scheduler accounted to
 * the server process (every thread: the main one, the checkpoint thread, GC helpers) is read
 * from /proc before and after each run; on PostgreSQL also that of the database backends
 * serving the server's connections (found by their client port). Prints medians per checkout
 * and scenario, the main thread's share, and each checkout's hand-written / bound ratios: CPU
 * per request hardly depends on what else the shared machine runs, req/s does.
 *
 * Scenarios: `mr-machineid` (POST /counters/{id}/increment), `hw-machineid` (the hand-written
 * one-transaction handler), `hw-machineid-lock` (SQLite: the hand-written handler with a lock
 * row, machine-routes' guarantees). Environment: BENCH_REQUESTS (per run, default 4000),
 * BENCH_ROUNDS (default 11), BENCH_CONNECTIONS (default 10), BENCH_SCENARIOS (comma-separated),
 * BENCH_PG_URL (default the test database).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { readyLine } from '../ready-line.js';
import { otelEnvironment, serverCheckout } from './otel-checkout.js';
import { rotatingRequest } from '../rotating-request.js';

const [backend = 'sqlite', ...checkouts] = process.argv.slice(2) as [
  'sqlite' | 'postgres',
  ...string[],
];
if (backend !== 'sqlite' && backend !== 'postgres')
  throw new Error(`usage: bound-cpu.ts <sqlite|postgres> [<checkout> ...]`);
if (checkouts.length === 0) checkouts.push(resolve(import.meta.dirname, '../..'));
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 4_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 11);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const INSTANCES = 500;
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/machine_routes_test';
const SCENARIOS = (
  process.env.BENCH_SCENARIOS ??
  (backend === 'sqlite'
    ? 'mr-machineid,hw-machineid,hw-machineid-lock'
    : 'mr-machineid,hw-machineid')
).split(',');
const PREFIX: Record<string, string> = {
  'mr-machineid': '/counters',
  'hw-machineid': '/hw',
  'hw-machineid-lock': '/hwl',
};
const BODY = JSON.stringify({ payload: { by: 1 } });

/** Scheduler run time of one thread or process, microseconds (`schedstat`: nanoseconds). */
function schedMicros(path: string): number {
  try {
    return Number(readFileSync(path, 'utf8').split(' ')[0]) / 1000;
  } catch {
    return 0; // the thread ended between the listing and the read
  }
}

/** CPU time of a process's threads, microseconds: all of them, and the main thread alone. */
function processMicros(pid: number): { total: number; main: number } {
  let total = 0;
  for (const task of readdirSync(`/proc/${pid}/task`))
    total += schedMicros(`/proc/${pid}/task/${task}/schedstat`);
  return { total, main: schedMicros(`/proc/${pid}/task/${pid}/schedstat`) };
}

/** Local TCP ports of a process's sockets (its connections to PostgreSQL among them). */
function localPorts(pid: number): Set<number> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      if (link.startsWith('socket:[')) inodes.add(link.slice(8, -1));
    } catch {
      // closed meanwhile
    }
  }
  const ports = new Set<number>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length > 9 && inodes.has(fields[9]!))
        ports.add(parseInt(fields[1]!.split(':')[1]!, 16));
    }
  }
  return ports;
}

/** CPU time of the PostgreSQL backends whose client is one of `ports`, microseconds. */
function backendMicros(ports: Set<number>): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let command: string;
    try {
      command = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    const match = /^postgres: .*\(([0-9]+)\)/.exec(command);
    if (match && ports.has(Number(match[1]))) total += schedMicros(`/proc/${entry}/schedstat`);
  }
  return total;
}

interface Server {
  checkout: string;
  child: ChildProcess;
  port: number;
  ids: { mr: string[]; hw: string[] };
}

async function start(checkout: string, store: string): Promise<Server> {
  const child = spawn(
    process.execPath,
    [
      '--conditions=machine-routes-source',
      '--import',
      'tsx',
      resolve(serverCheckout(checkout), 'bench/http/server.ts'),
      'fastify',
      store,
    ],
    {
      cwd: serverCheckout(checkout),
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, ...otelEnvironment(checkout) },
    },
  );
  const [port] = await readyLine(child, `server of ${checkout}`);
  const base = `http://127.0.0.1:${port}`;
  return {
    checkout,
    child,
    port: Number(port),
    ids: { mr: await seed(`${base}/counters/create`), hw: await seed(`${base}/hw/create`) },
  };
}

async function seed(url: string): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 0; index < INSTANCES; index += 1) {
    const response = await fetch(url, { method: 'POST' });
    if (response.status !== 201) throw new Error(`seeding ${url}: HTTP ${response.status}`);
    ids.push(((await response.json()) as { data: { id: string } }).data.id);
  }
  return ids;
}

async function drive(server: Server, scenario: string, amount: number): Promise<void> {
  const pool = scenario === 'mr-machineid' ? server.ids.mr : server.ids.hw;
  const prefix = PREFIX[scenario];
  if (prefix === undefined) throw new Error(`unknown scenario ${scenario}`);
  const result = await autocannon({
    url: `http://127.0.0.1:${server.port}`,
    connections: CONNECTIONS,
    amount,
    requests: [rotatingRequest((n) => `${prefix}/${pool[n % pool.length]}/increment`, BODY)],
  });
  if (result.non2xx + result.errors > 0)
    throw new Error(`${scenario}: ${result.non2xx} non-2xx answers, ${result.errors} errors`);
}

const dir = mkdtempSync(join(tmpdir(), 'bound-cpu-'));
const schemas: string[] = [];
const servers: Server[] = [];
const startLoad = loadavg();
try {
  for (const [index, checkout] of checkouts.entries()) {
    let store: string;
    if (backend === 'sqlite') store = `sqlite:${join(dir, `server-${index}.db`)}`;
    else {
      const schema = `bench_bound_${process.pid}_${index}`;
      schemas.push(schema);
      store = `${PG_URL}?schema=${schema}`;
    }
    servers.push(await start(checkout, store));
  }
  // Warm-up: JIT, statement caches, pools, the checkpoint thread.
  for (const server of servers)
    for (const scenario of SCENARIOS) await drive(server, scenario, 3_000);
  const figures = new Map<string, { total: number[]; main: number[]; db: number[] }>();
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const scenario of SCENARIOS) {
      for (const server of round % 2 === 0 ? servers : [...servers].reverse()) {
        const pid = server.child.pid!;
        const ports = backend === 'postgres' ? localPorts(pid) : new Set<number>();
        const before = processMicros(pid);
        const dbBefore = backend === 'postgres' ? backendMicros(ports) : 0;
        await drive(server, scenario, REQUESTS);
        const after = processMicros(pid);
        // Connections opened during the run count too (the pool may grow).
        const dbAfter =
          backend === 'postgres' ? backendMicros(new Set([...ports, ...localPorts(pid)])) : 0;
        const key = `${server.checkout}|${scenario}`;
        const entry = figures.get(key) ?? { total: [], main: [], db: [] };
        entry.total.push((after.total - before.total) / REQUESTS);
        entry.main.push((after.main - before.main) / REQUESTS);
        entry.db.push((dbAfter - dbBefore) / REQUESTS);
        figures.set(key, entry);
      }
    }
  }
  const median = (values: number[]) =>
    [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  console.log(
    `${backend}, Fastify, ${ROUNDS} rounds x ${REQUESTS} requests, ${CONNECTIONS} connections, ` +
      `${INSTANCES} instances per route; CPU us per request, median (min-max); load average ` +
      `${startLoad.map((value) => value.toFixed(2)).join(' ')} at start, ` +
      `${loadavg()
        .map((value) => value.toFixed(2))
        .join(' ')} at end`,
  );
  for (const { checkout } of servers) {
    console.log(checkout);
    const totals = new Map<string, number>();
    for (const scenario of SCENARIOS) {
      const { total, main, db } = figures.get(`${checkout}|${scenario}`)!;
      const server = median(total);
      totals.set(scenario, server + (backend === 'postgres' ? median(db) : 0));
      let line = `  ${scenario.padEnd(18)} server ${server.toFixed(1)} (${Math.min(...total).toFixed(1)}-${Math.max(...total).toFixed(1)}), main thread ${median(main).toFixed(1)}`;
      if (backend === 'postgres')
        line += `, database ${median(db).toFixed(1)}, both ${(server + median(db)).toFixed(1)}`;
      console.log(line);
    }
    const bound = figures.get(`${checkout}|mr-machineid`);
    if (bound) {
      const ratios: string[] = [];
      for (const baseline of ['hw-machineid', 'hw-machineid-lock']) {
        const other = figures.get(`${checkout}|${baseline}`);
        if (!other) continue;
        ratios.push(
          `${baseline} / bound: server ${(median(other.total) / median(bound.total)).toFixed(2)}x` +
            (backend === 'postgres'
              ? `, both ${(totals.get(baseline)! / totals.get('mr-machineid')!).toFixed(2)}x`
              : ''),
        );
      }
      console.log(`  ${ratios.join('; ')}`);
    }
  }
  // Each round's own ratio to the first checkout, then their median: the load drifts over a
  // run more than between the servers of one round.
  if (servers.length > 1) {
    const [first, ...others] = servers;
    for (const scenario of SCENARIOS) {
      const base = figures.get(`${first!.checkout}|${scenario}`)!.total;
      for (const { checkout } of others) {
        const own = figures.get(`${checkout}|${scenario}`)!.total;
        const ratios = own.map((value, round) => value / base[round]!);
        console.log(
          `${scenario}: ${checkout} / ${first!.checkout}, server CPU per round, median ` +
            `${median(ratios).toFixed(3)}x (${ratios.map((ratio) => ratio.toFixed(2)).join(' ')})`,
        );
      }
    }
  }
} finally {
  for (const server of servers) server.child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
  if (schemas.length > 0) {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    for (const schema of schemas)
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
    await client.end();
  }
}
