/**
 * Flow control: `npx tsx bench/flow/run.ts`. One Fastify server in a child process, the counter
 * machine registered with and without `flow` on one store (bench/flow/server.ts).
 *
 * Cost: sequential requests over one keep-alive connection, rotating over 200 instances and
 * 50 tenant keys, on /plain (no flow control), /rate (a token bucket per tenant, never empty)
 * and /slots (an in-flight slot per request, never all taken). Rounds interleave the variants;
 * medians of the rounds' mean latency per request, as ratios to /plain.
 *
 * Fairness (a tenant flooding at 100x another's rate) is bench/flow/fairness.ts.
 *
 * PostgreSQL runs when MACHINE_ROUTES_BENCH_PG_URL (default: the test database) answers, in a
 * schema of its own, dropped at the end.
 */
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { startServer } from '../start-server.js';
import { onPostgresSchema, onSqliteFile } from '../bench-stores.js';
import { Agent } from 'node:http';
import { poster, getter } from '../http-client.js';

const PG_URL =
  process.env.MACHINE_ROUTES_BENCH_PG_URL ??
  'postgres://postgres@127.0.0.1:5432/machine_routes_test';
const ROUNDS = 5;
const REQUESTS = 500;
const INSTANCES = 200;
const TENANTS = 50;
const SERVER = fileURLToPath(new URL('./server.ts', import.meta.url));

type Variant = 'plain' | 'rate' | 'slots';
const VARIANTS: Variant[] = ['plain', 'rate', 'slots'];

async function created(post: ReturnType<typeof poster>, prefix: string): Promise<string> {
  const answer = await post(`/${prefix}/create`, {});
  if (answer.status !== 201) throw new Error(`create: ${answer.status} ${answer.body}`);
  return (JSON.parse(answer.body) as { data: { id: string } }).data.id;
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

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function run(name: string, storeUrl: string): Promise<void> {
  const { child, base } = await startServer(SERVER, storeUrl);
  try {
    console.log(
      `\n${name} (load average ${loadavg()
        .map((value) => value.toFixed(1))
        .join(' ')})`,
    );
    await cost(base);
  } finally {
    child.kill('SIGTERM');
  }
}

const only = process.argv[2];
if (only !== 'postgres') {
  await onSqliteFile('flow', (url) => run('SQLite file', url));
}
if (only !== 'sqlite') await onPostgresSchema(PG_URL, 'flow', (url) => run('PostgreSQL', url));
