/**
 * Where the stateless route spends more than the raw framework, function by function:
 * `npx tsx bench/http/profile-diff.ts [framework] [scenario] [baseline]`.
 *
 * Runs bench/http/server.ts twice under `node --cpu-prof` (in-memory store), once driven with
 * the baseline scenario (default `raw`) and once with the scenario (default `mr-stateless`),
 * each with the same fixed number of requests after the same warm-up, and prints the self time
 * per request of each function in both profiles and their difference (start-up costs are the
 * same in both, so they cancel). Microseconds are sampled wall time of the main thread, idle
 * excluded: on a busy machine absolute figures are inflated, the ranking much less.
 *
 * A scenario is `raw`, `mr-stateless` or a path of the server (`/quotes/increment`).
 *
 * Environment: BENCH_REQUESTS (default 60000), BENCH_PROFILE_TOP (rows, default 45),
 * BENCH_SERVER (another server script, same arguments and READY line, default
 * bench/http/server.ts).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { driveStateless } from './stateless-load.js';
import { readyLine } from '../ready-line.js';

const [framework = 'fastify', scenario = 'mr-stateless', baseline = 'raw'] = process.argv.slice(2);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 60_000);
const TOP = Number(process.env.BENCH_PROFILE_TOP ?? 45);
const REPOSITORY = fileURLToPath(new URL('../../', import.meta.url));
const SERVER =
  process.env.BENCH_SERVER === undefined
    ? fileURLToPath(new URL('./server.ts', import.meta.url))
    : resolve(REPOSITORY, process.env.BENCH_SERVER);

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

async function profileOf(name: string): Promise<Map<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), 'machine-routes-profile-diff-'));
  const server = spawn(
    process.execPath,
    [
      '--cpu-prof',
      `--cpu-prof-dir=${dir}`,
      '--cpu-prof-interval=250',
      '--conditions=machine-routes-source',
      '--import',
      'tsx',
      SERVER,
      framework,
      'memory:',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const port = Number((await readyLine(server, 'server'))[0]);
  const drive = (amount: number) => driveStateless(port, name, amount);
  await drive(10_000);
  await drive(REQUESTS);
  await new Promise<void>((resolve) => {
    server.removeAllListeners('exit');
    server.on('exit', () => resolve());
    server.kill('SIGINT');
  });
  const file = readdirSync(dir).find((entry) => entry.endsWith('.cpuprofile'))!;
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
    nodes: ProfileNode[];
    samples: number[];
    timeDeltas: number[];
  };
  rmSync(dir, { recursive: true, force: true });
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<string, number>();
  for (let index = 0; index < profile.samples.length; index += 1) {
    const node = nodes.get(profile.samples[index]!)!;
    const { functionName, url, lineNumber, columnNumber } = node.callFrame;
    if (functionName === '(idle)') continue;
    const short = url
      .replace(/^file:\/\//, '')
      .replace(/^.*node_modules\//, '~/')
      .replace(REPOSITORY, '');
    const key = `${functionName || '(anonymous)'} ${short}${url ? `:${lineNumber + 1}:${columnNumber + 1}` : ''}`;
    self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas[index + 1] ?? 0));
  }
  return self;
}

const base = await profileOf(baseline);
const measured = await profileOf(scenario);
const total = (map: Map<string, number>) => [...map.values()].reduce((a, b) => a + b, 0);
const perRequest = (value: number) => (value / (REQUESTS + 10_000)).toFixed(2).padStart(7);
console.log(
  `${framework}: ${baseline} ${perRequest(total(base))} us, ${scenario} ${perRequest(total(measured))} us ` +
    `sampled non-idle time per request (start-up included in both)`,
);
const keys = new Set([...base.keys(), ...measured.keys()]);
const rows = [...keys]
  .map((key) => ({ key, a: base.get(key) ?? 0, b: measured.get(key) ?? 0 }))
  .sort((x, y) => y.b - y.a - (x.b - x.a))
  .slice(0, TOP);
console.log(
  `${'diff'.padStart(7)} ${baseline.padStart(7)} ${scenario.padStart(7)}  us per request`,
);
for (const { key, a, b } of rows)
  console.log(`${perRequest(b - a)} ${perRequest(a)} ${perRequest(b)}  ${key}`);
