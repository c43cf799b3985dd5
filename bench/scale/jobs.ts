/**
 * Job throughput, in one run: `npx tsx bench/scale/jobs.ts` (`bench/run.sh scale-jobs`).
 *
 * Systems, each doing an empty job (its handler notes the time it started and returns):
 * - `pg-boss`: plain pg-boss (the project's version), 4 loops of `fetch` / `complete`, each
 *   polling every 500 ms when it found nothing and woken at once by a send of this process;
 *   pg-boss's own `work()` waits its polling interval (at least 0.5 s) after every batch, which
 *   would bound it to batchSize / 0.5 s, so the loop is the fair baseline of what we build on;
 * - `graphile-worker` (installed into bench/.peers on first use, else skipped): `run` with
 *   concurrency 4, jobs added by `addJob` (it hears new jobs by LISTEN/NOTIFY);
 * - `mr-queue-pg` / `mr-queue-sqlite`: machine-routes' own queue, `PgBossJobQueue` and the
 *   embedded SQLite `EmbeddedJobQueue` (concurrency 4, poll 500 ms), `enqueue` and a handler;
 * - `actor-pg` / `actor-sqlite`: job actors through `MachineRuntime.open`: a send moves an
 *   instance into a state whose job is the empty function (the job written in the step's
 *   commit), and its `@done` commits the instance's next state;
 * - `listener-pg` / `listener-sqlite`: queued listeners: a send whose step queues a listener
 *   (`['noted', { '@queue': true }]`), run after the commit under the instance lock, which
 *   commits its own step.
 * PostgreSQL systems run on a private cluster (private-postgres.ts), each in a database of its
 * own created here; SQLite ones on files in a temporary directory. Deleted after.
 *
 * ROUNDS rounds (first a warm-up), systems in rotated order. Per system and round: full load
 * (10 producers enqueue JOBS jobs as fast as they can while the worker runs: jobs/s from the
 * first enqueue to the last start, delay from each enqueue, or send, to its start), then half
 * load (JOBS / 2 jobs offered at half that rate: delay p50 / p99), and the CPU per job of this
 * process (producers and workers) and of the cluster. Medians of the counted rounds.
 *
 * Environment: BENCH_ROUNDS (default 4), BENCH_JOBS (default 600), BENCH_ONLY (comma list).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import PgBoss from 'pg-boss';
import pg from 'pg';
import { z } from 'zod';
import {
  defineEvent,
  defineJob,
  defineMachine,
  EmbeddedJobQueue,
  MachineRuntime,
  openStore,
  type DurableJobQueue,
  type SqliteStore,
} from '../../src/runtime/index.js';
import { PgBossJobQueue } from '../../src/runtime/jobs/pg-boss-job-queue.js';
import { ensurePeers, importPeer } from '../peers.js';
import { databaseUrl, processMicros } from './pg-counters.js';
import { cpuSince, startPrivatePostgres } from './private-postgres.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const JOBS = Number(process.env.BENCH_JOBS ?? 600);
const PRODUCERS = 10;
const CONCURRENCY = 4;
const POLL_MS = 500;
const load = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;
const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// --- what every handler notes -------------------------------------------------------------
let starts: number[] = [];
let delays: number[] = [];
function started(enqueuedAt: number): void {
  const now = performance.now();
  starts.push(now);
  delays.push(now - enqueuedAt);
}

// --- the machines of the job-actor and queued-listener systems ------------------------------
const Stamp = z.object({ t: z.number() });
const emptyJob = defineJob({
  name: 'empty',
  input: Stamp,
  run: async (input) => {
    started(input.t);
    return {};
  },
});
const actorMachine = defineMachine<{ t: number }>({
  config: {
    id: 'jobber',
    initial: 'idle',
    context: { t: 0 },
    states: {
      idle: { on: { RUN: { target: 'working', actions: 'stamp' } } },
      working: { job: emptyJob, input: ['t'], on: { '@done': 'done' } },
      done: {},
    },
  },
  behavior: {
    events: { RUN: defineEvent({ type: 'RUN', payload: Stamp }) },
    actions: {
      stamp: ({ context, event }) => {
        context.t = Number(event.payload?.t);
      },
    },
  },
});
const listenerMachine = defineMachine<{ t: number }>({
  config: {
    id: 'listened',
    initial: 'idle',
    context: { t: 0 },
    // exit: creating an instance enters `idle` but exits nothing, so only the PING queues one.
    listen: { exit: [['noted', { '@queue': true }]] },
    states: {
      idle: { on: { PING: { target: 'pinged', actions: 'stamp' } } },
      pinged: {},
    },
  },
  behavior: {
    events: { PING: defineEvent({ type: 'PING', payload: Stamp }) },
    actions: {
      stamp: ({ context, event }) => {
        context.t = Number(event.payload?.t);
      },
    },
    listeners: {
      noted: ({ context }) => started(Number(context.t)),
    },
  },
});

// --- systems ---------------------------------------------------------------------------------
interface System {
  name: string;
  postgres: boolean;
  /** Work that must exist before an enqueue of a phase (instances): not timed. */
  prepare(count: number): Promise<void>;
  /** Enqueues job number `index` of the phase, stamped `t`. */
  enqueue(index: number, t: number): Promise<void>;
  close(): Promise<void>;
}

interface GraphileModule {
  run(options: Record<string, unknown>): Promise<{ stop(): Promise<void> }>;
  makeWorkerUtils(options: Record<string, unknown>): Promise<{
    addJob(name: string, payload: unknown): Promise<unknown>;
    release(): Promise<void>;
  }>;
  Logger: new (factory: () => () => void) => unknown;
}

async function plainPgBoss(url: string): Promise<System> {
  const boss = new PgBoss({ connectionString: url, schema: 'plain_boss', max: 10 });
  boss.on('error', () => {});
  await boss.start();
  await boss.createQueue('empty');
  let stopping = false;
  const wake = new Set<() => void>();
  const loops = Array.from({ length: CONCURRENCY }, async () => {
    while (!stopping) {
      const jobs = await boss.fetch<{ t: number }>('empty', { batchSize: 1 });
      if (jobs.length === 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, POLL_MS);
          function done() {
            clearTimeout(timer);
            wake.delete(done);
            resolve();
          }
          wake.add(done);
        });
        continue;
      }
      for (const job of jobs) started(job.data.t);
      await boss.complete(
        'empty',
        jobs.map((job) => job.id),
      );
    }
  });
  return {
    name: 'pg-boss',
    postgres: true,
    prepare: async () => {},
    enqueue: async (_index, t) => {
      await boss.send('empty', { t });
      for (const resolve of [...wake]) resolve();
    },
    close: async () => {
      stopping = true;
      for (const resolve of [...wake]) resolve();
      await Promise.all(loops);
      await boss.stop({ graceful: false, wait: true });
    },
  };
}

async function graphile(url: string): Promise<System> {
  const { run, makeWorkerUtils, Logger } = await importPeer<GraphileModule>('graphile-worker');
  const logger = new Logger(() => () => {});
  const utils = await makeWorkerUtils({ connectionString: url, logger });
  const runner = await run({
    connectionString: url,
    concurrency: CONCURRENCY,
    noHandleSignals: true,
    pollInterval: POLL_MS,
    logger,
    taskList: { empty: async (payload: { t: number }) => started(payload.t) },
  });
  return {
    name: 'graphile-worker',
    postgres: true,
    prepare: async () => {},
    enqueue: async (_index, t) => {
      await utils.addJob('empty', { t });
    },
    close: async () => {
      await runner.stop();
      await utils.release();
    },
  };
}

async function ourQueue(name: string, queue: DurableJobQueue, after: () => Promise<void>) {
  await queue.work('empty', (payload) => started((payload as { t: number }).t));
  await queue.start();
  return {
    name,
    postgres: name.endsWith('-pg'),
    prepare: async () => {},
    enqueue: async (_index: number, t: number) => queue.enqueue({ name: 'empty', payload: { t } }),
    close: async () => {
      await queue.close();
      await after();
    },
  } satisfies System;
}

async function machineSystem(
  name: string,
  databaseUrlOf: string,
  kind: 'actor' | 'listener',
): Promise<System> {
  const runtime = await MachineRuntime.open({
    databaseUrl: databaseUrlOf,
    migrate: true,
    machines: [actorMachine, listenerMachine],
    jobQueue: { concurrency: CONCURRENCY, pollIntervalMs: POLL_MS },
  });
  const machine = kind === 'actor' ? actorMachine : listenerMachine;
  const type = kind === 'actor' ? 'RUN' : 'PING';
  let ids: string[] = [];
  return {
    name,
    postgres: name.endsWith('-pg'),
    prepare: async (count) => {
      ids = new Array<string>(count);
      let next = 0;
      await Promise.all(
        Array.from({ length: PRODUCERS }, async () => {
          while (next < count) {
            const index = next++;
            ids[index] = (await runtime.create(machine)).snapshot.id;
          }
        }),
      );
    },
    enqueue: async (index, t) => {
      await runtime.send(machine, ids[index]!, { type, payload: { t } });
    },
    close: () => runtime.close(),
  };
}

// --- phases ----------------------------------------------------------------------------------
async function waitForStarts(count: number, label: string): Promise<void> {
  const deadline = Date.now() + 180_000;
  while (starts.length < count) {
    if (Date.now() > deadline)
      throw new Error(`${label}: ${starts.length} of ${count} jobs started in 180 s`);
    await sleep(5);
  }
}

async function fullLoad(system: System) {
  starts = [];
  delays = [];
  const first = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: PRODUCERS }, async () => {
      while (next < JOBS) {
        const index = next++;
        await system.enqueue(index, performance.now());
      }
    }),
  );
  await waitForStarts(JOBS, system.name);
  const last = Math.max(...starts);
  return {
    rate: (JOBS / (last - first)) * 1000,
    p50: percentile(delays, 0.5),
    p99: percentile(delays, 0.99),
  };
}

async function halfLoad(system: System, rate: number) {
  const count = Math.ceil(JOBS / 2);
  await system.prepare(count);
  starts = [];
  delays = [];
  const interval = 1000 / rate;
  const first = performance.now();
  const sends: Promise<void>[] = [];
  for (let index = 0; index < count; index += 1) {
    const due = first + index * interval;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    // Open loop: stamped with its due time, so a late producer counts against the system.
    sends.push(system.enqueue(index, due));
  }
  await Promise.all(sends);
  await waitForStarts(count, system.name);
  return { p50: percentile(delays, 0.5), p99: percentile(delays, 0.99) };
}

// --- run ----------------------------------------------------------------------------------------
const only = process.env.BENCH_ONLY?.split(',');
const wanted = (name: string) => only === undefined || only.includes(name);
const graphileSkip = wanted('graphile-worker') ? ensurePeers(['graphile-worker']) : null;
if (graphileSkip !== null) console.log(`skipped graphile-worker: ${graphileSkip}`);
const cluster = await startPrivatePostgres();
if (cluster === null) console.log('skipped the PostgreSQL systems: no PostgreSQL binaries');
const directory = mkdtempSync(join(tmpdir(), 'mr-bench-jobs-'));
const admin = cluster === null ? null : new pg.Client({ connectionString: cluster.url });

type Factory = () => Promise<System>;
const factories = new Map<string, Factory>();
const pgUrl = (database: string) => databaseUrl(cluster!.url, database);
const sqliteUrl = (file: string) => `sqlite:${join(directory, file)}`;
if (cluster !== null) {
  factories.set('pg-boss', () => plainPgBoss(pgUrl('bench_jobs_pgboss')));
  if (graphileSkip === null)
    factories.set('graphile-worker', () => graphile(pgUrl('bench_jobs_graphile')));
  factories.set('mr-queue-pg', async () =>
    ourQueue(
      'mr-queue-pg',
      await PgBossJobQueue.open({
        connectionString: pgUrl('bench_jobs_mr_queue'),
        schema: 'mr_jobs',
        concurrency: CONCURRENCY,
        pollIntervalMs: POLL_MS,
        keepAlive: false,
      }),
      async () => {},
    ),
  );
  factories.set('actor-pg', () => machineSystem('actor-pg', pgUrl('bench_jobs_actor'), 'actor'));
  factories.set('listener-pg', () =>
    machineSystem('listener-pg', pgUrl('bench_jobs_listener'), 'listener'),
  );
}
factories.set('mr-queue-sqlite', async () => {
  const store = (await openStore(sqliteUrl('queue.db'), { migrate: true })) as SqliteStore;
  const queue = new EmbeddedJobQueue({
    database: store.database,
    concurrency: CONCURRENCY,
    pollIntervalMs: POLL_MS,
    keepAlive: false,
  });
  return ourQueue('mr-queue-sqlite', queue, () => store.close());
});
factories.set('actor-sqlite', () => machineSystem('actor-sqlite', sqliteUrl('actor.db'), 'actor'));
factories.set('listener-sqlite', () =>
  machineSystem('listener-sqlite', sqliteUrl('listener.db'), 'listener'),
);
for (const name of [...factories.keys()]) if (!wanted(name)) factories.delete(name);

interface Figures {
  rate: number;
  p50: number;
  p99: number;
  halfP50: number;
  halfP99: number;
  cpu: number;
  dbCpu: number;
}
const results = new Map<string, Figures[]>([...factories.keys()].map((name) => [name, []]));
try {
  if (admin !== null) {
    await admin.connect();
    for (const database of ['pgboss', 'graphile', 'mr_queue', 'actor', 'listener'])
      await admin.query(`CREATE DATABASE bench_jobs_${database}`);
  }
  console.log(
    `${ROUNDS} rounds (first a warm-up), ${JOBS} jobs at full load and ${Math.ceil(JOBS / 2)} at half per system, ${PRODUCERS} producers, concurrency ${CONCURRENCY}, poll ${POLL_MS} ms; load average ${load()}`,
  );
  const names = [...factories.keys()];
  for (let round = 0; round < ROUNDS; round += 1) {
    const order = names.map((_, index) => names[(index + round) % names.length]!);
    const line: string[] = [];
    for (const name of order) {
      const system = await factories.get(name)!();
      try {
        await system.prepare(JOBS);
        const cpuBefore = processMicros(process.pid);
        const dbBefore = cluster?.cpuByProcess() ?? new Map<number, number>();
        const full = await fullLoad(system);
        const cpu = (processMicros(process.pid) - cpuBefore) / JOBS;
        const dbCpu = system.postgres && cluster !== null ? cpuSince(cluster, dbBefore) / JOBS : 0;
        const half = await halfLoad(system, full.rate / 2);
        if (round > 0)
          results.get(name)!.push({ ...full, halfP50: half.p50, halfP99: half.p99, cpu, dbCpu });
        line.push(`${name} ${full.rate.toFixed(0)}/s`);
      } finally {
        await system.close();
      }
    }
    console.log(
      `round ${round}${round === 0 ? ' (warm-up)' : ''}: ${line.join(', ')}; load ${load()}`,
    );
  }

  console.log(
    `\nmedians of ${ROUNDS - 1} rounds (delays in ms, CPU in us per job; process CPU at full load: producers and workers in this one process)`,
  );
  const header = [
    'system',
    'jobs/s',
    'full p50',
    'full p99',
    'half p50',
    'half p99',
    'process CPU',
    'db CPU',
  ];
  const table: string[][] = [header];
  const medians = new Map<string, Figures>();
  for (const [name, rows] of results) {
    if (rows.length === 0) continue;
    const figures = Object.fromEntries(
      (Object.keys(rows[0]!) as (keyof Figures)[]).map((key) => [
        key,
        median(rows.map((row) => row[key])),
      ]),
    ) as unknown as Figures;
    medians.set(name, figures);
    table.push([
      name,
      figures.rate.toFixed(0),
      figures.p50.toFixed(1),
      figures.p99.toFixed(1),
      figures.halfP50.toFixed(1),
      figures.halfP99.toFixed(1),
      figures.cpu.toFixed(0),
      figures.dbCpu === 0 ? '-' : figures.dbCpu.toFixed(0),
    ]);
  }
  const widths = header.map((_, column) => Math.max(...table.map((row) => row[column]!.length)));
  for (const row of table)
    console.log(row.map((cell, column) => cell.padStart(widths[column]!)).join('  '));

  const base = medians.get('pg-boss');
  if (base !== undefined) {
    console.log('\nagainst plain pg-boss (time per job = 1 / jobs/s; ratio > 1: slower):');
    for (const [name, figures] of medians) {
      if (name === 'pg-boss') continue;
      const perRound = results
        .get(name)!
        .map((row, index) => (results.get('pg-boss')![index]!.rate / row.rate).toFixed(2));
      const cost = (figures.cpu + figures.dbCpu) / (base.cpu + base.dbCpu);
      console.log(
        `  ${name.padEnd(16)} time per job ${(base.rate / figures.rate).toFixed(2)}x (rounds ${perRound.join(', ')}), jobs/s ${(figures.rate / base.rate).toFixed(2)}x, CPU per job (process + db) ${cost.toFixed(2)}x`,
      );
    }
  }
  console.log(`\nload average at end ${load()}`);
} finally {
  await admin?.end().catch(() => {});
  cluster?.stop();
  rmSync(directory, { recursive: true, force: true });
}
