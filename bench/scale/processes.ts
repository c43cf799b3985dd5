/**
 * 1, 2 and 4 server processes on one PostgreSQL database, in one run:
 * `npx tsx bench/scale/processes.ts` (`bench/run.sh scale-processes`).
 *
 * This 2-core host cannot show scaling (the servers, the database and the load generator share
 * the two cores), so the script measures what bounds it: per machineId-bound event, the
 * database's CPU (every process of a private cluster, private-postgres.ts), the servers' CPU,
 * this process's (the load generator), statements (pg_stat_statements calls), transaction ids
 * and WAL bytes, and how busy the two cores were. Servers: durable-server.ts `mr` (machine-routes'
 * counter on its PostgreSQL store, pool of 10, commit feed LISTENing in every process), all on
 * the database `bench_processes`, created here.
 *
 * ROUNDS rounds (first a warm-up), the process counts rotated each round; per phase the servers
 * are started, driven by one autocannon per server (CONNECTIONS split evenly, each over its own
 * slice of the 480 instances: no two requests meet on an instance), and stopped. The warm-up
 * runs DURATION s; later rounds send the events the warm-up served in that time.
 *
 * Environment: BENCH_ROUNDS (default 3), BENCH_DURATION (default 5 s).
 */
import { cpus, loadavg } from 'node:os';
import autocannon from 'autocannon';
import pg from 'pg';
import {
  databaseUrl,
  difference,
  processMicros,
  readCounters,
  startDurableServer,
  type BenchServer,
} from './pg-counters.js';
import { cpuSince, startPrivatePostgres } from './private-postgres.js';
import { rotatingRequest } from '../rotating-request.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const COUNTS = [1, 2, 4];
const CONNECTIONS = 12;
const INSTANCES = 480;
const DATABASE = 'bench_processes';
const BODY = JSON.stringify({ payload: { by: 1 } });
const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

const cluster = await startPrivatePostgres();
if (cluster === null) {
  console.log('skipped: no PostgreSQL binaries for a private cluster');
  process.exit(0);
}
const admin = new pg.Client({ connectionString: cluster.url });
const url = databaseUrl(cluster.url, DATABASE);
let servers: BenchServer[] = [];

async function drive(server: BenchServer, ids: string[], connections: number, amount?: number) {
  const result = await autocannon({
    url: server.url,
    connections,
    ...(amount === undefined ? { duration: DURATION } : { amount }),
    requests: [rotatingRequest((n) => `/counters/${ids[n % ids.length]}/increment`, BODY)],
  });
  return { events: result['2xx'], failed: result.non2xx + result.errors, p99: result.latency.p99 };
}

interface Figures {
  rate: number;
  p99: number;
  dbCpu: number;
  serverCpu: number;
  loaderCpu: number;
  busy: number;
  statements: number;
  xids: number;
  walBytes: number;
  failed: number;
}

try {
  await admin.connect();
  await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  await admin.query(`CREATE DATABASE ${DATABASE}`);
  console.log(
    `private cluster, database ${DATABASE}; ${ROUNDS} rounds (first a warm-up), ${CONNECTIONS} connections split over the servers, ${cpus().length} cores; load average ${load()}`,
  );
  const seeder = await startDurableServer('mr', url);
  const ids: string[] = [];
  for (let index = 0; index < INSTANCES; index += 1) {
    const response = await fetch(`${seeder.url}/counters/create`, { method: 'POST' });
    ids.push(((await response.json()) as { data: { id: string } }).data.id);
  }
  await seeder.stop();

  const results = new Map<number, Figures[]>(COUNTS.map((count) => [count, []]));
  const amount = new Map<number, number>();
  for (let round = 0; round < ROUNDS; round += 1) {
    const order = COUNTS.map((_, index) => COUNTS[(index + round) % COUNTS.length]!);
    const line: string[] = [];
    for (const count of order) {
      // Started side by side: on a loaded host one start takes tens of seconds.
      servers = await Promise.all(
        Array.from({ length: count }, () => startDurableServer('mr', url)),
      );
      const slice = INSTANCES / count;
      const total = amount.get(count);
      const before = await readCounters(admin);
      const dbBefore = cluster.cpuByProcess();
      const serverBefore = servers.map((server) => processMicros(server.pid));
      const loaderBefore = processMicros(process.pid);
      const started = performance.now();
      const runs = await Promise.all(
        servers.map((server, index) =>
          drive(
            server,
            ids.slice(index * slice, (index + 1) * slice),
            CONNECTIONS / count,
            total === undefined ? undefined : Math.ceil(total / count),
          ),
        ),
      );
      const seconds = total === undefined ? DURATION : (performance.now() - started) / 1000;
      const events = runs.reduce((sum, run) => sum + run.events, 0);
      const serverCpu = servers.reduce(
        (sum, server, index) => sum + processMicros(server.pid) - serverBefore[index]!,
        0,
      );
      const dbCpu = cpuSince(cluster, dbBefore);
      const loaderCpu = processMicros(process.pid) - loaderBefore;
      const counted = difference(before, await readCounters(admin), DATABASE);
      for (const server of servers) await server.stop();
      servers = [];
      const figures: Figures = {
        rate: events / seconds,
        p99: Math.max(...runs.map((run) => run.p99)),
        dbCpu: dbCpu / events,
        serverCpu: serverCpu / events,
        loaderCpu: loaderCpu / events,
        busy: (dbCpu + serverCpu + loaderCpu) / (seconds * 1e6 * cpus().length),
        statements: counted.statements / events,
        xids: counted.xids / events,
        walBytes: counted.walBytes / events,
        failed: runs.reduce((sum, run) => sum + run.failed, 0),
      };
      if (round === 0) amount.set(count, Math.max(300, Math.round(figures.rate * DURATION)));
      else results.get(count)!.push(figures);
      line.push(`${count} proc ${figures.rate.toFixed(0)}/s`);
    }
    console.log(
      `round ${round}${round === 0 ? ' (warm-up)' : ''}: ${line.join(', ')}; load ${load()}`,
    );
  }

  console.log(
    `\nmedians of ${ROUNDS - 1} rounds, per event (CPU in us; busy: the CPU of database, servers and load generator over the phase's wall time on ${cpus().length} cores, the rest went to other work on this host)`,
  );
  const header = [
    'processes',
    'events/s',
    'p99 ms',
    'db CPU',
    'servers CPU',
    'loader CPU',
    'busy',
    'statements',
    'xids',
    'WAL B',
    'failed',
  ];
  const table: string[][] = [header];
  const medians = new Map<number, Figures>();
  for (const count of COUNTS) {
    const rows = results.get(count)!;
    const figures = Object.fromEntries(
      (Object.keys(rows[0]!) as (keyof Figures)[]).map((key) => [
        key,
        median(rows.map((row) => row[key])),
      ]),
    ) as unknown as Figures;
    figures.failed = rows.reduce((sum, row) => sum + row.failed, 0);
    medians.set(count, figures);
    table.push([
      String(count),
      figures.rate.toFixed(0),
      String(figures.p99),
      figures.dbCpu.toFixed(0),
      figures.serverCpu.toFixed(0),
      figures.loaderCpu.toFixed(0),
      `${(figures.busy * 100).toFixed(0)}%`,
      figures.statements.toFixed(2),
      figures.xids.toFixed(2),
      figures.walBytes.toFixed(0),
      String(figures.failed),
    ]);
  }
  const widths = header.map((_, column) => Math.max(...table.map((row) => row[column]!.length)));
  for (const row of table)
    console.log(row.map((cell, column) => cell.padStart(widths[column]!)).join('  '));
  const one = medians.get(1)!;
  console.log('\nagainst 1 process:');
  for (const count of [2, 4]) {
    const figures = medians.get(count)!;
    console.log(
      `  ${count} processes: events/s ${(figures.rate / one.rate).toFixed(2)}x, db CPU per event ${(figures.dbCpu / one.dbCpu).toFixed(2)}x, servers CPU per event ${(figures.serverCpu / one.serverCpu).toFixed(2)}x, statements ${(figures.statements / one.statements).toFixed(2)}x`,
    );
  }
  console.log(
    `\ncapacity of one database core at these figures: ${COUNTS.map((count) => `${count} proc ${(1e6 / medians.get(count)!.dbCpu).toFixed(0)}`).join(', ')} events/s`,
  );
  console.log(`\nload average at end ${load()}`);
} finally {
  for (const server of servers) await server.stop().catch(() => {});
  await admin.end().catch(() => {});
  cluster.stop();
}
