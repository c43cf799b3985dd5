/**
 * HTTP benchmark: `npx tsx bench/http/run.ts`.
 *
 * Each server runs in its own process (bench/http/server.ts); this process drives it with
 * autocannon, so load generation and serving do not share an event loop. Every scenario is
 * run RUNS times, interleaved with the other scenarios of the same server (so drift of a
 * shared machine spreads evenly), and the median req/s and p99 latency are reported with
 * ratios to the raw framework and to the hand-written Fastify + XState + better-sqlite3
 * handler. Total runtime stays under 4 minutes.
 *
 * Environment: BENCH_DURATION (seconds per run, default 4), BENCH_CONNECTIONS (default 10),
 * BENCH_PG_URL (default the test database; the PostgreSQL server is skipped when unreachable).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import { readyLine } from '../ready-line.js';

const RUNS = 3;
const DURATION = Number(process.env.BENCH_DURATION ?? 4);
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
    `autocannon: ${RUNS} runs x ${DURATION}s per scenario, ${CONNECTIONS} connections, POST ${BODY}; medians reported\n`,
  );

  const results = new Map<string, Figures>();
  // Every run's figures: a ratio of two scenarios run back to back is less exposed to the
  // machine's drift between runs than the ratio of their medians (printed after the table).
  const perRun = new Map<string, Figures[]>();
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
        const runs = new Map<Scenario, Figures[]>();
        // Warm-up: JIT, statement caches and connection pools before anything is measured.
        for (const scenario of plan.scenarios) await load(base, scenario, ids, 1);
        for (let run = 0; run < RUNS; run += 1) {
          for (const scenario of plan.scenarios) {
            runs.set(scenario, [
              ...(runs.get(scenario) ?? []),
              await load(base, scenario, ids, DURATION),
            ]);
          }
        }
        for (const [scenario, figures] of runs) {
          results.set(`${plan.label}|${scenario}`, medianOf(figures));
          perRun.set(`${plan.label}|${scenario}`, figures);
        }
      } finally {
        server.process.kill('SIGTERM');
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    if (pgReachable) await pgQuery(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
  }

  report(plans, results);
  reportRuns(plans, perRun);
  // Figures from a shared machine are only comparable within one run: say how busy it was.
  console.log(
    `\ntotal ${((Date.now() - started) / 1000).toFixed(0)}s on ${cpus().length} cores, ` +
      `load average at start ${startLoad.toFixed(2)}, at end ${loadavg()[0]!.toFixed(2)}`,
  );
}

/** Runs autocannon once against one scenario. */
async function load(
  base: string,
  scenario: Scenario,
  ids: { mr: string[]; hw: string[] },
  duration: number,
): Promise<Figures> {
  const pool = scenario === 'mr-machineid' ? ids.mr : scenario.startsWith('hw-') ? ids.hw : [];
  const prefix =
    scenario === 'mr-machineid' ? '/counters' : scenario === 'hw-machineid' ? '/hw' : '/hwl';
  const fixed = scenario === 'raw' ? '/raw/increment' : '/quotes/increment';
  let next = 0;
  const result = await autocannon({
    url: base,
    connections: CONNECTIONS,
    duration,
    requests: [
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: BODY,
        // Instances in rotation: with far more instances than connections no two in-flight
        // requests target the same instance, so no request meets lock contention.
        setupRequest: (request) => ({
          ...request,
          path: pool.length === 0 ? fixed : `${prefix}/${pool[next++ % pool.length]}/increment`,
        }),
      },
    ],
  });
  return {
    rps: result.requests.average,
    p99: result.latency.p99,
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

function medianOf(runs: Figures[]): Figures {
  const median = (values: number[]) =>
    [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  return {
    rps: median(runs.map((run) => run.rps)),
    p99: median(runs.map((run) => run.p99)),
    non2xx: runs.reduce((sum, run) => sum + run.non2xx, 0),
  };
}

function report(plans: ServerPlan[], results: Map<string, Figures>): void {
  const rawFastify = results.get('fastify / sqlite|raw');
  // Machine-bound figures compare with the hand-written handler on the same store.
  const handWrittenFor = (plan: ServerPlan) =>
    results.get(
      `fastify / ${plan.store.startsWith('sqlite:') ? 'sqlite' : 'postgres'}|hw-machineid`,
    );
  const rows: string[][] = [
    ['server', 'scenario', 'req/s', 'p99 ms', 'vs raw fastify', 'vs hand-written', 'non-2xx'],
  ];
  for (const plan of plans) {
    for (const scenario of plan.scenarios) {
      const figures = results.get(`${plan.label}|${scenario}`);
      if (!figures) continue;
      rows.push([
        plan.label,
        SCENARIO_LABELS[scenario],
        figures.rps.toFixed(0),
        String(figures.p99),
        rawFastify ? `${(figures.rps / rawFastify.rps).toFixed(2)}x` : '-',
        handWrittenFor(plan) && /machineid/.test(scenario)
          ? `${(figures.rps / handWrittenFor(plan)!.rps).toFixed(2)}x`
          : '-',
        String(figures.non2xx),
      ]);
    }
  }
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows)
    console.log(row.map((cell, column) => cell.padEnd(widths[column]!)).join('  '));
}

/** Each run's req/s per scenario, and each run's ratio of machine-routes stateless to raw. */
function reportRuns(plans: ServerPlan[], perRun: Map<string, Figures[]>): void {
  console.log('\nreq/s of each run (run 1, 2, ...), and stateless / raw of the same run:');
  for (const plan of plans) {
    for (const scenario of plan.scenarios) {
      const runs = perRun.get(`${plan.label}|${scenario}`) ?? [];
      console.log(
        `  ${plan.label.padEnd(18)} ${scenario.padEnd(18)} ${runs.map((run) => run.rps.toFixed(0)).join(', ')}`,
      );
    }
    const raw = perRun.get(`${plan.label}|raw`);
    const stateless = perRun.get(`${plan.label}|mr-stateless`);
    if (raw === undefined || stateless === undefined) continue;
    const ratios = stateless.map((run, index) => run.rps / raw[index]!.rps).sort((a, b) => a - b);
    console.log(
      `  ${plan.label.padEnd(18)} stateless / raw per run: ${ratios.map((ratio) => `${ratio.toFixed(2)}x`).join(', ')} (median ${ratios[Math.floor(ratios.length / 2)]!.toFixed(2)}x)`,
    );
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
