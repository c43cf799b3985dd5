/**
 * Idle live-state subscribers at scale (issue 34): `npx tsx bench/scale/subscribers.ts`
 * (`ulimit -n` must allow N + a few hundred descriptors per process: 10,000 subscribers need
 * about 10,300 in this process and in the server; `ulimit -n 20000` first if it is lower).
 *
 * 1. One server per target on one process, in turn: machine-routes' state stream on SQLite, and
 *    the baseline, a raw Fastify SSE endpoint holding the same connections
 *    (subscribers-server.ts). N idle subscribers (raw `net` sockets writing a GET by hand, so
 *    the client stays cheap) open on one instance; the server's RSS (/proc/<pid>/status) and
 *    heap after two forced collections (GET /memory) are read before and at N = 1,000 and
 *    10,000: per subscriber = delta / N. Then one commit on that instance, COMMITS times: the
 *    time from sending it to each subscriber's receipt of the new state, p50/p99/max.
 * 2. Two machine-routes servers on one PostgreSQL (a private cluster, private-postgres.ts),
 *    the subscribers split across both, the commit made through the first: the notice reaches
 *    the second by LISTEN/NOTIFY.
 * Client and servers share this 2-core host: fan-out times include this process receiving
 * N messages on one event loop.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { readyLine } from '../ready-line.js';
import { startPrivatePostgres } from './private-postgres.js';

const SIZES = (process.env.BENCH_SUBSCRIBERS ?? '1000,10000').split(',').map(Number);
const COMMITS = Number(process.env.BENCH_COMMITS ?? 5);
const script = fileURLToPath(new URL('./subscribers-server.ts', import.meta.url));
const load = () => loadavg()[0]!.toFixed(2);

interface Server {
  port: number;
  pid: number;
  child: ChildProcess;
}

async function startServer(kind: 'mr' | 'raw', store?: string): Promise<Server> {
  const child = spawn(
    process.execPath,
    [
      '--expose-gc',
      '--conditions=machine-routes-source',
      '--import',
      'tsx',
      script,
      kind,
      ...(store ? [store] : []),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const [port, pid] = await readyLine(child, `${kind} server`);
  return { port: Number(port), pid: Number(pid), child };
}

function call(port: number, method: string, path: string, body?: unknown): Promise<string> {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? '' : JSON.stringify(body);
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        headers: text ? { 'content-type': 'application/json' } : {},
      },
      (res) => {
        let data = '';
        res.on('data', (chunk: Buffer) => (data += chunk.toString()));
        res.on('end', () =>
          (res.statusCode ?? 500) < 300
            ? resolve(data)
            : reject(new Error(`${method} ${path}: ${res.statusCode} ${data}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

interface Memory {
  rssKb: number;
  heapKb: number;
  externalKb: number;
}

async function memory(server: Server): Promise<Memory> {
  const usage = JSON.parse(await call(server.port, 'GET', '/memory')) as {
    heapUsed: number;
    external: number;
  };
  // Read after the collections: RSS of the server process as the kernel counts it.
  const status = readFileSync(`/proc/${server.pid}/status`, 'utf8');
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)![1]);
  return { rssKb, heapKb: usage.heapUsed / 1024, externalKb: usage.external / 1024 };
}

/** One idle subscriber: resolves once the first state arrived. */
class Subscriber {
  readonly socket: Socket;
  armedAt = 0;
  receivedAt = 0;
  #first = '';
  #ready = false;

  constructor(port: number, path: string, onReady: () => void, onError: (e: Error) => void) {
    this.socket = connect(port, '127.0.0.1', () => {
      this.socket.write(
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n`,
      );
    });
    this.socket.on('error', onError);
    this.socket.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1');
      if (!this.#ready) {
        this.#first += text;
        if (!this.#first.startsWith('HTTP/1.1 200'))
          return onError(new Error(this.#first.slice(0, 200)));
        if (this.#first.includes('event: state')) {
          this.#ready = true;
          this.#first = '';
          onReady();
        }
        return;
      }
      if (this.armedAt > 0 && this.receivedAt === 0 && text.includes('event: state')) {
        this.receivedAt = performance.now();
        fanOut.pending -= 1;
        if (fanOut.pending === 0) fanOut.done();
      }
    });
  }
}

const fanOut = { pending: 0, done: () => {} };

async function open(
  subscribers: Subscriber[],
  count: number,
  targets: { port: number; path: string }[],
) {
  // In batches, so the listen backlog never overflows (a dropped SYN waits 1 s to retry).
  while (subscribers.length < count) {
    const batch = Math.min(200, count - subscribers.length);
    await new Promise<void>((resolve, reject) => {
      let left = batch;
      for (let i = 0; i < batch; i += 1) {
        const target = targets[subscribers.length % targets.length]!;
        subscribers.push(
          new Subscriber(target.port, target.path, () => --left === 0 && resolve(), reject),
        );
      }
    });
  }
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

/** COMMITS commits, one at a time; the median over commits of each subscriber-side figure. */
async function measureFanOut(subscribers: Subscriber[], commit: () => Promise<unknown>) {
  const rounds: { p50: number; p99: number; max: number }[] = [];
  for (let round = 0; round < COMMITS; round += 1) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const all = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`fan-out: ${fanOut.pending} never received`)),
        120_000,
      );
      fanOut.done = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    fanOut.pending = subscribers.length;
    const start = performance.now();
    for (const subscriber of subscribers) {
      subscriber.armedAt = start;
      subscriber.receivedAt = 0;
    }
    await commit();
    await all;
    const times = subscribers.map((s) => s.receivedAt - start).sort((a, b) => a - b);
    rounds.push({
      p50: percentile(times, 50),
      p99: percentile(times, 99),
      max: times[times.length - 1]!,
    });
    for (const subscriber of subscribers) subscriber.armedAt = 0;
  }
  return {
    p50: median(rounds.map((r) => r.p50)),
    p99: median(rounds.map((r) => r.p99)),
    max: median(rounds.map((r) => r.max)),
    rounds,
  };
}

const kb = (value: number) => value.toFixed(2);
const ms = (value: number) => value.toFixed(1);
type Row = {
  target: string;
  n: number;
  rss: number;
  heap: number;
  p50: number;
  p99: number;
  max: number;
};
const rows: Row[] = [];

async function settle(servers: Server[]): Promise<Memory> {
  await new Promise((resolve) => setTimeout(resolve, 500));
  const each = await Promise.all(servers.map(memory));
  return {
    rssKb: each.reduce((sum, m) => sum + m.rssKb, 0),
    heapKb: each.reduce((sum, m) => sum + m.heapKb, 0),
    externalKb: each.reduce((sum, m) => sum + m.externalKb, 0),
  };
}

async function run(
  target: string,
  servers: Server[],
  paths: string[],
  commit: () => Promise<unknown>,
): Promise<void> {
  const subscribers: Subscriber[] = [];
  // One subscriber and one commit first, so lazily built parts (the route's first stream, the
  // LISTEN connection) are in the baseline and not counted per subscriber.
  await open(
    subscribers,
    servers.length,
    servers.map((s, i) => ({ port: s.port, path: paths[i]! })),
  );
  await measureFanOut(subscribers, commit);
  const before = await settle(servers);
  console.log(
    `${target}: before, RSS ${kb(before.rssKb / 1024)} MB, heap ${kb(before.heapKb / 1024)} MB (load ${load()})`,
  );
  for (const n of SIZES) {
    const started = performance.now();
    await open(
      subscribers,
      n,
      servers.map((s, i) => ({ port: s.port, path: paths[i]! })),
    );
    const opened = performance.now() - started;
    const after = await settle(servers);
    const rss = (after.rssKb - before.rssKb) / n;
    const heap = (after.heapKb - before.heapKb) / n;
    const result = await measureFanOut(subscribers, commit);
    console.log(
      `${target}: N=${n} (opened in ${(opened / 1000).toFixed(1)} s), RSS ${kb(after.rssKb / 1024)} MB, heap ${kb(after.heapKb / 1024)} MB, external ${kb(after.externalKb / 1024)} MB; per subscriber RSS ${kb(rss)} KB, heap ${kb(heap)} KB; fan-out of ${COMMITS} commits, median p50 ${ms(result.p50)} ms, p99 ${ms(result.p99)} ms, max ${ms(result.max)} ms (per commit p99: ${result.rounds.map((r) => ms(r.p99)).join(', ')}) (load ${load()})`,
    );
    rows.push({ target, n, rss, heap, p50: result.p50, p99: result.p99, max: result.max });
  }
  for (const subscriber of subscribers) subscriber.socket.destroy();
}

/** Stops the servers and waits for them to exit (before their database goes). */
async function stop(servers: Server[]): Promise<void> {
  await Promise.all(
    servers.map(
      (server) =>
        new Promise((resolve) => {
          if (server.child.exitCode !== null) return resolve(null);
          server.child.once('exit', resolve);
          server.child.kill('SIGTERM');
        }),
    ),
  );
}

console.log(
  `subscribers ${SIZES.join(', ')}, ${COMMITS} commits each, load average ${loadavg()
    .map((v) => v.toFixed(2))
    .join(' ')}`,
);
const directory = mkdtempSync(join(tmpdir(), 'mr-bench-subscribers-'));
try {
  // The baseline first: a raw Fastify SSE endpoint.
  const raw = await startServer('raw');
  try {
    await run('raw Fastify SSE', [raw], ['/raw/hot/events'], () =>
      call(raw.port, 'POST', '/raw/hot/commit'),
    );
  } finally {
    await stop([raw]);
  }

  const sqlite = await startServer('mr', `sqlite://${join(directory, 'subscribers.db')}`);
  try {
    const id = (
      JSON.parse(await call(sqlite.port, 'POST', '/counters/create', {})) as {
        data: { id: string };
      }
    ).data.id;
    await run('machine-routes SQLite', [sqlite], [`/counters/${id}/events`], () =>
      call(sqlite.port, 'POST', `/counters/${id}/increment`, { payload: { by: 1 } }),
    );
  } finally {
    await stop([sqlite]);
  }

  const cluster = await startPrivatePostgres();
  if (cluster === null)
    console.log('no PostgreSQL binaries for a private cluster: PostgreSQL skipped');
  else {
    const servers: Server[] = [];
    try {
      servers.push(await startServer('mr', cluster.url));
      servers.push(await startServer('mr', cluster.url));
      const id = (
        JSON.parse(await call(servers[0]!.port, 'POST', '/counters/create', {})) as {
          data: { id: string };
        }
      ).data.id;
      await run(
        'machine-routes PostgreSQL, 2 processes',
        servers,
        [`/counters/${id}/events`, `/counters/${id}/events`],
        () => call(servers[0]!.port, 'POST', `/counters/${id}/increment`, { payload: { by: 1 } }),
      );
    } finally {
      await stop(servers);
      cluster.stop();
    }
  }

  console.log(
    '\nper subscriber (memory) and fan-out of one commit to all, ratios to raw Fastify SSE:',
  );
  for (const row of rows) {
    const base = rows.find((r) => r.target === 'raw Fastify SSE' && r.n === row.n)!;
    console.log(
      `  ${row.target.padEnd(40)} N=${String(row.n).padStart(5)}  RSS ${kb(row.rss).padStart(6)} KB (${(row.rss / base.rss).toFixed(2)}x)  heap ${kb(row.heap).padStart(6)} KB (${(row.heap / base.heap).toFixed(2)}x)  p99 ${ms(row.p99).padStart(7)} ms (${(row.p99 / base.p99).toFixed(2)}x)  max ${ms(row.max)} ms`,
    );
  }
  console.log(
    `load average at end ${loadavg()
      .map((v) => v.toFixed(2))
      .join(' ')}`,
  );
} finally {
  rmSync(directory, { recursive: true, force: true });
}
