/**
 * HTTP benchmark: `npx tsx bench/http/run.ts`.
 *
 * Each server runs in its own process (bench/http/server.ts); this process drives it with
 * autocannon, so load generation and serving do not share an event loop. The scenarios of one
 * server run in short interleaved rounds (ROUNDS rounds; in each, every scenario once for
 * DURATION seconds), and around every run the server process's CPU time is read from /proc.
 *
 * The headline is the server's CPU time per request, as the ratio baseline / scenario (higher is
 * better, as for req/s) taken round by round and reported as the median of the rounds with its
 * quartiles. On this shared 2-core host req/s measures mostly the other work of the machine (raw
 * Fastify swung 19,400 -> 7,200 req/s between runs of one benchmark); the CPU a request costs
 * the server moves much less, and a ratio of two runs seconds apart cancels what it still
 * drifts. req/s and p99 (medians) are printed too. PostgreSQL rows count the server process only,
 * not the database's backends (`bench/http/bound-cpu.ts postgres` counts both).
 *
 * Environment: BENCH_ROUNDS (default 9), BENCH_DURATION (seconds per run, default 2),
 * BENCH_CONNECTIONS (default 10), BENCH_PG_URL (default the test database; the PostgreSQL server
 * is skipped when unreachable).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import { readyLine } from '../ready-line.js';
import { pairedRatioOf, serverCpuMicros } from '../server-cpu.js';
import { rotatingRequest } from '../rotating-request.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const DURATION = Number(process.env.BENCH_DURATION ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const INSTANCES = 500;
const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/machine_routes_test';
const BODY = JSON.stringify({ payload: { by: 1 } });

type Scenario = 'raw' | 'mr-stateless' | 'mr-machineid' | 'hw-machineid' | 'hw-machineid-lock';
interface ServerPlan {
  label: string;
  framework: 'fastify' | 'express';
  store: string;
  scenarios: Scenario[];
}
interface Figures {
  rps: number;
  p99: number;
  /** Server CPU time per request, microseconds. */
  cpu: number;
  non2xx: number;
}

const SCENARIO_LABELS: Record<Scenario, string> = {
  raw: 'raw framework, same JSON',
  'mr-stateless': 'machine-routes stateless',
  'mr-machineid': 'machine-routes machineId-bound',
  'hw-machineid': 'hand-written XState + driver',
  'hw-machineid-lock': 'same with a lock row (our guarantees)',
};

async function main(): Promise<void> {
  const started = Date.now();
  const startLoad = loadavg()[0]!;
  const dir = mkdtempSync(join(tmpdir(), 'machine-routes-bench-'));
  const schema = `bench_http_${process.pid}`;
  const plans: ServerPlan[] = [
    {
      label: 'fastify / sqlite',
      framework: 'fastify',
      store: `sqlite:${join(dir, 'fastify.db')}`,
      scenarios: ['raw', 'mr-stateless', 'mr-machineid', 'hw-machineid', 'hw-machineid-lock'],
    },
    {
      label: 'express / sqlite',
      framework: 'express',
      store: `sqlite:${join(dir, 'express.db')}`,
      scenarios: ['raw', 'mr-stateless', 'mr-machineid'],
    },
  ];
  const pgReachable = await pgQuery('SELECT 1').then(
    () => true,
    () => false,
  );
  if (pgReachable) {
    plans.push({
      label: 'fastify / postgres',
      framework: 'fastify',
      store: `${PG_URL}?schema=${schema}`,
      scenarios: ['mr-machineid', 'hw-machineid'],
    });
  } else {
    console.log(`(PostgreSQL at ${PG_URL} unreachable: skipped)`);
  }
  console.log(
    `autocannon: ${ROUNDS} interleaved rounds x ${DURATION}s per scenario, ${CONNECTIONS} connections, ` +
      `POST ${BODY}; server CPU per request read from /proc around each run; medians reported\n`,
  );

  // Every run's figures: a ratio of two scenarios run seconds apart, in the same round, is far
  // less exposed to the machine's drift than the ratio of their medians.
  const perRun = new Map<string, Figures[]>();
  const loads: number[] = [startLoad];
  try {
    for (const plan of plans) {
      const server = await startServer(plan);
      try {
        const base = `http://127.0.0.1:${server.port}`;
        const ids = {
          mr: plan.scenarios.includes('mr-machineid') ? await seed(`${base}/counters/create`) : [],
          hw: plan.scenarios.some((scenario) => scenario.startsWith('hw-'))
            ? await seed(`${base}/hw/create`)
            : [],
        };
        // Warm-up: JIT, statement caches and connection pools before anything is measured.
        for (const scenario of plan.scenarios) await load(server, base, scenario, ids, 1);
        for (let round = 0; round < ROUNDS; round += 1) {
          // Alternate the order, so no scenario always runs right after the same one.
          const order = round % 2 === 0 ? plan.scenarios : [...plan.scenarios].reverse();
          for (const scenario of order) {
            const key = `${plan.label}|${scenario}`;
            perRun.set(key, [
              ...(perRun.get(key) ?? []),
              await load(server, base, scenario, ids, DURATION),
            ]);
          }
          loads.push(loadavg()[0]!);
        }
      } finally {
        server.process.kill('SIGTERM');
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    if (pgReachable) await pgQuery(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
  }

  report(plans, perRun);
  headline(plans, perRun);
  reportRuns(plans, perRun);
  // Figures from a shared machine are only comparable within one run: say how busy it was.
  const sortedLoads = [...loads].sort((a, b) => a - b);
  console.log(
    `\ntotal ${((Date.now() - started) / 1000).toFixed(0)}s on ${cpus().length} cores, ` +
      `load average at start ${startLoad.toFixed(2)}, at end ${loadavg()[0]!.toFixed(2)}, ` +
      `over the rounds ${sortedLoads[0]!.toFixed(1)}-${sortedLoads.at(-1)!.toFixed(1)}`,
  );
}

/** Runs autocannon once against one scenario, reading the server's CPU time around it. */
async function load(
  server: { process: ChildProcess },
  base: string,
  scenario: Scenario,
  ids: { mr: string[]; hw: string[] },
  duration: number,
): Promise<Figures> {
  const pool = scenario === 'mr-machineid' ? ids.mr : scenario.startsWith('hw-') ? ids.hw : [];
  const prefix =
    scenario === 'mr-machineid' ? '/counters' : scenario === 'hw-machineid' ? '/hw' : '/hwl';
  const fixed = scenario === 'raw' ? '/raw/increment' : '/quotes/increment';
  const pid = server.process.pid!;
  const cpuBefore = serverCpuMicros(pid);
  const result = await autocannon({
    url: base,
    connections: CONNECTIONS,
    duration,
    requests: [
      rotatingRequest(
        (n) => (pool.length === 0 ? fixed : `${prefix}/${pool[n % pool.length]}/increment`),
        BODY,
      ),
    ],
  });
  const cpu = (serverCpuMicros(pid) - cpuBefore) / Math.max(1, result.requests.total);
  return {
    rps: result.requests.average,
    p99: result.latency.p99,
    cpu,
    non2xx: result.non2xx + result.errors,
  };
}

/** Creates INSTANCES instances through the server's own create route. */
async function seed(url: string): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 0; index < INSTANCES; index += 1) {
    const response = await fetch(url, { method: 'POST' });
    if (response.status !== 201)
      throw new Error(`seeding ${url}: HTTP ${response.status} ${await response.text()}`);
    ids.push(((await response.json()) as { data: { id: string } }).data.id);
  }
  return ids;
}

async function startServer(plan: ServerPlan): Promise<{ process: ChildProcess; port: number }> {
  const script = fileURLToPath(new URL('./server.ts', import.meta.url));
  const child = spawn(
    process.execPath,
    ['--conditions=machine-routes-source', '--import', 'tsx', script, plan.framework, plan.store],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const [port] = await readyLine(child, `server ${plan.label}`);
  return { process: child, port: Number(port) };
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/** The scenario a machine-bound scenario is compared with: the hand-written handler on its store. */
function handWrittenKey(plan: ServerPlan): string {
  return `fastify / ${plan.store.startsWith('sqlite:') ? 'sqlite' : 'postgres'}|hw-machineid`;
}

/** `baseline / scenario` of server CPU per request, round by round (higher is better). */
function cpuRatio(perRun: Map<string, Figures[]>, scenario: string, baseline: string) {
  const ours = perRun.get(scenario);
  const theirs = perRun.get(baseline);
  if (ours === undefined || theirs === undefined) return undefined;
  return pairedRatioOf(
    theirs.map((run) => run.cpu),
    ours.map((run) => run.cpu),
  );
}

function report(plans: ServerPlan[], perRun: Map<string, Figures[]>): void {
  const rows: string[][] = [
    [
      'server',
      'scenario',
      'req/s',
      'p99 ms',
      'CPU us/req',
      'vs raw: CPU (req/s)',
      'vs hand-written: CPU (req/s)',
      'non-2xx',
    ],
  ];
  const rawFastify = perRun.get('fastify / sqlite|raw');
  for (const plan of plans) {
    const raw = `${plan.label}|raw`;
    for (const scenario of plan.scenarios) {
      const key = `${plan.label}|${scenario}`;
      const runs = perRun.get(key);
      if (!runs) continue;
      const rps = median(runs.map((run) => run.rps));
      // Against the raw route of the same server (CPU), and raw Fastify (req/s) as before.
      const vsRaw = perRun.has(raw) ? cpuRatio(perRun, key, raw) : undefined;
      const vsHand = /machineid/.test(scenario)
        ? cpuRatio(perRun, key, handWrittenKey(plan))
        : undefined;
      const handRuns = perRun.get(handWrittenKey(plan));
      rows.push([
        plan.label,
        SCENARIO_LABELS[scenario],
        rps.toFixed(0),
        String(median(runs.map((run) => run.p99))),
        median(runs.map((run) => run.cpu)).toFixed(1),
        `${vsRaw === undefined ? '-' : `${vsRaw.median.toFixed(2)}x`} (${rawFastify ? `${(rps / median(rawFastify.map((run) => run.rps))).toFixed(2)}x` : '-'})`,
        vsHand === undefined || handRuns === undefined
          ? '-'
          : `${vsHand.median.toFixed(2)}x (${(rps / median(handRuns.map((run) => run.rps))).toFixed(2)}x)`,
        String(runs.reduce((sum, run) => sum + run.non2xx, 0)),
      ]);
    }
  }
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows)
    console.log(row.map((cell, column) => cell.padEnd(widths[column]!)).join('  '));
}

/** The comparisons the issues set goals on, by server CPU per request, with their quartiles. */
function headline(plans: ServerPlan[], perRun: Map<string, Figures[]>): void {
  console.log(
    '\nheadline: baseline CPU / scenario CPU per request, median of the rounds (quartiles); higher is better',
  );
  for (const plan of plans) {
    const pairs: [Scenario, string, string][] = [
      ['mr-stateless', `${plan.label}|raw`, 'stateless / raw'],
      ['mr-machineid', handWrittenKey(plan), 'machineId-bound / hand-written'],
      [
        'mr-machineid',
        `${plan.label}|hw-machineid-lock`,
        'machineId-bound / hand-written lock row',
      ],
    ];
    for (const [scenario, baseline, label] of pairs) {
      if (!plan.scenarios.includes(scenario)) continue;
      const ratio = cpuRatio(perRun, `${plan.label}|${scenario}`, baseline);
      if (ratio === undefined) continue;
      const note = plan.store.startsWith('sqlite:') ? '' : ' (server process only)';
      console.log(
        `  ${plan.label.padEnd(18)} ${label.padEnd(40)} ${ratio.median.toFixed(2)}x (${ratio.low.toFixed(2)}-${ratio.high.toFixed(2)})${note}`,
      );
    }
  }
}

/** Each run's req/s and server CPU per request, per scenario. */
function reportRuns(plans: ServerPlan[], perRun: Map<string, Figures[]>): void {
  console.log('\neach round (1, 2, ...): req/s, and server CPU us per request');
  for (const plan of plans) {
    for (const scenario of plan.scenarios) {
      const runs = perRun.get(`${plan.label}|${scenario}`) ?? [];
      console.log(
        `  ${plan.label.padEnd(18)} ${scenario.padEnd(18)} ${runs.map((run) => run.rps.toFixed(0)).join(', ')}`,
      );
      console.log(
        `  ${''.padEnd(18)} ${'  CPU us'.padEnd(18)} ${runs.map((run) => run.cpu.toFixed(1)).join(', ')}`,
      );
    }
  }
}

async function pgQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

await main();
