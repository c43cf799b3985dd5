/**
 * machine-routes against DBOS Transact on one PostgreSQL, in one run:
 * `npx tsx bench/scale/dbos.ts` (`bench/run.sh scale-dbos`).
 *
 * The work: one durable HTTP event that changes one counter's status. Sides, each a server
 * process of its own (durable-server.ts) with a database of its own on a private cluster
 * (private-postgres.ts; the databases are created here and dropped with the cluster):
 * - `mr`: machine-routes' machineId-bound INCREMENT on its PostgreSQL store;
 * - `hw`: the hand-written Fastify + XState + `pg` handler, one transaction (same process as `mr`);
 * - `dbos-step`: a DBOS workflow whose one step updates the row (`DBOS.runStep`);
 * - `dbos-tx`: the same with the step a DBOS transaction (`@dbos-inc/postgres-datasource`), the
 *   update and its checkpoint committed together.
 * DBOS and its data source are installed into bench/.peers on first use (bench/peers.ts), or the
 * run is skipped with a line saying why.
 *
 * ROUNDS rounds (the first a warm-up, not counted), the order of the sides rotated each round.
 * Per side and round: full load (autocannon, 10 connections, over 500 instances of that side:
 * events/s, p99; the warm-up runs DURATION s, later rounds the number of events the warm-up
 * served in that time, so every per-event figure divides by an exact count) with the database's counters around it (statements, writing
 * transactions, WAL bytes, the cluster's CPU, the server's CPU, per event), then half load (a
 * fixed rate of half that round's events/s, half as many events: p50, p99). Rows per event by table over
 * all counted events, read with the servers stopped. Medians of the counted rounds.
 *
 * Environment: BENCH_ROUNDS (default 4), BENCH_DURATION (seconds, default 5).
 */
import { loadavg } from 'node:os';
import autocannon from 'autocannon';
import pg from 'pg';
import { ensurePeers } from '../peers.js';
import {
  databaseUrl,
  difference,
  processMicros,
  readCounters,
  rowsPerEvent,
  startDurableServer,
  statementsOf,
  tableRows,
  type BenchServer,
} from './pg-counters.js';
import { cpuSince, startPrivatePostgres } from './private-postgres.js';
import { rotatingRequest } from '../rotating-request.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const CONNECTIONS = 10;
const INSTANCES = 500;
const BODY = JSON.stringify({ payload: { by: 1 } });
const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

type Side = 'mr' | 'hw' | 'dbos-step' | 'dbos-tx';
const SIDES: Side[] = ['mr', 'hw', 'dbos-step', 'dbos-tx'];
const SERVER_OF: Record<Side, 'mr' | 'dbos-step' | 'dbos-tx'> = {
  mr: 'mr',
  hw: 'mr',
  'dbos-step': 'dbos-step',
  'dbos-tx': 'dbos-tx',
};
const PREFIX: Record<Side, string> = {
  mr: '/counters',
  hw: '/hw',
  'dbos-step': '/dbos',
  'dbos-tx': '/dbos',
};
const DATABASE: Record<Side, string> = {
  mr: 'bench_durable_mr',
  hw: 'bench_durable_mr',
  'dbos-step': 'bench_durable_dbos_step',
  'dbos-tx': 'bench_durable_dbos_tx',
};
const TABLES: Record<Side, (name: string) => boolean> = {
  mr: (name) => !name.includes('.hw_'),
  hw: (name) => name.includes('.hw_'),
  'dbos-step': () => true,
  'dbos-tx': () => true,
};

const skip = ensurePeers(['@dbos-inc/dbos-sdk', '@dbos-inc/postgres-datasource']);
if (skip !== null) {
  console.log(`skipped: DBOS Transact not available: ${skip}`);
  process.exit(0);
}
const cluster = await startPrivatePostgres();
if (cluster === null) {
  console.log('skipped: no PostgreSQL binaries for a private cluster');
  process.exit(0);
}
const admin = new pg.Client({ connectionString: cluster.url });
const servers = new Map<string, BenchServer>();

async function startServers(): Promise<void> {
  for (const mode of ['mr', 'dbos-step', 'dbos-tx'] as const) {
    const side = SIDES.find((entry) => SERVER_OF[entry] === mode)!;
    servers.set(mode, await startDurableServer(mode, databaseUrl(cluster!.url, DATABASE[side])));
  }
}
async function stopServers(): Promise<void> {
  for (const server of servers.values()) await server.stop();
  servers.clear();
}

async function seed(side: Side): Promise<string[]> {
  const url = `${servers.get(SERVER_OF[side])!.url}${PREFIX[side]}/create`;
  const ids: string[] = [];
  for (let index = 0; index < INSTANCES; index += 1) {
    const response = await fetch(url, { method: 'POST' });
    if (response.status !== 201) throw new Error(`seeding ${url}: ${response.status}`);
    ids.push(((await response.json()) as { data: { id: string } }).data.id);
  }
  return ids;
}

/**
 * One phase: `amount` events (all answered before it ends, so per-event figures divide by the
 * exact count), or DURATION s when no amount is given (the warm-up, which sizes the rest);
 * `rate` fixes the offered rate (autocannon corrects the latencies for coordinated omission).
 */
async function drive(side: Side, ids: string[], amount?: number, rate?: number) {
  const server = servers.get(SERVER_OF[side])!;
  const started = performance.now();
  const result = await autocannon({
    url: server.url,
    connections: CONNECTIONS,
    ...(amount === undefined ? { duration: DURATION } : { amount }),
    ...(rate === undefined ? {} : { overallRate: Math.max(1, Math.round(rate)) }),
    requests: [rotatingRequest((n) => `${PREFIX[side]}/${ids[n % ids.length]}/increment`, BODY)],
  });
  const seconds = amount === undefined ? DURATION : (performance.now() - started) / 1000;
  return {
    events: result['2xx'],
    failed: result.non2xx + result.errors + result.timeouts,
    rps: result['2xx'] / seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
  };
}

interface Figures {
  rps: number;
  p99: number;
  halfRps: number;
  halfP50: number;
  halfP99: number;
  statements: number;
  xids: number;
  walBytes: number;
  dbCpu: number;
  serverCpu: number;
  failed: number;
}

try {
  await admin.connect();
  await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  for (const database of new Set(Object.values(DATABASE)))
    await admin.query(`CREATE DATABASE ${database}`);
  console.log(
    `private cluster; ${ROUNDS} rounds (first a warm-up), ${DURATION} s per phase, ${CONNECTIONS} connections; load average ${load()}`,
  );
  await startServers();
  const ids = {} as Record<Side, string[]>;
  for (const side of SIDES) ids[side] = await seed(side);
  await stopServers();
  const rowsBefore = new Map<string, Map<string, number[]>>();
  for (const database of new Set(Object.values(DATABASE)))
    rowsBefore.set(database, await tableRows(databaseUrl(cluster.url, database)));
  await startServers();

  const results = new Map<Side, Figures[]>(SIDES.map((side) => [side, []]));
  const served = new Map<Side, number>(SIDES.map((side) => [side, 0]));
  const amount = new Map<Side, number>();
  const statements = new Map<Side, { query: string; calls: number }[]>();
  for (let round = 0; round < ROUNDS; round += 1) {
    const order = SIDES.map((_, index) => SIDES[(index + round) % SIDES.length]!);
    const line: string[] = [];
    for (const side of order) {
      const server = servers.get(SERVER_OF[side])!;
      await admin.query('SELECT pg_stat_statements_reset()');
      const before = await readCounters(admin);
      const cpuBefore = cluster.cpuByProcess();
      const serverBefore = processMicros(server.pid);
      const full = await drive(side, ids[side], amount.get(side));
      const serverCpu = processMicros(server.pid) - serverBefore;
      const dbCpu = cpuSince(cluster, cpuBefore);
      const counted = difference(before, await readCounters(admin), DATABASE[side]);
      statements.set(side, await statementsOf(admin, DATABASE[side]));
      // At least one event: on a loaded host a warm-up phase can end before any answer.
      const half = await drive(
        side,
        ids[side],
        Math.max(1, Math.ceil(full.events / 2)),
        Math.max(1, full.rps / 2),
      );
      served.set(side, served.get(side)! + full.events + half.events);
      const figures: Figures = {
        rps: full.rps,
        p99: full.p99,
        halfRps: half.rps,
        halfP50: half.p50,
        halfP99: half.p99,
        statements: counted.statements / full.events,
        xids: counted.xids / full.events,
        walBytes: counted.walBytes / full.events,
        dbCpu: dbCpu / full.events,
        serverCpu: serverCpu / full.events,
        failed: full.failed + half.failed,
      };
      if (round > 0) results.get(side)!.push(figures);
      else amount.set(side, Math.max(200, Math.round(full.rps * DURATION)));
      line.push(`${side} ${full.rps.toFixed(0)}/s p99 ${full.p99} ms`);
    }
    console.log(
      `round ${round}${round === 0 ? ' (warm-up)' : ''}: ${line.join(', ')}; load ${load()}`,
    );
  }
  await stopServers();

  console.log(
    `\nper side, medians of ${ROUNDS - 1} rounds; per event at full load: statements (pg_stat_statements calls), xids (transaction ids taken: every writing transaction, a NOTIFY's included), WAL bytes, CPU of the whole cluster and of the server process`,
  );
  const header = [
    'side',
    'events/s',
    'p99 ms',
    'half: /s',
    'p50',
    'p99',
    'statements',
    'xids',
    'WAL B',
    'db CPU us',
    'server CPU us',
    'failed',
  ];
  const table: string[][] = [header];
  const medians = new Map<Side, Figures>();
  for (const side of SIDES) {
    const rows = results.get(side)!;
    const pick = (key: keyof Figures) => median(rows.map((row) => row[key]));
    const figures = Object.fromEntries(
      (Object.keys(rows[0]!) as (keyof Figures)[]).map((key) => [key, pick(key)]),
    ) as unknown as Figures;
    figures.failed = rows.reduce((sum, row) => sum + row.failed, 0);
    medians.set(side, figures);
    table.push([
      side,
      figures.rps.toFixed(0),
      String(figures.p99),
      figures.halfRps.toFixed(0),
      String(figures.halfP50),
      String(figures.halfP99),
      figures.statements.toFixed(2),
      figures.xids.toFixed(2),
      figures.walBytes.toFixed(0),
      figures.dbCpu.toFixed(0),
      figures.serverCpu.toFixed(0),
      String(figures.failed),
    ]);
  }
  const widths = header.map((_, column) => Math.max(...table.map((row) => row[column]!.length)));
  for (const row of table)
    console.log(row.map((cell, column) => cell.padStart(widths[column]!)).join('  '));

  const mr = medians.get('mr')!;
  console.log('\nratios (machine-routes / other), medians:');
  for (const other of ['dbos-step', 'dbos-tx', 'hw'] as const) {
    const them = medians.get(other)!;
    const perRound = results
      .get('mr')!
      .map((row, index) => (row.rps / results.get(other)![index]!.rps).toFixed(2));
    console.log(
      `  vs ${other.padEnd(9)} events/s ${(mr.rps / them.rps).toFixed(2)}x (rounds ${perRound.join(', ')}), p99 full ${(mr.p99 / them.p99).toFixed(2)}x, p99 half ${(mr.halfP99 / them.halfP99).toFixed(2)}x, statements ${(mr.statements / them.statements).toFixed(2)}x, WAL ${(mr.walBytes / them.walBytes).toFixed(2)}x, db CPU ${(mr.dbCpu / them.dbCpu).toFixed(2)}x, server + db CPU ${((mr.dbCpu + mr.serverCpu) / (them.dbCpu + them.serverCpu)).toFixed(2)}x`,
    );
  }

  console.log('\nrows per event by table, inserted/updated/deleted (all events after seeding):');
  const rowsAfter = new Map<string, Map<string, number[]>>();
  for (const database of new Set(Object.values(DATABASE)))
    rowsAfter.set(database, await tableRows(databaseUrl(cluster.url, database)));
  for (const side of SIDES) {
    const lines = rowsPerEvent(
      rowsBefore.get(DATABASE[side])!,
      rowsAfter.get(DATABASE[side])!,
      served.get(side)!,
      TABLES[side],
    );
    console.log(`  ${side}: ${lines.join(', ')}`);
  }

  for (const side of SIDES) {
    const list = statements.get(side)!;
    const full = amount.get(side)!;
    console.log(`\nstatements per event, ${side} (last round, full load):`);
    for (const entry of list) {
      if (entry.calls / full < 0.005) continue;
      console.log(`  ${(entry.calls / full).toFixed(3)}  ${entry.query.slice(0, 160)}`);
    }
  }
  console.log(`\nload average at end ${load()}`);
} finally {
  for (const server of servers.values()) await server.stop().catch(() => {});
  await admin.end().catch(() => {});
  cluster.stop();
}
