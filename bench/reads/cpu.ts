/**
 * Server CPU per request of the reads benchmark, A/B across source trees:
 * `npx tsx bench/reads/cpu.ts [<other checkout> ...]`.
 *
 * Starts bench/reads/server.ts of this checkout (and of each other checkout given, e.g. an
 * older commit exported with `git archive`, with `node_modules` linked), each on its own SQLite
 * file, then drives the scenarios in turn (raw Fastify of this checkout, then the read of every
 * server) ROUNDS times with a fixed number of requests, and reads each server process's CPU time
 * (user + system, /proc/<pid>/stat) around every batch. Prints the median microseconds per
 * request. On a shared machine CPU per request moves far less than req/s; interleaving the
 * scenarios spreads the remaining drift over all of them.
 *
 * Environment: BENCH_REQUESTS (per batch, default 20000), BENCH_ROUNDS (default 7),
 * BENCH_CONNECTIONS (default 10).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { readyLine } from '../ready-line.js';
import { rotatingRequest } from '../rotating-request.js';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
// Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux).
const TICK_US = 10_000;

interface Server {
  label: string;
  child: ChildProcess;
  base: string;
  ids: string[];
}

const here = fileURLToPath(new URL('../..', import.meta.url));
const trees = [here, ...process.argv.slice(2).map((tree) => resolve(tree))];
const dir = mkdtempSync(join(tmpdir(), 'machine-routes-bench-reads-cpu-'));
const servers: Server[] = [];

function cpuUs(pid: number): number {
  // Fields after the command name (which may hold spaces): utime and stime are 14th and 15th.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

async function start(tree: string, index: number): Promise<Server> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      resolve(tree, process.env.BENCH_SERVER ?? 'bench/reads/server.ts'),
      `sqlite:${join(dir, `${index}.db`)}`,
    ],
    { cwd: tree, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const [port, ...ids] = await readyLine(child, `server of ${tree}`);
  return { label: index === 0 ? 'this tree' : tree, child, base: `http://127.0.0.1:${port}`, ids };
}

async function batch(server: Server, path: string, amount: number): Promise<number> {
  const before = cpuUs(server.child.pid!);
  const result = await autocannon({
    url: server.base,
    connections: CONNECTIONS,
    amount,
    requests: [rotatingRequest((n) => `${path}/${server.ids[n % server.ids.length]}/status`)],
  });
  if (result.non2xx + result.errors > 0) throw new Error(`${server.label} ${path}: failures`);
  return (cpuUs(server.child.pid!) - before) / amount;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

try {
  for (const [index, tree] of trees.entries()) servers.push(await start(tree, index));
  const scenarios = [
    { label: 'raw Fastify, same JSON', server: servers[0]!, path: '/raw' },
    ...servers.map((server) => ({ label: `read, ${server.label}`, server, path: '/counters' })),
    // More paths of this tree's server (experiments), comma-separated.
    ...(process.env.BENCH_EXTRA_PATHS ?? '')
      .split(',')
      .filter(Boolean)
      .map((path) => ({ label: `${path}, this tree`, server: servers[0]!, path })),
  ];
  const samples = scenarios.map(() => [] as number[]);
  const startLoad = loadavg()[0]!;
  for (const scenario of scenarios) await batch(scenario.server, scenario.path, REQUESTS / 2);
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const [index, scenario] of scenarios.entries()) {
      samples[index]!.push(await batch(scenario.server, scenario.path, REQUESTS));
    }
  }
  console.log(
    `server CPU per request: ${ROUNDS} interleaved rounds of ${REQUESTS} requests, ${CONNECTIONS} connections, SQLite file`,
  );
  console.log('| scenario | median us/request | rounds |');
  console.log('| --- | ---: | --- |');
  for (const [index, scenario] of scenarios.entries()) {
    const values = samples[index]!;
    console.log(
      `| ${scenario.label} | ${median(values).toFixed(1)} | ${values.map((v) => v.toFixed(0)).join(' ')} |`,
    );
  }
  console.log(
    `load average (1 min) ${startLoad.toFixed(2)} at start, ${loadavg()[0]!.toFixed(2)} at end`,
  );
} finally {
  for (const server of servers) server.child.kill();
  rmSync(dir, { recursive: true, force: true });
}
