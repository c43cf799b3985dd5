/**
 * Create-or-send latency: `npx tsx bench/create-or-send/run.ts`. One Fastify server in a child
 * process, the keyed order machine registered twice on one store (server.ts):
 *
 * - `send`: `POST /plain/{id}/payment`, an event to an existing instance by id (the baseline);
 * - `keyed, existing`: `POST /keyed/payment` naming a key that has an instance (a lookup by
 *   key, then the same locked send);
 * - `keyed, new key`: `POST /keyed/payment` naming a fresh key each request (the instance is
 *   created with the event applied and the key bound, one commit);
 * - `create + send`: `POST /plain/create` then `POST /plain/{id}/payment`, what a client does
 *   without create-or-send (two requests, and not atomic).
 *
 * Sequential requests over one keep-alive connection, rotating over 200 instances (no
 * contention); rounds interleave the variants; medians of the rounds' mean latency per request
 * (per pair for `create + send`). PostgreSQL runs when MACHINE_ROUTES_BENCH_PG_URL (default: the
 * test database) answers, in a schema of its own, dropped at the end.
 */
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { startServer } from '../start-server.js';
import { onPostgresSchema, onSqliteFile } from '../bench-stores.js';
import { Agent } from 'node:http';
import { jsonPoster } from '../http-client.js';

const PG_URL =
  process.env.MACHINE_ROUTES_BENCH_PG_URL ??
  'postgres://postgres@127.0.0.1:5432/machine_routes_test';
const ROUNDS = 5;
const REQUESTS = Number(process.env.MACHINE_ROUTES_BENCH_REQUESTS ?? 500);
const INSTANCES = 200;
const SERVER = fileURLToPath(new URL('./server.ts', import.meta.url));

type Variant = 'send' | 'existing' | 'fresh' | 'createSend';
const VARIANTS: Variant[] = ['send', 'existing', 'fresh', 'createSend'];

async function run(name: string, storeUrl: string): Promise<Record<Variant, number>> {
  const { child, base } = await startServer(SERVER, storeUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const post = jsonPoster(base, agent);
  const ids: string[] = [];
  for (let index = 0; index < INSTANCES; index += 1)
    ids.push((await post('/plain/create', {})).data.id);
  for (let index = 0; index < INSTANCES; index += 1)
    await post('/keyed/payment', { payload: { orderNumber: `existing-${index}`, n: 0 } });

  let fresh = 0;
  const round = async (variant: Variant): Promise<number> => {
    const started = process.hrtime.bigint();
    for (let index = 0; index < REQUESTS; index += 1) {
      const n = index % INSTANCES;
      if (variant === 'send')
        await post(`/plain/${ids[n]}/payment`, { payload: { orderNumber: 'x', n } });
      else if (variant === 'existing')
        await post('/keyed/payment', { payload: { orderNumber: `existing-${n}`, n } });
      else if (variant === 'fresh')
        await post('/keyed/payment', { payload: { orderNumber: `fresh-${(fresh += 1)}`, n } });
      else {
        const { id } = (await post('/plain/create', {})).data;
        await post(`/plain/${id}/payment`, { payload: { orderNumber: 'x', n } });
      }
    }
    return Number(process.hrtime.bigint() - started) / 1000 / REQUESTS;
  };
  // Warm-up, then interleaved rounds.
  for (const variant of VARIANTS) await round(variant);
  const samples: Record<Variant, number[]> = { send: [], existing: [], fresh: [], createSend: [] };
  for (let r = 0; r < ROUNDS; r += 1)
    for (const variant of r % 2 === 0 ? VARIANTS : [...VARIANTS].reverse())
      samples[variant].push(await round(variant));
  agent.destroy();
  child.kill('SIGTERM');
  const result = Object.fromEntries(
    VARIANTS.map((variant) => [variant, median(samples[variant])]),
  ) as Record<Variant, number>;
  const ratio = (variant: Variant) => `${(result[variant] / result.send).toFixed(2)}x send`;
  console.log(
    `\n${name} (${ROUNDS} rounds x ${REQUESTS} sequential requests, median of round means; load ${loadAverage()})`,
  );
  console.log(`  send by id (baseline)             ${result.send.toFixed(0)} us/request`);
  console.log(
    `  create-or-send, existing key      ${result.existing.toFixed(0)} us/request  (${ratio('existing')})`,
  );
  console.log(
    `  create-or-send, new key           ${result.fresh.toFixed(0)} us/request  (${ratio('fresh')})`,
  );
  console.log(
    `  create, then send by id           ${result.createSend.toFixed(0)} us/pair     (${ratio('createSend')})`,
  );
  return result;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function loadAverage(): string {
  return loadavg()
    .map((value) => value.toFixed(1))
    .join(' ');
}

await onSqliteFile('cos', (url) => run('SQLite file', url));
await onPostgresSchema(PG_URL, 'cos', (url) => run('PostgreSQL', url));
