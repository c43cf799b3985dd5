/**
 * Heap bytes allocated per request, raw and stateless, A/B: `npx tsx bench/http/alloc.ts
 * <fastify|express> [<checkout> ...]`.
 *
 * Starts bench/http/server.ts of each checkout (in-memory store) under `--trace-gc-nvp`, whose
 * line per collection says how many bytes were allocated since the one before, drives each
 * scenario with a fixed number of requests after a warm-up, and sums what the collections
 * during the run report. Unlike CPU time this hardly depends on the machine's load (the JIT
 * decides a little: escape analysis removes some allocations), so it shows changes of a few
 * hundred bytes per request that CPU figures on a shared machine cannot; what allocation costs
 * in CPU time it does not say. A run's first and last collection are counted whole, so expect
 * an error of up to one young generation (16 MiB by default) over BENCH_REQUESTS requests.
 *
 * Environment: BENCH_REQUESTS (per scenario, default 200000), BENCH_SCENARIOS
 * (`raw,mr-stateless` by default, or paths of the server).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { driveStateless as drive } from './stateless-load.js';

const [framework = 'fastify', ...checkouts] = process.argv.slice(2);
if (checkouts.length === 0) checkouts.push(resolve(import.meta.dirname, '../..'));
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 200_000);
const SCENARIOS = (process.env.BENCH_SCENARIOS ?? 'raw,mr-stateless').split(',');

interface Server {
  child: ChildProcess;
  port: number;
  /** Bytes the collections so far reported allocated. */
  allocated(): number;
}

async function start(checkout: string): Promise<Server> {
  const child = spawn(
    process.execPath,
    [
      '--trace-gc-nvp',
      '--conditions=machine-routes-source',
      '--import',
      'tsx',
      resolve(checkout, 'bench/http/server.ts'),
      framework,
      'memory:',
    ],
    { cwd: checkout, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let allocated = 0;
  const port = await new Promise<number>((ready, fail) => {
    child.once('exit', (code) => fail(new Error(`server of ${checkout} exited with ${code}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const ready_ = /^READY (\d+)/.exec(line);
      if (ready_) ready(Number(ready_[1]));
      const bytes = / allocated=(\d+)/.exec(line);
      if (bytes) allocated += Number(bytes[1]);
    });
  });
  return { child, port, allocated: () => allocated };
}

console.log(
  `${framework}, ${REQUESTS} requests per scenario; heap bytes allocated per request ` +
    '(sum of the collections during the run)',
);
for (const checkout of checkouts) {
  const server = await start(checkout);
  try {
    const row: string[] = [];
    for (const scenario of SCENARIOS) {
      await drive(server.port, scenario, 20_000);
      // Let the warm-up's last collection report before the mark.
      await new Promise((done) => setTimeout(done, 200));
      const before = server.allocated();
      await drive(server.port, scenario, REQUESTS);
      await new Promise((done) => setTimeout(done, 200));
      row.push(`${scenario} ${Math.round((server.allocated() - before) / REQUESTS)} B`);
    }
    console.log(`${checkout}: ${row.join(', ')}`);
  } finally {
    server.child.kill('SIGTERM');
  }
}
