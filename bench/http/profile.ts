/**
 * CPU profile of one benchmark scenario: `npx tsx bench/http/profile.ts <scenario> [store] [framework]`.
 *
 * Starts bench/http/server.ts under `node --cpu-prof`, seeds instances, drives the scenario
 * (`raw`, `mr-stateless`, `mr-machineid`, `hw-machineid`, `mr-read`: GET /counters/{id}/status) with autocannon for BENCH_DURATION
 * seconds (default 8), stops the server (which writes its profile) and prints the functions
 * with the most self time, then the heaviest inclusive frames of this repository's sources.
 * Store: `sqlite` (default, a temp file) or a PostgreSQL URL; framework: `fastify` (default) or
 * `express`. BENCH_PROFILE_TOP sets how many rows are printed (default 40).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { readyLine } from '../ready-line.js';
import { rotatingRequest } from '../rotating-request.js';

const [scenario = 'mr-machineid', storeArg = 'sqlite', framework = 'fastify'] =
  process.argv.slice(2);
const DURATION = Number(process.env.BENCH_DURATION ?? 8);
const TOP = Number(process.env.BENCH_PROFILE_TOP ?? 40);
const BODY = JSON.stringify({ payload: { by: 1 } });

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const dir = mkdtempSync(join(tmpdir(), 'machine-routes-profile-'));
const store = storeArg === 'sqlite' ? `sqlite:${join(dir, 'bench.db')}` : storeArg;
const script = fileURLToPath(new URL('./server.ts', import.meta.url));
const server = spawn(
  process.execPath,
  [
    '--cpu-prof',
    `--cpu-prof-dir=${dir}`,
    '--conditions=machine-routes-source',
    '--import',
    'tsx',
    script,
    framework,
    store,
  ],
  { stdio: ['ignore', 'pipe', 'inherit'] },
);
const port = Number((await readyLine(server, 'server'))[0]);
const base = `http://127.0.0.1:${port}`;
const ids: string[] = [];
const bound = scenario === 'mr-machineid' || scenario === 'mr-read';
if (bound || scenario === 'hw-machineid') {
  const create = `${base}/${bound ? 'counters' : 'hw'}/create`;
  for (let index = 0; index < 500; index += 1) {
    const response = await fetch(create, { method: 'POST' });
    ids.push(((await response.json()) as { data: { id: string } }).data.id);
  }
}
const prefix = bound ? '/counters' : '/hw';
const action = scenario === 'mr-read' ? 'status' : 'increment';
const fixed = scenario === 'raw' ? '/raw/increment' : '/quotes/increment';
const result = await autocannon({
  url: base,
  connections: 10,
  duration: DURATION,
  requests: [
    rotatingRequest(
      (n) => (ids.length === 0 ? fixed : `${prefix}/${ids[n % ids.length]}/${action}`),
      scenario === 'mr-read' ? undefined : BODY,
    ),
  ],
});
console.log(
  `${scenario} on ${framework} / ${storeArg}: ${result.requests.average.toFixed(0)} req/s, ` +
    `p99 ${result.latency.p99} ms, non-2xx ${result.non2xx + result.errors}`,
);
await new Promise<void>((resolve) => {
  server.removeAllListeners('exit');
  server.on('exit', () => resolve());
  server.kill('SIGINT');
});

const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'));
if (!file) throw new Error('no profile written');
const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
rmSync(dir, { recursive: true, force: true });

// Self time per node from the samples (time deltas belong to the sample they precede).
const selfByNode = new Map<number, number>();
for (let index = 0; index < profile.samples.length; index += 1) {
  const id = profile.samples[index]!;
  selfByNode.set(id, (selfByNode.get(id) ?? 0) + (profile.timeDeltas[index + 1] ?? 0));
}
const total = [...selfByNode.values()].reduce((sum, value) => sum + value, 0);
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const parentOf = new Map<number, number>();
for (const node of profile.nodes)
  for (const child of node.children ?? []) parentOf.set(child, node.id);

// Paths relative to this checkout (main or a worktree), so the filter below finds src/ and bench/.
const REPOSITORY = fileURLToPath(new URL('../../', import.meta.url));
const label = (node: ProfileNode) => {
  const { functionName, url, lineNumber } = node.callFrame;
  const short = url
    .replace(/^file:\/\//, '')
    .replace(/^.*node_modules\//, '~/')
    .replace(REPOSITORY, '');
  return `${functionName || '(anonymous)'} ${short}${url ? `:${lineNumber + 1}` : ''}`;
};

const self = new Map<string, number>();
const inclusive = new Map<string, number>();
for (const [id, time] of selfByNode) {
  const node = nodes.get(id)!;
  self.set(label(node), (self.get(label(node)) ?? 0) + time);
  // Each frame on the stack once (recursion counted once).
  const seen = new Set<string>();
  for (
    let current: number | undefined = id;
    current !== undefined;
    current = parentOf.get(current)
  ) {
    const key = label(nodes.get(current)!);
    if (seen.has(key)) continue;
    seen.add(key);
    inclusive.set(key, (inclusive.get(key) ?? 0) + time);
  }
}
const print = (title: string, entries: Map<string, number>, filter: (key: string) => boolean) => {
  console.log(`\n${title}`);
  for (const [key, time] of [...entries]
    .filter(([key]) => filter(key))
    .sort((a, b) => b[1] - a[1])
    .slice(0, TOP))
    console.log(
      `${((time / total) * 100).toFixed(1).padStart(5)}%  ${(time / 1000).toFixed(0).padStart(6)} ms  ${key}`,
    );
};
console.log(`profile: ${(total / 1000).toFixed(0)} ms sampled`);
print('self time', self, () => true);
print('inclusive time, repository sources', inclusive, (key) => / (src|bench)\//.test(key));
