/**
 * The hand-written SQLite baseline of the bound benchmarks (bench/http/server.ts and
 * bound-breakdown.ts): XState + better-sqlite3, an event and a transition record per event and
 * the snapshot upserted, the load, transition and writes in one BEGIN IMMEDIATE transaction.
 */
import { getRandomValues } from 'node:crypto';
import type Database from 'better-sqlite3';
import { monotonicFactory } from 'ulid';
import { createActor } from 'xstate';
import { xstateCounter } from './machines.js';

// A ULID factory drawing its randomness from a pooled crypto source. Bare `ulid()` re-detects
// its source and draws one crypto value per character (about a quarter of the baseline's CPU
// time in a profile), which would flatter the runtime.
const randomPool = new Uint32Array(1024);
let randomIndex = randomPool.length;
export const ulid = monotonicFactory(() => {
  if (randomIndex === randomPool.length) {
    getRandomValues(randomPool);
    randomIndex = 0;
  }
  return randomPool[randomIndex++]! / 0x1_0000_0000;
});

/** The last snapshot of an instance, as the baseline keeps it. */
export interface HandWrittenRow {
  snapshot: string;
  seq: number;
}

/** The baseline's statements and transactions on `db` (its tables created if missing). */
export function handWrittenSqlite(db: Database.Database) {
  db.exec(`CREATE TABLE IF NOT EXISTS hw_current_states (id TEXT PRIMARY KEY, snapshot TEXT NOT NULL, seq INTEGER NOT NULL);
    CREATE TABLE IF NOT EXISTS hw_events (id TEXT PRIMARY KEY, root_id TEXT NOT NULL, seq INTEGER NOT NULL,
      type TEXT NOT NULL, payload TEXT, context TEXT, created_at TEXT NOT NULL);
    CREATE UNIQUE INDEX IF NOT EXISTS hw_events_root_seq ON hw_events (root_id, seq);`);
  const load = db.prepare('SELECT snapshot, seq FROM hw_current_states WHERE id = ?');
  const insertEvent = db.prepare(
    'INSERT INTO hw_events (id, root_id, seq, type, payload, context, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const upsert = db.prepare(
    `INSERT INTO hw_current_states (id, snapshot, seq) VALUES (?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET snapshot = excluded.snapshot, seq = excluded.seq`,
  );
  const write = (
    id: string,
    seq: number,
    payload: string | null,
    snapshot: { context: unknown },
    type: string,
  ) => {
    const now = new Date().toISOString();
    // The external event, then the transition record carrying the context restore reads.
    insertEvent.run(ulid(), id, seq + 1, type, payload, null, now);
    insertEvent.run(
      ulid(),
      id,
      seq + 2,
      'counter.transition',
      null,
      JSON.stringify(snapshot.context),
      now,
    );
    upsert.run(id, JSON.stringify(snapshot), seq + 2);
  };
  // Load, transition and writes in one BEGIN IMMEDIATE transaction: SQLite's write lock
  // serializes writers of other processes, so the row read is the one the writes continue
  // (no lost update, no duplicate sequence) — the per-instance locking a real handler needs.
  const step = db.transaction((id: string, by: number) => {
    const row = load.get(id) as HandWrittenRow | undefined;
    if (!row) return null;
    const actor = createActor(xstateCounter, { snapshot: JSON.parse(row.snapshot) }).start();
    actor.send({ type: 'INCREMENT', by });
    const snapshot = actor.getPersistedSnapshot() as unknown as { context: { count: number } };
    actor.stop();
    write(id, row.seq, JSON.stringify({ by }), snapshot, 'INCREMENT');
    return snapshot;
  });
  return { load, write, create: db.transaction(write), step };
}
