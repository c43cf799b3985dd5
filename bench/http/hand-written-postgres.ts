/**
 * The hand-written PostgreSQL baseline of the bound benchmarks (bench/http/server.ts and
 * bench/scale/round-trips.ts): Fastify + XState v5 + `pg`, the current-state row locked with
 * SELECT ... FOR UPDATE, an event and a transition record and the snapshot upsert in one
 * transaction (BEGIN, SELECT, INSERT, INSERT ... ON CONFLICT, COMMIT: five round trips).
 */
import type { FastifyInstance } from 'fastify';
import { createActor } from 'xstate';
import type { PostgresStore } from '../../src/runtime/persistence/postgres-store.js';
import { ulid } from './hand-written-sqlite.js';
import { envelope, IncrementPayload, xstateCounter } from './machines.js';

/**
 * The hand-written baseline on PostgreSQL (same server, schema and pool settings as the
 * store): the current-state row is locked with FOR UPDATE inside the one transaction, the
 * idiomatic PostgreSQL way to serialize writers of one instance.
 */
export async function handWrittenPostgres(
  app: FastifyInstance,
  postgres: PostgresStore,
): Promise<void> {
  const pool = postgres.pool;
  await pool.query(`CREATE TABLE IF NOT EXISTS hw_current_states (id TEXT PRIMARY KEY, snapshot JSON NOT NULL, seq INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS hw_events (id TEXT PRIMARY KEY, root_id TEXT NOT NULL, seq INTEGER NOT NULL,
      type TEXT NOT NULL, payload JSON, context JSON, created_at TIMESTAMPTZ NOT NULL);
    CREATE UNIQUE INDEX IF NOT EXISTS hw_events_root_seq ON hw_events (root_id, seq);`);
  const commit = async (
    id: string,
    step: (
      row: { snapshot: unknown; seq: number } | null,
    ) => { snapshot: { context: unknown }; type: string; payload: string | null } | null,
  ) => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<{ snapshot: unknown; seq: number }>(
        'SELECT snapshot, seq FROM hw_current_states WHERE id = $1 FOR UPDATE',
        [id],
      );
      const result = step(rows[0] ?? null);
      if (result === null) {
        await client.query('ROLLBACK');
        return null;
      }
      const seq = rows[0]?.seq ?? 0;
      const now = new Date();
      await client.query(
        `INSERT INTO hw_events (id, root_id, seq, type, payload, context, created_at)
         VALUES ($1, $2, $3, $4, $5, NULL, $6), ($7, $2, $8, 'counter.transition', NULL, $9, $6)`,
        [
          ulid(),
          id,
          seq + 1,
          result.type,
          result.payload,
          now,
          ulid(),
          seq + 2,
          JSON.stringify(result.snapshot.context),
        ],
      );
      await client.query(
        `INSERT INTO hw_current_states (id, snapshot, seq) VALUES ($1, $2, $3)
         ON CONFLICT (id) DO UPDATE SET snapshot = excluded.snapshot, seq = excluded.seq`,
        [id, JSON.stringify(result.snapshot), seq + 2],
      );
      await client.query('COMMIT');
      return result.snapshot;
    } catch (error) {
      await client.query('ROLLBACK');
      throw error;
    } finally {
      client.release();
    }
  };
  app.post('/hw/create', async (_request, reply) => {
    const id = ulid();
    const snapshot = await commit(id, () => {
      const actor = createActor(xstateCounter).start();
      const persisted = actor.getPersistedSnapshot() as unknown as { context: { count: number } };
      actor.stop();
      return { snapshot: persisted, type: 'counter.start', payload: null };
    });
    return reply
      .code(201)
      .send({ data: { id, state: ['counter.active'], output: snapshot?.context } });
  });
  app.post<{ Params: { id: string }; Body: { payload?: unknown } }>(
    '/hw/:id/increment',
    async (request, reply) => {
      const parsed = IncrementPayload.safeParse(request.body?.payload);
      if (!parsed.success) return reply.code(422).send({ message: 'Invalid payload.' });
      const snapshot = await commit(request.params.id, (row) => {
        if (row === null) return null;
        const actor = createActor(xstateCounter, { snapshot: row.snapshot as never }).start();
        actor.send({ type: 'INCREMENT', by: parsed.data.by });
        const persisted = actor.getPersistedSnapshot() as unknown as { context: { count: number } };
        actor.stop();
        return { snapshot: persisted, type: 'INCREMENT', payload: JSON.stringify(parsed.data) };
      });
      if (snapshot === null) return reply.code(404).send({ message: 'Machine not found.' });
      return envelope(request.params.id, (snapshot.context as { count: number }).count);
    },
  );
}
