/**
 * Where a bound send's CPU goes on SQLite, without HTTP: `npx tsx bench/http/bound-breakdown.ts`.
 *
 * One process, one SQLite file (WAL, synchronous NORMAL), bench/http's counter machine, 500
 * instances in rotation. Measures the main thread's CPU time per operation (scheduler time from
 * /proc/self/task/<pid>/schedstat, so the checkpoint thread is left out: checkpoints are
 * inline and off while measuring) of:
 * - `send`: `MachineRuntime.send` (the lock-free path once warm), the whole step, one at a time;
 * - `send, 10 at once`: ten sends to different instances in flight together (per send);
 * - `loadForRead`: the read a lock-free send starts with;
 * - `transition`: the interpreter's step of the counter alone;
 * - `hand-written`: bench/http/server.ts's one-transaction handler (XState + the driver);
 * - `empty write transaction`: `BEGIN IMMEDIATE; COMMIT` with nothing in it;
 * and the WAL frames (pages) each writer appends per event (WAL size growth, checkpoints off).
 * Rounds alternate the operations; medians. BENCH_ROUNDS (default 9), BENCH_OPS (per round,
 * default 3000).
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createActor } from 'xstate';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { transition } from '../../src/runtime/interpreter/index.js';
import { SqliteStore } from '../../src/runtime/persistence/sqlite-store.js';
import { handWrittenSqlite, ulid } from './hand-written-sqlite.js';
import { counterMachine, xstateCounter } from './machines.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const OPS = Number(process.env.BENCH_OPS ?? 3000);
const INSTANCES = 500;

const mainThread = `/proc/self/task/${process.pid}/schedstat`;
const cpuMicros = () => Number(readFileSync(mainThread, 'utf8').split(' ')[0]) / 1000;

const dir = mkdtempSync(join(tmpdir(), 'bound-breakdown-'));
const filename = join(dir, 'bench.db');
const store = new SqliteStore({ filename, checkpoints: 'inline' });
store.database.pragma('wal_autocheckpoint = 0');
const runtime = new MachineRuntime({ store });

// The hand-written handler of bench/http/server.ts (hand-written-sqlite.ts), on its own connection.
const db = new Database(filename, { timeout: 5000 });
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.pragma('wal_autocheckpoint = 0');
const { create: hwCreate, step: hwStep } = handWrittenSqlite(db);
const empty = db.transaction(() => {});

const mrIds: string[] = [];
const hwIds: string[] = [];
for (let index = 0; index < INSTANCES; index += 1) {
  mrIds.push((await runtime.create(counterMachine)).snapshot.id);
  const actor = createActor(xstateCounter).start();
  const snapshot = actor.getPersistedSnapshot() as unknown as { context: unknown };
  actor.stop();
  const id = ulid();
  hwCreate.immediate(id, 0, null, snapshot, 'counter.start');
  hwIds.push(id);
}
const event = { type: 'INCREMENT', payload: { by: 1 } };
const snapshotOf = await store.load(mrIds[0]!);

let next = 0;
const operations: Record<string, () => unknown> = {
  send: () => runtime.send(counterMachine, mrIds[next++ % INSTANCES]!, event),
  // Ten in flight, as bench/http's ten connections: the commits of one turn share a transaction.
  'send, 10 at once': async () => {
    const batch = [];
    for (let i = 0; i < 10; i += 1)
      batch.push(runtime.send(counterMachine, mrIds[next++ % INSTANCES]!, event));
    await Promise.all(batch);
  },
  loadForRead: () => store.loadForRead(mrIds[next++ % INSTANCES]!),
  transition: () => transition(counterMachine, snapshotOf!, event),
  'hand-written': () => hwStep.immediate(hwIds[next++ % INSTANCES]!, 1),
  'empty write transaction': () => empty.immediate(),
};
const figures = new Map<string, number[]>();
// Warm-up, then rounds.
for (const operation of Object.values(operations))
  for (let i = 0; i < 2000; i += 1) await operation();
for (let round = 0; round < ROUNDS; round += 1) {
  for (const [name, operation] of Object.entries(operations)) {
    const before = cpuMicros();
    const per = name === 'send, 10 at once' ? 10 : 1;
    for (let i = 0; i < OPS / per; i += 1) await operation();
    figures.set(name, [...(figures.get(name) ?? []), (cpuMicros() - before) / OPS]);
  }
}

// WAL frames per event: the WAL only grows while checkpoints are off.
const walFrames = async (run: () => unknown, per = 1): Promise<number> => {
  db.pragma('wal_checkpoint(TRUNCATE)');
  const before = statSync(`${filename}-wal`).size;
  for (let i = 0; i < 2000 / per; i += 1) await run();
  return (statSync(`${filename}-wal`).size - before) / (4096 + 24) / 2000;
};
const frames = {
  send: await walFrames(operations.send!),
  'send, 10 at once': await walFrames(operations['send, 10 at once']!, 10),
  'hand-written': await walFrames(operations['hand-written']!),
};

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
console.log(
  `SQLite, ${ROUNDS} rounds x ${OPS} operations, ${INSTANCES} instances; main-thread CPU us per operation, median (min-max); load average ${loadavg()
    .map((value) => value.toFixed(2))
    .join(' ')}`,
);
for (const [name, values] of figures)
  console.log(
    `  ${name.padEnd(24)} ${median(values).toFixed(1)} (${Math.min(...values).toFixed(1)}-${Math.max(...values).toFixed(1)})`,
  );
console.log(
  `WAL pages per event: ${Object.entries(frames)
    .map(([name, value]) => `${name} ${value.toFixed(2)}`)
    .join(', ')}`,
);
db.close();
await runtime.close();
rmSync(dir, { recursive: true, force: true });
