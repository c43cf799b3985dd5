/**
 * One benchmark server process: `tsx bench/http/server.ts <fastify|express> <store url>`.
 * Prints `READY <port>` when listening. Routes:
 * - POST /raw/increment                      the framework answering the same JSON, nothing else
 * - POST /quotes/increment                   machine-routes, stateless
 * - POST /counters/create, /counters/{id}/increment   machine-routes, machineId-bound
 * - GET /counters/{id}/status                machine-routes read (bench/reads measures it)
 * - POST /hw/create, /hw/{id}/increment      (Fastify only) the hand-written baseline:
 *   Fastify + XState v5 + better-sqlite3 (or pg), load the current-state row, restore the
 *   actor, send, insert the history rows and upsert the current state in one transaction.
 * - POST /hwl/{id}/increment                 (Fastify + SQLite) the hand-written baseline with
 *   machine-routes' guarantees: a lock row taken with the load in one short transaction, the
 *   transition outside any transaction, writes + lock release in a second one (another process
 *   is refused with 423 instead of waiting, and never waits on a transition).
 */
import type { AddressInfo } from 'node:net';
import Database from 'better-sqlite3';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import { createActor } from 'xstate';
import { mountExpress } from '../../src/runtime/http/adapters/express.js';
import { mountFastify } from '../../src/runtime/http/adapters/fastify.js';
import { MachineRouter } from '../../src/runtime/http/machine-router.js';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { openStore } from '../../src/runtime/persistence/open-store.js';
import { PostgresStore } from '../../src/runtime/persistence/postgres-store.js';
import { SqliteStore } from '../../src/runtime/persistence/sqlite-store.js';
import { handWrittenPostgres } from './hand-written-postgres.js';
import { handWrittenSqlite, ulid } from './hand-written-sqlite.js';
import { counterMachine, envelope, IncrementPayload, xstateCounter } from './machines.js';

const [framework, storeUrl] = process.argv.slice(2) as ['fastify' | 'express', string];
// The tracing-cost runs (`<checkout>+otel`): an application's SDK registered before anything runs.
if (process.env.BENCH_OTEL === '1') await import('./otel-sdk.js');
const store = await openStore(storeUrl, { migrate: true });
const router = new MachineRouter({
  runtime: new MachineRuntime({ store }),
  logger: { error: () => {} },
});
router.register(counterMachine, {
  prefix: 'counters',
  create: true,
  machineIdFor: ['INCREMENT'],
  reads: true,
});
router.register(counterMachine, { prefix: 'quotes', name: 'quote' });
const raw = envelope('01J0000000000000000000RAW0', 1);

let port: number;
if (framework === 'fastify') {
  const app = Fastify({ logger: false });
  app.post('/raw/increment', async () => raw);
  if (store instanceof SqliteStore) handWritten(app, store);
  if (store instanceof PostgresStore) await handWrittenPostgres(app, store);
  await mountFastify(app, router);
  await app.listen({ host: '127.0.0.1', port: 0 });
  port = (app.server.address() as AddressInfo).port;
} else {
  const app = express();
  app.post('/raw/increment', express.json(), (_request, response) => {
    response.json(raw);
  });
  mountExpress(app, router);
  port = await new Promise<number>((resolve) => {
    const server = app.listen(0, '127.0.0.1', () =>
      resolve((server.address() as AddressInfo).port),
    );
  });
}
process.stdout.write(`READY ${port}\n`);
// Exit normally on a signal, so `node --cpu-prof` (bench/http/profile.ts) writes its profile.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => process.exit(0));

/**
 * The hand-written baseline, on the same SQLite file and pragmas (WAL, synchronous NORMAL, the
 * store's busy timeout), through a connection of its own as such a handler would open: SQLite's
 * defaults otherwise, so its checkpoints run on its commits (the store's connection checkpoints
 * from a thread and keeps the automatic checkpoint only as a fallback, docs/persistence.md).
 */
function handWritten(app: FastifyInstance, sqlite: SqliteStore): void {
  const db = new Database(sqlite.filename, { timeout: 5000 });
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  const { load, write, create, step } = handWrittenSqlite(db);
  // The same guarantees as machine-routes: the lock row, not the database's write lock, keeps
  // other writers of this instance out, so no writer of any process waits on a transition.
  db.exec(`CREATE TABLE IF NOT EXISTS hw_locks (id TEXT PRIMARY KEY, owner TEXT NOT NULL,
    expires_at INTEGER NOT NULL) WITHOUT ROWID`);
  const takeLock = db.prepare(
    `INSERT INTO hw_locks (id, owner, expires_at) VALUES (?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
     WHERE hw_locks.expires_at < ?`,
  );
  const dropLock = db.prepare('DELETE FROM hw_locks WHERE id = ? AND owner = ?');
  const lockAndLoad = db.transaction((id: string, owner: string) => {
    const row = load.get(id) as { snapshot: string; seq: number } | undefined;
    if (!row) return null;
    const now = Date.now();
    return takeLock.run(id, owner, now + 60_000, now).changes === 1 ? row : 'locked';
  });
  const writeAndRelease = db.transaction(
    (id: string, owner: string, seq: number, by: number, snapshot: { context: unknown }) => {
      write(id, seq, JSON.stringify({ by }), snapshot, 'INCREMENT');
      dropLock.run(id, owner);
    },
  );
  app.post<{ Params: { id: string }; Body: { payload?: unknown } }>(
    '/hwl/:id/increment',
    async (request, reply) => {
      const parsed = IncrementPayload.safeParse(request.body?.payload);
      if (!parsed.success) return reply.code(422).send({ message: 'Invalid payload.' });
      const id = request.params.id;
      const owner = ulid();
      const row = lockAndLoad.immediate(id, owner);
      if (row === null) return reply.code(404).send({ message: 'Machine not found.' });
      if (row === 'locked') return reply.code(423).send({ message: 'Machine is running.' });
      const actor = createActor(xstateCounter, { snapshot: JSON.parse(row.snapshot) }).start();
      actor.send({ type: 'INCREMENT', by: parsed.data.by });
      const snapshot = actor.getPersistedSnapshot() as unknown as { context: { count: number } };
      actor.stop();
      writeAndRelease.immediate(id, owner, row.seq, parsed.data.by, snapshot);
      return envelope(id, snapshot.context.count);
    },
  );
  app.post('/hw/create', async (_request, reply) => {
    const actor = createActor(xstateCounter).start();
    const snapshot = actor.getPersistedSnapshot() as unknown as { context: { count: number } };
    actor.stop();
    const id = ulid();
    create.immediate(id, 0, null, snapshot, 'counter.start');
    return reply
      .code(201)
      .send({ data: { id, state: ['counter.active'], output: snapshot.context } });
  });
  app.post<{ Params: { id: string }; Body: { payload?: unknown } }>(
    '/hw/:id/increment',
    async (request, reply) => {
      const parsed = IncrementPayload.safeParse(request.body?.payload);
      if (!parsed.success) return reply.code(422).send({ message: 'Invalid payload.' });
      const snapshot = step.immediate(request.params.id, parsed.data.by);
      if (!snapshot) return reply.code(404).send({ message: 'Machine not found.' });
      return envelope(request.params.id, snapshot.context.count);
    },
  );
}
