/**
 * Lock contention on PostgreSQL: machineId-bound sends with 0%, 1% and 10% of the events on one
 * hot instance, the rest spread over 1,000: `npx tsx bench/scale/contention.ts`.
 *
 * One runtime on a private cluster (private-postgres.ts; MACHINE_ROUTES_BENCH_PG_URL instead
 * uses that server, without database CPU), IN_FLIGHT sends at a time through `MachineRuntime.send`
 * with the counter of bench/http/machines.ts. Two ways to meet a busy instance: answered at once
 * (`lockWaitMs` 0, the default: MachineAlreadyRunningException, which the HTTP route answers with its busy status) and waiting up to 2 s for it. ROUNDS rounds
 * alternate the hot shares (order rotated each round), EVENTS sends each; medians per share:
 * sends committed per second, the share refused as busy, latency p50/p99 of the committed ones,
 * and the database's CPU per committed send, with the ratio to the 0% share.
 *
 * Environment: BENCH_ROUNDS (5), BENCH_EVENTS (1500), BENCH_IN_FLIGHT (10).
 */
import { loadavg } from 'node:os';
import pg from 'pg';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { openStore } from '../../src/runtime/persistence/open-store.js';
import { counterMachine } from '../http/machines.js';
import { startPrivatePostgres, type PrivatePostgres } from './private-postgres.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 1500);
const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 10);
const INSTANCES = 1000;
const SHARES = [0, 0.01, 0.1];
const WAITS = [0, 2000];
const SCHEMA = 'bench_contention';

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!;
const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');

let cluster: PrivatePostgres | null = null;
let url = process.env.MACHINE_ROUTES_BENCH_PG_URL;
if (url === undefined) {
  cluster = await startPrivatePostgres();
  if (cluster === null) {
    console.log('no PostgreSQL binaries for a private cluster: set MACHINE_ROUTES_BENCH_PG_URL');
    process.exit(0);
  }
  url = cluster.url;
}
const admin = new pg.Client({ connectionString: url });

interface Result {
  perSecond: number;
  refused: number;
  p50: number;
  p99: number;
  dbMicros: number;
}

async function phase(
  runtime: MachineRuntime,
  ids: string[],
  hot: string,
  share: number,
  waitMs: number,
): Promise<Result> {
  const latencies: number[] = [];
  let refused = 0;
  let next = 0;
  const dbBefore = cluster?.cpuMicros() ?? 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < EVENTS) {
        const index = next++;
        const id = Math.random() < share ? hot : ids[index % ids.length]!;
        const at = performance.now();
        try {
          await runtime.send(
            counterMachine,
            id,
            { type: 'INCREMENT', payload: { by: 1 } },
            waitMs > 0 ? { lockWaitMs: waitMs } : {},
          );
          latencies.push(performance.now() - at);
        } catch (error) {
          if ((error as { code?: string }).code !== 'MR_MACHINE_ALREADY_RUNNING') throw error;
          refused += 1;
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const db = cluster === null ? NaN : cluster.cpuMicros() - dbBefore;
  return {
    perSecond: latencies.length / seconds,
    refused: refused / EVENTS,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    dbMicros: db / latencies.length,
  };
}

try {
  await admin.connect();
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  const store = await openStore(`${url}?schema=${SCHEMA}`, { migrate: true });
  const runtime = new MachineRuntime({ store });
  const ids: string[] = [];
  for (let index = 0; index < INSTANCES; index += 1)
    ids.push((await runtime.create(counterMachine)).snapshot.id);
  const hot = (await runtime.create(counterMachine)).snapshot.id;
  console.log(
    `${IN_FLIGHT} sends in flight over ${INSTANCES} instances, a share on one hot instance; ${ROUNDS} rounds of ${EVENTS}; load average ${load()}`,
  );
  const results = new Map<string, Result[]>();
  // Warm-up: statement caches, each event type's first (lock-row) send.
  await phase(runtime, ids, hot, 0, 0);
  for (let round = 0; round < ROUNDS; round += 1) {
    for (const waitMs of WAITS) {
      for (let offset = 0; offset < SHARES.length; offset += 1) {
        const share = SHARES[(offset + round) % SHARES.length]!;
        const key = `${waitMs}/${share}`;
        results.set(key, [
          ...(results.get(key) ?? []),
          await phase(runtime, ids, hot, share, waitMs),
        ]);
      }
    }
  }
  for (const waitMs of WAITS) {
    console.log(
      `\n${waitMs === 0 ? 'busy answered at once' : `busy waited for, up to ${waitMs} ms`}: medians of ${ROUNDS} rounds`,
    );
    console.log('hot share  committed/s  vs 0%   refused  p50 ms  p99 ms  db CPU us  vs 0%');
    const base = results.get(`${waitMs}/0`)!;
    for (const share of SHARES) {
      const rows = results.get(`${waitMs}/${share}`)!;
      const m = (key: keyof Result) => median(rows.map((row) => row[key]));
      const ratio = (key: keyof Result) =>
        (m(key) / median(base.map((row) => row[key]))).toFixed(2);
      console.log(
        `${`${share * 100}%`.padStart(9)}  ${m('perSecond').toFixed(0).padStart(11)}  ${ratio('perSecond').padStart(5)}x  ${`${(m('refused') * 100).toFixed(1)}%`.padStart(7)}  ${m('p50').toFixed(1).padStart(6)}  ${m('p99').toFixed(1).padStart(6)}  ${m('dbMicros').toFixed(0).padStart(9)}  ${ratio('dbMicros').padStart(5)}x`,
      );
    }
  }
  console.log(`\nload average at end ${load()}`);
  await runtime.close();
} finally {
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`).catch(() => {});
  await admin.end().catch(() => {});
  cluster?.stop();
}
