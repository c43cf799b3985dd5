/**
 * Reads benchmark: `npx tsx bench/reads/run.ts`. A machine-routes read (zero-write GET of the
 * last committed state, SQLite file) against raw Fastify serving the same JSON from memory, in
 * one server process (bench/reads/server.ts) driven by autocannon from this one. The two
 * scenarios alternate RUNS times over 500 instances; medians and the load average are printed.
 * The headline is the server's CPU time per request (read from /proc around each run), as
 * raw / read round by round: req/s on this shared host mostly measures the machine's other work.
 *
 * Environment: BENCH_ROUNDS (default 9), BENCH_DURATION (seconds per run, default 2),
 * BENCH_CONNECTIONS (default 10).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { readyLine } from '../ready-line.js';
import { pairedRatio, serverCpuMicros } from '../server-cpu.js';
import { rotatingRequest } from '../rotating-request.js';

const RUNS = Number(process.env.BENCH_ROUNDS ?? 9);
const DURATION = Number(process.env.BENCH_DURATION ?? 2);
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
    const cpu: Record<Scenario, number[]> = { raw: [], read: [] };
    const loads: number[] = [startLoad];
    let failures = 0;
    for (const scenario of ['raw', 'read'] as Scenario[]) await drive(base, ids, scenario, 1); // warm-up
    for (let run = 0; run < RUNS; run += 1) {
      for (const scenario of (run % 2 === 0 ? ['raw', 'read'] : ['read', 'raw']) as Scenario[]) {
        const before = serverCpuMicros(child.pid!);
        const result = await drive(base, ids, scenario, DURATION);
        cpu[scenario].push((serverCpuMicros(child.pid!) - before) / result.requests.total);
        results[scenario].push(result.requests.average);
        p99[scenario].push(result.latency.p99);
        failures += result.non2xx + result.errors;
      }
      loads.push(loadavg()[0]!);
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
      `server CPU per request (us, median): raw ${median(cpu.raw).toFixed(1)}, read ${median(cpu.read).toFixed(1)}`,
    );
    console.log(
      `headline: raw CPU / read CPU per request, per round ${pairedRatio(cpu.raw, cpu.read)}`,
    );
    loads.sort((a, b) => a - b);
    console.log(
      `non-2xx or errors: ${failures}; load average (1 min) ${startLoad.toFixed(2)} at start, ${loadavg()[0]!.toFixed(2)} at end, over the rounds ${loads[0]!.toFixed(1)}-${loads.at(-1)!.toFixed(1)}`,
    );
  } finally {
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

function drive(base: string, ids: string[], scenario: Scenario, duration: number) {
  return autocannon({
    url: base,
    connections: CONNECTIONS,
    duration,
    requests: [rotatingRequest((n) => `${PATHS[scenario]}/${ids[n % ids.length]}/status`)],
  });
}

await main();
