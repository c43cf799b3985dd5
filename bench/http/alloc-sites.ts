/**
 * Where a scenario's heap bytes per request are allocated, by function:
 * `npx tsx bench/http/alloc-sites.ts [fastify|express] [scenario] [requests]`.
 *
 * bench/http/alloc.ts says how many bytes a request allocates; this says where. It starts
 * bench/http/server.ts (in-memory store) with bench/http/alloc-sites-hook.mjs preloaded, warms
 * the scenario up, then records V8's sampling heap profile (objects collected since included)
 * over a fixed number of requests. Each sampled allocation is charged to the nearest
 * machine-routes frame on its stack (a file under src/) and the function that allocated it, so
 * Fastify's or Node's work done on our behalf (a response's headers) shows under the layer's
 * function that asked for it; allocations with no machine-routes frame are the framework's own
 * and are summed in one line (compare with the `raw` scenario). Sampling: a row under a few
 * tens of bytes is noise; the total matches alloc.ts within a few percent. The profiler slows
 * the server several times, so what is paid once per millisecond (a record id's new seed) is
 * charged to fewer requests than at full speed and shows larger than it is.
 *
 * Environment: BENCH_HEAP_INTERVAL (sampling interval in bytes, default 128), BENCH_PROFILE_TOP
 * (rows, default 30).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { readyLine } from '../ready-line.js';
import { driveStateless } from './stateless-load.js';

const [framework = 'fastify', scenario = 'mr-stateless', requestsArg] = process.argv.slice(2);
const REQUESTS = Number(requestsArg ?? 20_000);
const TOP = Number(process.env.BENCH_PROFILE_TOP ?? 30);
const ROOT = resolve(import.meta.dirname, '../..');

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children?: ProfileNode[];
}

const dir = mkdtempSync(join(tmpdir(), 'alloc-sites-'));
const profilePath = join(dir, 'heap.json');
const child = spawn(
  process.execPath,
  [
    '--conditions=machine-routes-source',
    '--import',
    'tsx',
    '--import',
    resolve(ROOT, 'bench/http/alloc-sites-hook.mjs'),
    resolve(ROOT, 'bench/http/server.ts'),
    framework,
    'memory:',
  ],
  {
    cwd: ROOT,
    env: { ...process.env, BENCH_HEAP_PROFILE: profilePath },
    stdio: ['ignore', 'pipe', 'pipe'],
  },
);
const written = new Promise<void>((done) =>
  createInterface({ input: child.stderr! }).on('line', (line) => {
    if (line === 'heap profile written') done();
    else process.stderr.write(`${line}\n`);
  }),
);
const port = Number((await readyLine(child, 'server'))[0]);
const drive = (amount: number) => driveStateless(port, scenario, amount);

let head: ProfileNode;
try {
  await drive(20_000);
  child.kill('SIGUSR2');
  await new Promise((done) => setTimeout(done, 200));
  await drive(REQUESTS);
  child.kill('SIGHUP');
  await written;
  head = (JSON.parse(readFileSync(profilePath, 'utf8')) as { head: ProfileNode }).head;
} finally {
  child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}

const name = (frame: ProfileNode['callFrame']): string => {
  const file = frame.url.includes('/src/')
    ? frame.url.slice(frame.url.indexOf('/src/') + 1)
    : (frame.url.split('/').pop() ?? '');
  return `${frame.functionName || '(anonymous)'} ${file}`.trim();
};
const bytes = new Map<string, number>();
let frameworkOwn = 0;
let total = 0;
const walk = (node: ProfileNode, ours: string | null): void => {
  const own = node.callFrame.url.includes('/src/') ? name(node.callFrame) : ours;
  if (node.selfSize > 0) {
    total += node.selfSize;
    if (own === null) frameworkOwn += node.selfSize;
    else {
      const allocator = name(node.callFrame);
      const key = allocator === own ? own : `${own}  <-  ${allocator}`;
      bytes.set(key, (bytes.get(key) ?? 0) + node.selfSize);
    }
  }
  for (const next of node.children ?? []) walk(next, own);
};
walk(head, null);

const perRequest = (value: number): string => (value / REQUESTS).toFixed(0).padStart(7);
console.log(
  `${framework} ${scenario}, ${REQUESTS} requests: ${perRequest(total)} B sampled per request, ` +
    `${perRequest(total - frameworkOwn).trim()} B under a machine-routes frame`,
);
console.log('B/request  machine-routes frame  <-  allocating function');
for (const [key, value] of [...bytes]
  .filter(([, value]) => value >= REQUESTS)
  .sort((a, b) => b[1] - a[1])
  .slice(0, TOP))
  console.log(`${perRequest(value)}    ${key}`);
console.log(`${perRequest(frameworkOwn)}    (no machine-routes frame: the framework's own)`);
