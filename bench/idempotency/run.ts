/**
 * Idempotency-Key overhead: `npx tsx bench/idempotency/run.ts`. One Fastify server in a child process, the same counter machine
 * registered three times on one store:
 *
 * - `/plain/{id}/increment`: no `idempotency`;
 * - `/idem/{id}/increment` with `idempotency: true`, each request a fresh key (claim + event +
 *   stored response in the event's commit), and the same route replaying a known key.
 *
 * Sequential requests over one keep-alive connection, rotating over 200 instances (no
 * contention); rounds interleave the variants; medians of the rounds' mean latency per request.
 * PostgreSQL runs when MACHINE_ROUTES_BENCH_PG_URL (default: the test database) answers, in a
 * schema of its own, dropped at the end.
 */
import { fileURLToPath } from 'node:url';
import { startServer } from '../start-server.js';
import { onPostgresSchema, onSqliteFile } from '../bench-stores.js';
import { Agent } from 'node:http';
import { jsonPoster } from '../http-client.js';

const PG_URL =
  process.env.MACHINE_ROUTES_BENCH_PG_URL ??
  'postgres://postgres@127.0.0.1:5432/machine_routes_test';
const ROUNDS = 5;
const REQUESTS = 1_000;
const INSTANCES = 200;
const SERVER = fileURLToPath(new URL('./server.ts', import.meta.url));

type Variant = 'plain' | 'idem' | 'replay';
const VARIANTS: Variant[] = ['plain', 'idem', 'replay'];

async function run(name: string, storeUrl: string): Promise<Record<Variant, number>> {
  const { child, base } = await startServer(SERVER, storeUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const post = jsonPoster(base, agent);
  const ids: Record<string, string[]> = { plain: [], idem: [] };
  for (const prefix of Object.keys(ids))
    for (let index = 0; index < INSTANCES; index += 1)
      ids[prefix]!.push((await post(`/${prefix}/create`, {})).data.id);
  // The keys the replay rounds repeat: one answered request per instance.
  for (const id of ids['idem']!)
    await post(
      `/idem/${id}/increment`,
      { payload: { by: 1 } },
      { 'idempotency-key': `replay-${id}` },
    );

  let fresh = 0;
  const round = async (variant: Variant): Promise<number> => {
    const prefix = variant === 'replay' ? 'idem' : variant;
    const started = process.hrtime.bigint();
    for (let index = 0; index < REQUESTS; index += 1) {
      const id = ids[prefix]![index % INSTANCES]!;
      const headers: Record<string, string> =
        variant === 'idem'
          ? { 'idempotency-key': `k-${(fresh += 1)}` }
          : variant === 'replay'
            ? { 'idempotency-key': `replay-${id}` }
            : {};
      await post(`/${prefix}/${id}/increment`, { payload: { by: 1 } }, headers);
    }
    return Number(process.hrtime.bigint() - started) / 1000 / REQUESTS;
  };
  // Warm-up, then interleaved rounds.
  for (const variant of VARIANTS) await round(variant);
  const samples: Record<Variant, number[]> = { plain: [], idem: [], replay: [] };
  for (let r = 0; r < ROUNDS; r += 1)
    for (const variant of r % 2 === 0 ? VARIANTS : [...VARIANTS].reverse())
      samples[variant].push(await round(variant));
  agent.destroy();
  child.kill('SIGTERM');
  const result = Object.fromEntries(
    VARIANTS.map((variant) => [variant, median(samples[variant])]),
  ) as Record<Variant, number>;
  console.log(
    `\n${name} (${ROUNDS} rounds x ${REQUESTS} sequential requests, median of round means)`,
  );
  console.log(`  plain (no idempotency)            ${result.plain.toFixed(0)} us/request`);
  console.log(
    `  Idempotency-Key, fresh key        ${result.idem.toFixed(0)} us/request  (+${(result.idem - result.plain).toFixed(0)} us, ${(result.idem / result.plain).toFixed(2)}x plain)`,
  );
  console.log(
    `  Idempotency-Key, replayed key     ${result.replay.toFixed(0)} us/request  (${(result.replay / result.plain).toFixed(2)}x plain; no event sent)`,
  );
  return result;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

await onSqliteFile('idem', (url) => run('SQLite file', url));
await onPostgresSchema(PG_URL, 'idem', (url) => run('PostgreSQL', url));
