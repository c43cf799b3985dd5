/**
 * Where tracing's time goes on the machineId-bound route, function by function:
 * `npx tsx bench/http/profile-otel.ts [store]`.
 *
 * Runs bench/http/server.ts twice under `node --cpu-prof` on a SQLite file of its own (or the
 * PostgreSQL URL given), once without an OpenTelemetry SDK and once with bench/http/otel-sdk.ts
 * registered, drives each with the same fixed number of requests over 500 instances after the
 * same warm-up, and prints the self time per request of each function in both and their
 * difference, then the difference summed by origin (the SDK packages, async_hooks, this
 * repository's telemetry modules, the rest). Sampled wall time of the main thread, idle
 * excluded: on a busy machine absolute figures are inflated, the ranking much less.
 *
 * Environment: BENCH_REQUESTS (default 30000), BENCH_PROFILE_TOP (rows, default 45),
 * BENCH_ROUTE=stateless (the stateless route, POST /quotes/increment, instead).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { readyLine } from '../ready-line.js';
import { rotatingRequest } from '../rotating-request.js';

const [storeArg = 'sqlite'] = process.argv.slice(2);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 30_000);
const TOP = Number(process.env.BENCH_PROFILE_TOP ?? 45);
const STATELESS = process.env.BENCH_ROUTE === 'stateless';
const INSTANCES = 500;
const REPOSITORY = fileURLToPath(new URL('../../', import.meta.url));
const SERVER = fileURLToPath(new URL('./server.ts', import.meta.url));

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
}

async function profileOf(otel: boolean): Promise<Map<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), 'machine-routes-profile-otel-'));
  const store = storeArg === 'sqlite' ? `sqlite:${join(dir, 'bench.db')}` : storeArg;
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
      'fastify',
      store,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, BENCH_OTEL: otel ? '1' : '0' } },
  );
  try {
    const base = `http://127.0.0.1:${Number((await readyLine(server, 'server'))[0])}`;
    const ids: string[] = [];
    for (let index = 0; index < INSTANCES; index += 1) {
      const response = await fetch(`${base}/counters/create`, { method: 'POST' });
      ids.push(((await response.json()) as { data: { id: string } }).data.id);
    }
    const drive = (amount: number) =>
      autocannon({
        url: base,
        connections: 10,
        amount,
        requests: [
          rotatingRequest(
            (n) => (STATELESS ? '/quotes/increment' : `/counters/${ids[n % ids.length]}/increment`),
            JSON.stringify({ payload: { by: 1 } }),
          ),
        ],
      });
    await drive(5_000);
    const result = await drive(REQUESTS);
    if (result.non2xx + result.errors > 0) throw new Error(`${result.non2xx} non-2xx answers`);
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
    const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
    const self = new Map<string, number>();
    for (let index = 0; index < profile.samples.length; index += 1) {
      const node = nodes.get(profile.samples[index]!)!;
      const { functionName, url, lineNumber } = node.callFrame;
      if (functionName === '(idle)') continue;
      const short = url
        .replace(/^file:\/\//, '')
        .replace(/^.*node_modules\//, '~/')
        .replace(REPOSITORY, '');
      const key = `${functionName || '(anonymous)'} ${short}${url ? `:${lineNumber + 1}` : ''}`;
      self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas[index + 1] ?? 0));
    }
    return self;
  } finally {
    server.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}

const startLoad = loadavg();
const plain = await profileOf(false);
const traced = await profileOf(true);
const per = (value: number) => (value / (REQUESTS + 5_000 + INSTANCES)).toFixed(2).padStart(7);
const total = (map: Map<string, number>) => [...map.values()].reduce((a, b) => a + b, 0);
console.log(
  `${STATELESS ? 'stateless' : 'bound'} route, ${storeArg}: no SDK ${per(total(plain))} us, SDK ${per(total(traced))} us sampled ` +
    `non-idle time per request (start-up included in both); load average ` +
    `${startLoad.map((value) => value.toFixed(2)).join(' ')} at start, ` +
    `${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')} at end`,
);
const keys = new Set([...plain.keys(), ...traced.keys()]);
const rows = [...keys].map((key) => ({ key, a: plain.get(key) ?? 0, b: traced.get(key) ?? 0 }));
console.log(`${'diff'.padStart(7)} ${'no SDK'.padStart(7)} ${'SDK'.padStart(7)}  us per request`);
for (const { key, a, b } of [...rows].sort((x, y) => y.b - y.a - (x.b - x.a)).slice(0, TOP))
  console.log(`${per(b - a)} ${per(a)} ${per(b)}  ${key}`);

const ORIGINS: [string, RegExp][] = [
  ['@opentelemetry/*', /~\/@opentelemetry\//],
  ['async_hooks (context propagation)', /node:(internal\/)?async_hooks|async_local_storage/],
  [
    'src/runtime/telemetry, instrumentation, traced-route',
    /src\/runtime\/(telemetry\/|engine\/instrumentation|http\/traced-route)/,
  ],
  ['garbage collector', /^\(garbage collector\)/],
];
const byOrigin = new Map<string, number>();
for (const { key, a, b } of rows) {
  const origin = ORIGINS.find(([, pattern]) => pattern.test(key))?.[0] ?? 'everything else';
  byOrigin.set(origin, (byOrigin.get(origin) ?? 0) + b - a);
}
console.log('\ndifference by origin, us per request');
for (const [origin, value] of [...byOrigin].sort((x, y) => y[1] - x[1]))
  console.log(`${per(value)}  ${origin}`);
