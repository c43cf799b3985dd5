/**
 * Flow control's fairness (issue 35's must-show): `npx tsx bench/flow/fairness.ts [sqlite|postgres]`.
 *
 * One Fastify server in a child process (bench/flow/server.ts), the counter machine's
 * machineId-bound INCREMENT on /fair (per `x-tenant` header: 20 per second, 4 in flight) and
 * on /open (the same route without flow control).
 *
 * - Tenant B sends at a normal rate, well under its limits: one request every 100 ms (10/s),
 *   over one keep-alive connection, from this process; its latency is measured.
 * - Tenant A floods from another process at 100x B's rate: 1,000 requests a second, paced (a
 *   batch of 10 every 10 ms, whatever the answers), over up to 64 keep-alive connections. When
 *   the server cannot keep up, A's requests queue on its connections: the rate printed is A's
 *   requests over the time until the last was answered. The server's CPU time per request of
 *   A (its `/__cpu` read around the phase) says what a refusal costs against a send.
 *
 * Each run: B alone on /fair (its unloaded p99), B while A floods /fair, B while A floods /open;
 * runs repeat, and the medians of the runs are printed with the load average. Every answer A
 * gets is counted: 200, the documented 429 (`Retry-After` equal to the body's `retryAfter`, code
 * MR_FLOW_LIMITED, a `limit`), or anything else. B must never be refused.
 *
 * After the runs, the floor: the server CPU per request of a bare Node HTTP server answering the
 * same 429 to the same flood ({@link floor}).
 *
 * PostgreSQL runs when MACHINE_ROUTES_BENCH_PG_URL (default: the test database) answers, in a
 * schema of its own, dropped at the end.
 */
import { spawn } from 'node:child_process';
import { Agent, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import { createInterface, type Interface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startServer } from '../start-server.js';
import { onPostgresSchema, onSqliteFile } from '../bench-stores.js';
import { poster, type Answer } from '../http-client.js';

const PG_URL =
  process.env.MACHINE_ROUTES_BENCH_PG_URL ??
  'postgres://postgres@127.0.0.1:5432/machine_routes_test';
const RUNS = Number(process.env.FAIRNESS_RUNS ?? 3);
/** B's requests per phase: its p99 is the 2nd largest of 150 latencies. */
const B_REQUESTS = Number(process.env.FAIRNESS_B_REQUESTS ?? 150);
const B_SPACING_MS = 100;
/** A's rate: 100x B's. */
const A_PER_SECOND = (1000 / B_SPACING_MS) * 100;
const A_TICK_MS = 10;
const A_CONNECTIONS = 64;
const A_INSTANCES = 8;
const SELF = fileURLToPath(import.meta.url);
const SERVER = fileURLToPath(new URL('./server.ts', import.meta.url));

function kindOf(answer: Answer): string {
  if (answer.status === 200) return '200';
  if (answer.status !== 429) return `other ${answer.status}`;
  let body: { code?: unknown; limit?: unknown; retryAfter?: unknown };
  try {
    body = JSON.parse(answer.body) as typeof body;
  } catch {
    return 'other 429 (body not JSON)';
  }
  const documented =
    body.code === 'MR_FLOW_LIMITED' &&
    typeof body.limit === 'string' &&
    typeof body.retryAfter === 'number' &&
    answer.retryAfter === String(body.retryAfter);
  return documented ? '429' : 'other 429 (undocumented)';
}

/**
 * The flooding process: on `go <prefix>`, A's requests at A_PER_SECOND until `stop`; then one
 * `FLOOD <json>` line with the answers' kinds, how many were sent and over how many ms.
 */
async function flood(base: string, ids: Record<string, string[]>): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: A_CONNECTIONS });
  const post = poster(base, agent);
  let timer: NodeJS.Timeout | null = null;
  let pending: Promise<void>[] = [];
  let counts: Record<string, number> = {};
  let sent = 0;
  let started = 0;
  const one = async (prefix: string, index: number): Promise<void> => {
    const targets = ids[prefix]!;
    try {
      const answer = await post(
        `/${prefix}/${targets[index % targets.length]}/increment`,
        { payload: { by: 1 } },
        { 'x-tenant': 'a' },
      );
      const kind = kindOf(answer);
      counts[kind] = (counts[kind] ?? 0) + 1;
    } catch (error) {
      const kind = `error ${(error as NodeJS.ErrnoException).code ?? String(error)}`;
      counts[kind] = (counts[kind] ?? 0) + 1;
    }
  };
  process.stdout.write('FLOODER READY\n');
  for await (const line of createInterface({ input: process.stdin })) {
    if (line.startsWith('go ')) {
      const prefix = line.slice(3);
      counts = {};
      sent = 0;
      pending = [];
      started = Date.now();
      // Paced by the clock, not by answers: each tick sends what is due since the start.
      timer = setInterval(() => {
        const due = Math.floor(((Date.now() - started) * A_PER_SECOND) / 1000);
        while (sent < due) {
          pending.push(one(prefix, sent));
          sent += 1;
        }
      }, A_TICK_MS);
    } else if (line === 'stop') {
      clearInterval(timer!);
      // Until the last answer: requests the server was slow to take waited on A's connections.
      await Promise.all(pending);
      const ms = Date.now() - started;
      process.stdout.write(`FLOOD ${JSON.stringify({ counts, sent, ms })}\n`);
    } else if (line === 'end') break;
  }
  agent.destroy();
}

function nextLine(lines: Interface, prefix: string): Promise<string> {
  return new Promise((resolve) => {
    const listener = (line: string) => {
      if (!line.startsWith(prefix)) return;
      lines.off('line', listener);
      resolve(line.slice(prefix.length));
    };
    lines.on('line', listener);
  });
}

/** What the server reports since its last report (bench/flow/server.ts `/__cpu`). */
interface ServerStats {
  cpu: number;
  /** p99 of how late the server's event loop ran a timer (ms): its own queueing. */
  loopP99Ms: number;
  /** Most queries waiting for a pool connection at once (PostgreSQL; 0 on SQLite). */
  poolWaitingMax: number;
  poolSize: number | null;
}

interface Phase {
  p99: number;
  /** The server's event-loop delay and pool waiters during the phase. */
  server?: ServerStats;
  flood?: { counts: Record<string, number>; sent: number; ms: number };
  /** The server's CPU time per request of A (us; B's few requests included). */
  cpuPerRequest?: number;
}

async function fairness(base: string): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const post = poster(base, agent);
  const created = async (prefix: string): Promise<string> => {
    const answer = await post(`/${prefix}/create`, {});
    if (answer.status !== 201) throw new Error(`create: ${answer.status} ${answer.body}`);
    return (JSON.parse(answer.body) as { data: { id: string } }).data.id;
  };
  const idB: Record<string, string> = { fair: await created('fair'), open: await created('open') };
  const idsA: Record<string, string[]> = { fair: [], open: [] };
  for (const prefix of ['fair', 'open'])
    for (let index = 0; index < A_INSTANCES; index += 1) idsA[prefix]!.push(await created(prefix));

  /** B's p99 latency (ms) over B_REQUESTS requests, one per B_SPACING_MS. */
  const tenantB = async (prefix: string): Promise<number> => {
    const latencies: number[] = [];
    let next = Date.now();
    for (let index = 0; index < B_REQUESTS; index += 1) {
      const started = process.hrtime.bigint();
      const answer = await post(
        `/${prefix}/${idB[prefix]}/increment`,
        { payload: { by: 1 } },
        { 'x-tenant': 'b' },
      );
      latencies.push(Number(process.hrtime.bigint() - started) / 1e6);
      if (answer.status !== 200)
        throw new Error(`tenant B refused: ${answer.status} ${answer.body}`);
      // Never faster than one per 100 ms: a slow answer is not made up by a burst.
      next = Math.max(next + B_SPACING_MS, Date.now());
      await new Promise((resolve) => setTimeout(resolve, next - Date.now()));
    }
    return p99(latencies);
  };

  const flooder = spawn(
    process.execPath,
    ['--import', 'tsx', SELF, 'flood', base, JSON.stringify(idsA)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: flooder.stdout! });
  await nextLine(lines, 'FLOODER READY');
  const stats = async (): Promise<ServerStats> =>
    new Promise((resolve, reject) => {
      const req = request(`${base}/__cpu`, { agent }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve(JSON.parse(text) as ServerStats));
      });
      req.on('error', reject);
      req.end();
    });
  const cpu = async (): Promise<number> => (await stats()).cpu;
  const unflooded = async (): Promise<Phase> => {
    await stats();
    const p99 = await tenantB('fair');
    return { p99, server: await stats() };
  };
  const flooded = async (prefix: string): Promise<Phase> => {
    const before = await cpu();
    const report = nextLine(lines, 'FLOOD ');
    flooder.stdin!.write(`go ${prefix}\n`);
    // Let the flood reach its rate before B starts.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const p99 = await tenantB(prefix);
    flooder.stdin!.write('stop\n');
    const flood = JSON.parse(await report) as NonNullable<Phase['flood']>;
    const after = await stats();
    return { p99, flood, server: after, cpuPerRequest: (after.cpu - before) / flood.sent };
  };

  const runs: { alone: number; fair: Phase; open: Phase }[] = [];
  const serverLine = (phase: Phase): string =>
    `server loop delay p99 ${phase.server!.loopP99Ms.toFixed(1)} ms, queries waiting for the pool at most ${phase.server!.poolWaitingMax}${phase.server!.poolSize === null ? '' : ` (pool ${phase.server!.poolSize})`}`;
  try {
    // A warm-up phase of B alone (JIT, connections, statement caches), not counted.
    await tenantB('fair');
    for (let run = 0; run < RUNS; run += 1) {
      const quiet = await unflooded();
      const fair = await flooded('fair');
      const open = await flooded('open');
      runs.push({ alone: quiet.p99, fair, open });
      console.log(
        `  run ${run + 1} (load ${load()}): B p99 alone ${quiet.p99.toFixed(1)} ms (${serverLine(quiet)}); A flooding with flow control: B ${fair.p99.toFixed(1)} ms (${(fair.p99 / quiet.p99).toFixed(2)}x), ${floodLine(fair)}; ${serverLine(fair)}`,
      );
      console.log(
        `          without flow control (/open): B ${open.p99.toFixed(1)} ms (${(open.p99 / quiet.p99).toFixed(2)}x), ${floodLine(open)}; ${serverLine(open)}`,
      );
    }
  } finally {
    // A failed run (B refused) must not leave the flood running against the next one.
    flooder.stdin!.end('end\n');
    flooder.kill('SIGTERM');
    agent.destroy();
  }
  const alone = median(runs.map((run) => run.alone));
  const fair = median(runs.map((run) => run.fair.p99));
  const open = median(runs.map((run) => run.open.p99));
  console.log(
    `  B p99, medians of ${RUNS} runs: alone ${alone.toFixed(1)} ms; A flooding at 100x with flow control ${fair.toFixed(1)} ms, ratio ${(fair / alone).toFixed(2)}x (runs: ${runs.map((run) => (run.fair.p99 / run.alone).toFixed(2)).join(', ')}); without flow control ${open.toFixed(1)} ms, ratio ${(open / alone).toFixed(2)}x (runs: ${runs.map((run) => (run.open.p99 / run.alone).toFixed(2)).join(', ')})`,
  );
  const undocumented = runs.flatMap((run) =>
    Object.entries(run.fair.flood!.counts).filter(([kind]) => kind !== '200' && kind !== '429'),
  );
  console.log(
    `  every refusal of A a documented 429: ${undocumented.length === 0 ? 'yes' : `NO: ${JSON.stringify(undocumented)}`}`,
  );
}

function floodLine(phase: Phase): string {
  const flood = phase.flood!;
  const rate = (flood.sent / flood.ms) * 1000;
  return `A: ${flood.sent} answered at ${rate.toFixed(0)}/s (${(rate / (1000 / B_SPACING_MS)).toFixed(0)}x B's rate), server CPU ${phase.cpuPerRequest!.toFixed(0)} us per request of A: ${JSON.stringify(flood.counts)}`;
}

function p99(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)]!;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function load(): string {
  return loadavg()
    .map((value) => value.toFixed(1))
    .join(' ');
}

/**
 * The floor of a refusal: a bare Node HTTP server (no framework, no machine-routes) answering
 * every request with the same 429 and body, flooded the same way (A_PER_SECOND, 5 s, 3 rounds).
 * The server's CPU per request: what any refusal in a Node process costs on this host now.
 */
async function floor(): Promise<number[]> {
  const child = spawn(process.execPath, ['--import', 'tsx', SELF, 'bare'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = Number(await nextLine(createInterface({ input: child.stdout! }), 'READY '));
  const base = `http://127.0.0.1:${port}`;
  const flooder = spawn(
    process.execPath,
    ['--import', 'tsx', SELF, 'flood', base, JSON.stringify({ bare: ['x'] })],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: flooder.stdout! });
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const cpu = async (): Promise<number> =>
    new Promise((resolve, reject) => {
      const req = request(`${base}/__cpu`, { agent }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve((JSON.parse(text) as { cpu: number }).cpu));
      });
      req.on('error', reject);
      req.end();
    });
  try {
    await nextLine(lines, 'FLOODER READY');
    const perRequest: number[] = [];
    for (let round = 0; round < 3; round += 1) {
      const before = await cpu();
      const report = nextLine(lines, 'FLOOD ');
      flooder.stdin!.write('go bare\n');
      await new Promise((resolve) => setTimeout(resolve, 5000));
      flooder.stdin!.write('stop\n');
      const { sent } = JSON.parse(await report) as { sent: number };
      perRequest.push(((await cpu()) - before) / sent);
    }
    return perRequest;
  } finally {
    flooder.stdin!.end('end\n');
    flooder.kill('SIGTERM');
    child.kill('SIGTERM');
    agent.destroy();
  }
}

/** The bare server of {@link floor}: `READY <port>`, then a 429 for every request. */
function bare(): void {
  const body = JSON.stringify({
    message:
      'Route fair.increment: more than 20 requests per 1000 ms of the same key (header x-tenant); retry after 1 s. Nothing was sent.',
    code: 'MR_FLOW_LIMITED',
    limit: 'rate',
    retryAfter: 1,
  });
  const server = createServer((req, res) => {
    if (req.url === '/__cpu') {
      const { user, system } = process.cpuUsage();
      res.end(JSON.stringify({ cpu: user + system }));
      return;
    }
    res.writeHead(429, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1' });
    res.end(body);
  });
  server.listen(0, '127.0.0.1', () =>
    process.stdout.write(`READY ${(server.address() as AddressInfo).port}\n`),
  );
  process.once('SIGTERM', () => server.close(() => process.exit(0)));
}

async function run(name: string, storeUrl: string): Promise<void> {
  const { child, base } = await startServer(SERVER, storeUrl);
  try {
    console.log(
      `\n${name} (load average ${load()}; B ${1000 / B_SPACING_MS}/s, A ${A_PER_SECOND}/s, ${B_REQUESTS} B requests per phase)`,
    );
    await fairness(base);
    const floors = await floor();
    console.log(
      `  floor: a bare Node HTTP server answering the same 429 at ${A_PER_SECOND}/s: ${median(floors).toFixed(0)} us CPU per request (rounds: ${floors.map((value) => value.toFixed(0)).join(', ')})`,
    );
    console.log(`  load average at the end ${load()}`);
  } finally {
    // Gone before the schema is dropped (else its last requests fail on missing tables).
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
}

if (process.argv[2] === 'flood') {
  await flood(process.argv[3]!, JSON.parse(process.argv[4]!) as Record<string, string[]>);
} else if (process.argv[2] === 'bare') {
  bare();
} else {
  const only = process.argv[2];
  if (only !== 'postgres') {
    await onSqliteFile('fairness', (url) => run('SQLite file', url));
  }
  if (only !== 'sqlite')
    await onPostgresSchema(PG_URL, 'fairness', (url) => run('PostgreSQL', url));
}
