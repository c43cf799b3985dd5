/**
 * Reads benchmark: `npx tsx bench/reads/run.ts`. A machine-routes read (zero-write GET of the
 * last committed state, SQLite file) against raw Fastify serving the same JSON from memory, in
 * one server process (bench/reads/server.ts) driven by autocannon from this one. The two
 * scenarios alternate RUNS times over 500 instances; medians and the load average are printed.
 *
 * Environment: BENCH_DURATION (seconds per run, default 4), BENCH_CONNECTIONS (default 10).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { readyLine } from '../ready-line.js';

const RUNS = 5;
const DURATION = Number(process.env.BENCH_DURATION ?? 4);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);

type Scenario = 'raw' | 'read';
const PATHS: Record<Scenario, string> = { raw: '/raw', read: '/counters' };

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'machine-routes-bench-reads-'));
  const startLoad = loadavg()[0]!;
  const script = fileURLToPath(new URL('./server.ts', import.meta.url));
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', script, `sqlite:${join(dir, 'reads.db')}`],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    const [port, ...ids] = await readyLine(child, 'server');
    const base = `http://127.0.0.1:${port}`;
    const results: Record<Scenario, number[]> = { raw: [], read: [] };
    const p99: Record<Scenario, number[]> = { raw: [], read: [] };
    let failures = 0;
    for (const scenario of ['raw', 'read'] as Scenario[]) await drive(base, ids, scenario, 1); // warm-up
    for (let run = 0; run < RUNS; run += 1) {
      for (const scenario of ['raw', 'read'] as Scenario[]) {
        const result = await drive(base, ids, scenario, DURATION);
        results[scenario].push(result.requests.average);
        p99[scenario].push(result.latency.p99);
        failures += result.non2xx + result.errors;
      }
    }
    const median = (values: number[]) =>
      [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const raw = median(results.raw);
    const read = median(results.read);
    console.log(
      `reads benchmark: ${RUNS} alternating runs of ${DURATION} s, ${CONNECTIONS} connections, 500 instances, SQLite file`,
    );
    console.log(`| scenario | median req/s | runs | median p99 ms | vs raw |`);
    console.log(`| --- | ---: | --- | ---: | ---: |`);
    console.log(
      `| raw Fastify, same JSON | ${raw.toFixed(0)} | ${results.raw.map((v) => v.toFixed(0)).join(' ')} | ${median(p99.raw)} | 1.00x |`,
    );
    console.log(
      `| machine-routes read | ${read.toFixed(0)} | ${results.read.map((v) => v.toFixed(0)).join(' ')} | ${median(p99.read)} | ${(read / raw).toFixed(2)}x |`,
    );
    console.log(
      `non-2xx or errors: ${failures}; load average (1 min) ${startLoad.toFixed(2)} at start, ${loadavg()[0]!.toFixed(2)} at end`,
    );
  } finally {
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

function drive(base: string, ids: string[], scenario: Scenario, duration: number) {
  let next = 0;
  return autocannon({
    url: base,
    connections: CONNECTIONS,
    duration,
    requests: [
      {
        method: 'GET',
        setupRequest: (request) => ({
          ...request,
          path: `${PATHS[scenario]}/${ids[next++ % ids.length]}/status`,
        }),
      },
    ],
  });
}

await main();
