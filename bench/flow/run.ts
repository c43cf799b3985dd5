/**
 * Flow control: `npx tsx bench/flow/run.ts`. One Fastify server in a child process, the counter
 * machine registered with and without `flow` on one store (bench/flow/server.ts).
 *
 * 1. Cost: sequential requests over one keep-alive connection, rotating over 200 instances and
 *    50 tenant keys, on /plain (no flow control), /rate (a token bucket per tenant, never
 *    empty) and /slots (an in-flight slot per request, never all taken). Rounds interleave the
 *    variants; medians of the rounds' mean latency per request, as ratios to /plain.
 * 2. Fairness: on /fair (20 requests per second and 4 in flight per tenant), tenant B sends one
 *    request every 100 ms (half its rate), alone, then while tenant A floods the route from
 *    another process (16 connections, as fast as they go, capped at 100 requests per request
 *    of B), then the same flood on /open, the same route without flow control. B's p99 latency
 *    flooded / alone, per round and the median of the rounds; A's answers counted (200, 429
 *    with Retry-After and code MR_FLOW_LIMITED, anything else).
 *
 * PostgreSQL runs when MACHINE_ROUTES_BENCH_PG_URL (default: the test database) answers, in a
 * schema of its own, dropped at the end. `tsx bench/flow/run.ts flood <url> <count>` is the
 * flooding process.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Agent, request } from 'node:http';

const PG_URL =
  process.env.MACHINE_ROUTES_BENCH_PG_URL ??
  'postgres://postgres@127.0.0.1:5432/machine_routes_test';
const ROUNDS = 5;
const REQUESTS = 500;
const INSTANCES = 200;
const TENANTS = 50;
const FAIR_ROUNDS = 3;
const B_REQUESTS = 50;
const B_SPACING_MS = 100;
const FLOOD_CONNECTIONS = 16;
const SELF = fileURLToPath(import.meta.url);
const SERVER = fileURLToPath(new URL('./server.ts', import.meta.url));

type Variant = 'plain' | 'rate' | 'slots';
const VARIANTS: Variant[] = ['plain', 'rate', 'slots'];

interface Answer {
  status: number;
  retryAfter: string | undefined;
  body: string;
}

function getter(base: string, agent: Agent) {
  return (path: string) =>
    new Promise<Answer>((resolve, reject) => {
      const req = request(`${base}${path}`, { method: 'GET', agent }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, retryAfter: undefined, body: text }),
        );
      });
      req.on('error', reject);
      req.end();
    });
}

function poster(base: string, agent: Agent) {
  return (path: string, body: unknown, headers: Record<string, string> = {}) =>
    new Promise<Answer>((resolve, reject) => {
      const payload = JSON.stringify(body);
      const req = request(
        `${base}${path}`,
        {
          method: 'POST',
          agent,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(payload),
            ...headers,
          },
        },
        (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (text += chunk));
          response.on('end', () =>
            resolve({
              status: response.statusCode ?? 0,
              retryAfter: response.headers['retry-after'] as string | undefined,
              body: text,
            }),
          );
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
}

async function created(post: ReturnType<typeof poster>, prefix: string): Promise<string> {
  const answer = await post(`/${prefix}/create`, {});
  if (answer.status !== 201) throw new Error(`create: ${answer.status} ${answer.body}`);
  return (JSON.parse(answer.body) as { data: { id: string } }).data.id;
}

/**
 * The flooding process: on each `go` line, tenant A's requests over 16 connections, as fast as
 * they go, until the `stop` line (or `count` sent); then one `FLOOD <counts>` line. Started once:
 * its start-up is not part of a round.
 */
async function flood(base: string, count: number, ids: Record<string, string[]>): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: FLOOD_CONNECTIONS });
  const post = poster(base, agent);
  let running: Promise<void> | null = null;
  let stop = false;
  const wave = async (prefix: string): Promise<void> => {
    const counts: Record<string, number> = {};
    let sent = 0;
    await Promise.all(
      Array.from({ length: FLOOD_CONNECTIONS }, async () => {
        while (!stop && sent < count) {
          const id = ids[prefix]![sent % ids[prefix]!.length]!;
          sent += 1;
          const answer = await post(
            `/${prefix}/${id}/increment`,
            { payload: { by: 1 } },
            { 'x-tenant': 'a' },
          );
          const documented =
            answer.status === 429 &&
            answer.retryAfter !== undefined &&
            (JSON.parse(answer.body) as { code?: string }).code === 'MR_FLOW_LIMITED';
          const kind =
            answer.status === 200 ? '200' : documented ? '429' : `other ${answer.status}`;
          counts[kind] = (counts[kind] ?? 0) + 1;
        }
      }),
    );
    process.stdout.write(`FLOOD ${JSON.stringify(counts)}\n`);
  };
  process.stdout.write('FLOODER READY\n');
  for await (const line of createInterface({ input: process.stdin })) {
    if (line.startsWith('go ')) {
      stop = false;
      running = wave(line.slice(3));
    } else if (line === 'stop') {
      stop = true;
      await running;
    } else if (line === 'end') break;
  }
  agent.destroy();
}

async function startServer(storeUrl: string) {
  const child = spawn(
    process.execPath,
    ['--conditions=machine-routes-source', '--import', 'tsx', SERVER, storeUrl],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout });
  const port = await new Promise<number>((resolve, reject) => {
    lines.on('line', (line) => {
      if (line.startsWith('READY ')) resolve(Number(line.slice(6)));
    });
    child.once('exit', (code) => reject(new Error(`server exited (${code})`)));
  });
  return { child, base: `http://127.0.0.1:${port}` };
}

async function cost(base: string): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const post = poster(base, agent);
  const get = getter(base, agent);
  const ids: Record<Variant, string[]> = { plain: [], rate: [], slots: [] };
  for (const variant of VARIANTS)
    for (let index = 0; index < INSTANCES; index += 1)
      ids[variant].push(await created(post, variant));
  const cpu = async (): Promise<number> =>
    (JSON.parse((await get('/__cpu')).body) as { cpu: number }).cpu;
  const round = async (variant: Variant): Promise<{ wall: number; cpu: number }> => {
    const cpuBefore = await cpu();
    const started = process.hrtime.bigint();
    for (let index = 0; index < REQUESTS; index += 1) {
      const answer = await post(
        `/${variant}/${ids[variant][index % INSTANCES]!}/increment`,
        { payload: { by: 1 } },
        { 'x-tenant': `t${index % TENANTS}` },
      );
      if (answer.status !== 200) throw new Error(`${variant}: ${answer.status} ${answer.body}`);
    }
    const wall = Number(process.hrtime.bigint() - started) / 1000 / REQUESTS;
    return { wall, cpu: ((await cpu()) - cpuBefore) / REQUESTS };
  };
  for (const variant of VARIANTS) await round(variant);
  const walls: Record<Variant, number[]> = { plain: [], rate: [], slots: [] };
  const cpus: Record<Variant, number[]> = { plain: [], rate: [], slots: [] };
  for (let r = 0; r < ROUNDS; r += 1)
    for (const variant of r % 2 === 0 ? VARIANTS : [...VARIANTS].reverse()) {
      const sample = await round(variant);
      walls[variant].push(sample.wall);
      cpus[variant].push(sample.cpu);
    }
  agent.destroy();
  for (const [label, samples] of [
    ['wall time', walls],
    ['server CPU', cpus],
  ] as const)
    report(label, samples);
}

/** One line per variant: its median per request and its ratio to /plain, per round too. */
function report(label: string, samples: Record<Variant, number[]>): void {
  const plain = median(samples.plain);
  console.log(
    `  cost, ${label} (${ROUNDS} rounds x ${REQUESTS} sequential requests, median of round means)`,
  );
  console.log(`    plain (no flow control)        ${plain.toFixed(0)} us/request`);
  for (const variant of ['rate', 'slots'] as const) {
    const value = median(samples[variant]);
    const ratios = samples[variant].map((sample, index) =>
      (sample / samples.plain[index]!).toFixed(2),
    );
    console.log(
      `    ${variant === 'rate' ? 'rate (token bucket)          ' : 'concurrency (in-flight slot) '}   ${value.toFixed(0)} us/request  ${(value / plain).toFixed(2)}x plain (rounds: ${ratios.join(', ')})`,
    );
  }
}

async function fairness(base: string): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const post = poster(base, agent);
  const idB: Record<string, string> = {
    fair: await created(post, 'fair'),
    open: await created(post, 'open'),
  };
  const idsA: Record<string, string[]> = { fair: [], open: [] };
  for (const prefix of ['fair', 'open'])
    for (let index = 0; index < 8; index += 1) idsA[prefix]!.push(await created(post, prefix));
  /** B's latencies in ms, one request every B_SPACING_MS. */
  const tenantB = async (prefix: string): Promise<number[]> => {
    const latencies: number[] = [];
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
      await new Promise((resolve) => setTimeout(resolve, B_SPACING_MS));
    }
    return latencies;
  };
  const ratios: number[] = [];
  const floods: string[] = [];
  const flooder = spawn(
    process.execPath,
    ['--import', 'tsx', SELF, 'flood', base, String(B_REQUESTS * 100), JSON.stringify(idsA)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: flooder.stdout! });
  const next = (prefix: string) =>
    new Promise<string>((resolve) => {
      const listener = (line: string) => {
        if (!line.startsWith(prefix)) return;
        lines.off('line', listener);
        resolve(line.slice(prefix.length));
      };
      lines.on('line', listener);
    });
  await next('FLOODER READY');
  /** B's p99 while A floods `prefix`, and what A got. */
  const flooded = async (prefix: string): Promise<{ p99: number; line: string }> => {
    const report = next('FLOOD ');
    flooder.stdin!.write(`go ${prefix}\n`);
    // Let the flood reach speed before B starts.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const started = Date.now();
    const loaded = p99(await tenantB(prefix));
    const seconds = (Date.now() - started) / 1000;
    flooder.stdin!.write('stop\n');
    const counts = JSON.parse(await report) as Record<string, number>;
    const sentA = Object.values(counts).reduce((sum, count) => sum + count, 0);
    return {
      p99: loaded,
      line: `A sent ${sentA} (${(sentA / B_REQUESTS).toFixed(0)}x B's count; ${(sentA / (seconds + 0.3)).toFixed(0)}/s against B's ${(B_REQUESTS / seconds).toFixed(1)}/s): ${JSON.stringify(counts)}`,
    };
  };
  const without: number[] = [];
  for (let r = 0; r < FAIR_ROUNDS; r += 1) {
    const alone = p99(await tenantB('fair'));
    const limited = await flooded('fair');
    const open = await flooded('open');
    ratios.push(limited.p99 / alone);
    without.push(open.p99 / alone);
    floods.push(
      `round ${r + 1}: B p99 alone ${alone.toFixed(1)} ms; A flooding with flow control: B ${limited.p99.toFixed(1)} ms (${(limited.p99 / alone).toFixed(2)}x), ${limited.line}`,
      `         without flow control (/open): B ${open.p99.toFixed(1)} ms (${(open.p99 / alone).toFixed(2)}x), ${open.line}`,
    );
  }
  flooder.stdin!.end('end\n');
  agent.destroy();
  console.log(
    `  fairness (B: ${B_REQUESTS} requests, one per ${B_SPACING_MS} ms; A floods from another process)`,
  );
  for (const line of floods) console.log(`    ${line}`);
  console.log(
    `    B p99 flooded / alone, median of ${FAIR_ROUNDS} rounds: with flow control ${median(ratios).toFixed(2)}x, without ${median(without).toFixed(2)}x`,
  );
}

function p99(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)]!;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function run(name: string, storeUrl: string): Promise<void> {
  const { child, base } = await startServer(storeUrl);
  try {
    console.log(
      `\n${name} (load average ${loadavg()
        .map((value) => value.toFixed(1))
        .join(' ')})`,
    );
    await cost(base);
    await fairness(base);
  } finally {
    child.kill('SIGTERM');
  }
}

if (process.argv[2] === 'flood') {
  await flood(
    process.argv[3]!,
    Number(process.argv[4]),
    JSON.parse(process.argv[5]!) as Record<string, string[]>,
  );
} else {
  const only = process.argv[2];
  if (only !== 'postgres') {
    const dir = mkdtempSync(join(tmpdir(), 'mr-bench-flow-'));
    try {
      await run('SQLite file', `sqlite:${join(dir, 'bench.db')}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const admin = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  let reachable = only !== 'sqlite';
  if (reachable)
    await admin.connect().catch(() => {
      reachable = false;
    });
  if (reachable) {
    const schema = `mr_bench_flow_${process.pid}`;
    await admin.query(`CREATE SCHEMA "${schema}"`);
    try {
      const url = new URL(PG_URL);
      url.searchParams.set('schema', schema);
      await run('PostgreSQL', url.toString());
    } finally {
      await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
      await admin.end();
    }
  } else if (only !== 'sqlite') {
    console.log(`\nPostgreSQL skipped: ${PG_URL} unreachable.`);
  }
}
