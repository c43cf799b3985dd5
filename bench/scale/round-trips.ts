/**
 * Round trips, rows and WAL bytes per machineId-bound event on PostgreSQL, machine-routes
 * against the hand-written handler (bench/http/hand-written-postgres.ts), in one run:
 * `npx tsx bench/scale/round-trips.ts`.
 *
 * One Fastify server in this process serves both (`POST /counters/{id}/increment`, machine-routes
 * with its PostgreSQL store and commit feed; `POST /hw/{id}/increment`, the one-transaction
 * handler on the same pool); events go over real HTTP from this process, rotating over 500
 * instances of each, at 1 and at 10 requests in flight. ROUNDS rounds alternate the two (the
 * order swapped each round), EVENTS events each; the first round is a warm-up and not counted.
 *
 * - Round trips: every `query` call of every `pg.Client` of the server (a query is one round
 *   trip: pg sends parse, bind, execute and sync together), counted in the client; and, on the
 *   private cluster, pg_stat_statements' `calls` over the same phase as a check from the server's
 *   side. The statements of the last round are printed per event, by text.
 * - WAL bytes: pg_current_wal_lsn() before and after each phase, divided by the events. Only
 *   meaningful on a cluster nothing else writes to: by default the script starts a private one
 *   (private-postgres.ts), deleted after. MACHINE_ROUTES_BENCH_PG_URL runs against that server
 *   instead, and says that the WAL figures include whatever else wrote meanwhile.
 * - Rows: pg_stat_user_tables' inserted, updated and deleted tuples per table over the counted
 *   rounds (read after the server's connections closed, which flushes their statistics).
 * - Database CPU (private cluster only): every process of the cluster, per event.
 *
 * Environment: BENCH_ROUNDS (default 4, the first a warm-up), BENCH_EVENTS (per phase, 2000).
 */
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import Fastify from 'fastify';
import pg from 'pg';
import { mountFastify } from '../../src/runtime/http/adapters/fastify.js';
import { MachineRouter } from '../../src/runtime/http/machine-router.js';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { openStore } from '../../src/runtime/persistence/open-store.js';
import type { PostgresStore } from '../../src/runtime/persistence/postgres-store.js';
import { handWrittenPostgres } from '../http/hand-written-postgres.js';
import { counterMachine } from '../http/machines.js';
import { startPrivatePostgres, type PrivatePostgres } from './private-postgres.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 2000);
const INSTANCES = 500;
const SCHEMA = 'bench_round_trips';
const BODY = JSON.stringify({ payload: { by: 1 } });

// --- counting every query of every pg client -------------------------------------------------
const tape = new Map<string, number>();
let recording = false;
const uncounted = new WeakSet<object>();
const originalQuery = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  if (recording && !uncounted.has(this)) {
    const config = args[0] as string | { text?: string; name?: string };
    const text = typeof config === 'string' ? config : (config.text ?? '?');
    const name = typeof config === 'string' ? undefined : config.name;
    const key = `${name === undefined ? '' : `[${name}] `}${text.replace(/\s+/g, ' ').trim()}`;
    tape.set(key, (tape.get(key) ?? 0) + 1);
  }
  return (originalQuery as (...a: unknown[]) => unknown).apply(this, args);
} as typeof pg.Client.prototype.query;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

let cluster: PrivatePostgres | null = null;
let baseUrl = process.env.MACHINE_ROUTES_BENCH_PG_URL;
if (baseUrl === undefined) {
  cluster = await startPrivatePostgres();
  if (cluster === null) {
    console.log('no PostgreSQL binaries for a private cluster: set MACHINE_ROUTES_BENCH_PG_URL');
    process.exit(0);
  }
  baseUrl = cluster.url;
}
const admin = new pg.Client({ connectionString: baseUrl });
uncounted.add(admin);

interface Server {
  url: string;
  close(): Promise<void>;
}

async function startServer(): Promise<Server> {
  const store = (await openStore(`${baseUrl}?schema=${SCHEMA}`, {
    migrate: true,
  })) as PostgresStore;
  const runtime = new MachineRuntime({ store });
  const router = new MachineRouter({ runtime, logger: { error: () => {} } });
  router.register(counterMachine, {
    prefix: 'counters',
    create: true,
    machineIdFor: ['INCREMENT'],
  });
  const app = Fastify({ logger: false });
  await handWrittenPostgres(app, store);
  await mountFastify(app, router);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      await app.close();
      await runtime.close();
    },
  };
}

async function post(url: string): Promise<{ data: { id: string } }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: BODY,
  });
  if (response.status >= 300)
    throw new Error(`${url}: ${response.status} ${await response.text()}`);
  return (await response.json()) as { data: { id: string } };
}

interface Phase {
  side: 'mr' | 'hw';
  inFlight: number;
  roundTrips: number;
  serverCalls: number | null;
  walBytes: number;
  cpuMicros: number | null;
  ms: number;
  statements: Map<string, number>;
}

async function lsn(): Promise<bigint> {
  const { rows } = await admin.query<{ at: string }>(
    `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS at`,
  );
  return BigInt(rows[0]!.at.split('.')[0]!);
}

async function statementCalls(): Promise<number | null> {
  if (cluster === null) return null;
  const { rows } = await admin.query<{ calls: string }>(
    `SELECT coalesce(sum(calls), 0)::text AS calls FROM pg_stat_statements
     WHERE query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%pg_current_wal_lsn%'`,
  );
  return Number(rows[0]!.calls);
}

async function phase(server: Server, side: 'mr' | 'hw', ids: string[], inFlight: number) {
  const prefix = side === 'mr' ? '/counters' : '/hw';
  if (cluster !== null) await admin.query('SELECT pg_stat_statements_reset()');
  tape.clear();
  const walBefore = await lsn();
  const cpuBefore = cluster?.cpuMicros() ?? 0;
  const started = performance.now();
  recording = true;
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < EVENTS) {
        const id = ids[next++ % ids.length]!;
        await post(`${server.url}${prefix}/${id}/increment`);
      }
    }),
  );
  // A NOTIFY batched at the end of the last turn is part of the last event.
  await new Promise((resolve) => setTimeout(resolve, 50));
  recording = false;
  const ms = performance.now() - started;
  const cpu = cluster === null ? null : cluster.cpuMicros() - cpuBefore;
  const walBytes = Number((await lsn()) - walBefore);
  const serverCalls = await statementCalls();
  let roundTrips = 0;
  for (const count of tape.values()) roundTrips += count;
  return {
    side,
    inFlight,
    roundTrips: roundTrips / EVENTS,
    serverCalls: serverCalls === null ? null : serverCalls / EVENTS,
    walBytes: walBytes / EVENTS,
    cpuMicros: cpu === null ? null : cpu / EVENTS,
    ms,
    statements: new Map(tape),
  } satisfies Phase;
}

async function tableRows(): Promise<Map<string, { ins: number; upd: number; del: number }>> {
  await admin.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await admin.query<{ relname: string; ins: string; upd: string; del: string }>(
    `SELECT relname, n_tup_ins::text AS ins, n_tup_upd::text AS upd, n_tup_del::text AS del
     FROM pg_stat_user_tables WHERE schemaname = $1`,
    [SCHEMA],
  );
  return new Map(
    rows.map((row) => [
      row.relname,
      { ins: Number(row.ins), upd: Number(row.upd), del: Number(row.del) },
    ]),
  );
}

try {
  await admin.connect();
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  if (cluster !== null) await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  const load = () =>
    loadavg()
      .map((value) => value.toFixed(2))
      .join(' ');
  console.log(
    `${cluster ? 'private cluster (WAL and CPU are ours alone)' : `${baseUrl} (WAL: the whole cluster's, others' writes included)`}; ${ROUNDS} rounds (first a warm-up) of ${EVENTS} events per phase; load average ${load()}`,
  );
  // Seeding in a server of its own, closed: its connections' statistics are flushed before the
  // counted rounds start, so the row figures are the events' alone.
  const seeder = await startServer();
  const ids = { mr: [] as string[], hw: [] as string[] };
  for (let index = 0; index < INSTANCES; index += 1) {
    ids.mr.push((await post(`${seeder.url}/counters/create`)).data.id);
    ids.hw.push((await post(`${seeder.url}/hw/create`)).data.id);
  }
  await seeder.close();
  let server = await startServer();
  const phases: Phase[] = [];
  let rowsBefore = new Map<string, { ins: number; upd: number; del: number }>();
  for (let round = 0; round < ROUNDS; round += 1) {
    if (round === 1) {
      // The warm-up round's rows are flushed with its connections: a new server from here on.
      await server.close();
      await new Promise((resolve) => setTimeout(resolve, 500));
      rowsBefore = await tableRows();
      server = await startServer();
    }
    const order = round % 2 === 0 ? (['mr', 'hw'] as const) : (['hw', 'mr'] as const);
    for (const inFlight of [1, 10]) {
      for (const side of order) {
        const result = await phase(server, side, ids[side], inFlight);
        if (round > 0) phases.push(result);
      }
    }
  }
  await server.close();
  await new Promise((resolve) => setTimeout(resolve, 500));
  const rowsAfter = await tableRows();
  const counted = (ROUNDS - 1) * 2 * EVENTS;

  console.log(
    `\nper event, medians of ${ROUNDS - 1} rounds (ratio: machine-routes / hand-written)`,
  );
  console.log('in flight  side  round trips  server calls  WAL bytes  db CPU us  events/s');
  for (const inFlight of [1, 10]) {
    const figures: Record<string, number[]> = {};
    for (const side of ['mr', 'hw'] as const) {
      const mine = phases.filter((entry) => entry.side === side && entry.inFlight === inFlight);
      const row = [
        median(mine.map((entry) => entry.roundTrips)),
        mine[0]!.serverCalls === null ? NaN : median(mine.map((entry) => entry.serverCalls!)),
        median(mine.map((entry) => entry.walBytes)),
        mine[0]!.cpuMicros === null ? NaN : median(mine.map((entry) => entry.cpuMicros!)),
        median(mine.map((entry) => (EVENTS / entry.ms) * 1000)),
      ];
      figures[side] = row;
      console.log(
        `${String(inFlight).padStart(9)}  ${side.padEnd(4)}  ${row[0]!.toFixed(2).padStart(11)}  ${row[1]!.toFixed(2).padStart(12)}  ${row[2]!.toFixed(0).padStart(9)}  ${row[3]!.toFixed(0).padStart(9)}  ${row[4]!.toFixed(0).padStart(8)}`,
      );
    }
    const ratio = figures.mr!.map((value, index) => (value / figures.hw![index]!).toFixed(2));
    console.log(`${String(inFlight).padStart(9)}  mr/hw ${ratio.map((r) => `${r}x`).join('  ')}`);
  }

  console.log(`\nrows per event by table (${counted} events of each side counted)`);
  for (const [table, after] of [...rowsAfter].sort()) {
    const before = rowsBefore.get(table) ?? { ins: 0, upd: 0, del: 0 };
    const per = (key: 'ins' | 'upd' | 'del') => (after[key] - before[key]) / counted;
    if (per('ins') + per('upd') + per('del') === 0) continue;
    console.log(
      `  ${table.padEnd(24)} inserted ${per('ins').toFixed(2)}  updated ${per('upd').toFixed(2)}  deleted ${per('del').toFixed(2)}`,
    );
  }

  for (const inFlight of [1, 10]) {
    for (const side of ['mr', 'hw'] as const) {
      const last = phases
        .filter((entry) => entry.side === side && entry.inFlight === inFlight)
        .at(-1)!;
      console.log(`\nstatements per event, ${side}, ${inFlight} in flight (last round):`);
      for (const [text, count] of [...last.statements].sort((a, b) => b[1] - a[1])) {
        console.log(`  ${(count / EVENTS).toFixed(3)}  ${text.slice(0, 150)}`);
      }
    }
  }
  console.log(`\nload average at end ${load()}`);
} finally {
  await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`).catch(() => {});
  await admin.end().catch(() => {});
  cluster?.stop();
}
