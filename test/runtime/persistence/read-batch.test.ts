/**
 * SQLite read batches (persistence/sqlite-read-batch.ts): the `loadForRead`s asked in one turn
 * run in one read transaction begun after the last of them was asked. A read sees every commit
 * that finished before it was asked, by another connection or another process, and never part
 * of one; queued reads are answered when the store closes.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../../src/runtime/index.js';
import { makeStep } from '../../support/stores.js';

let dir: string;
let filename: string;
let store: SqliteStore;
let other: SqliteStore;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'mr-read-batch-'));
  filename = join(dir, 'machines.db');
  store = new SqliteStore({ filename });
  other = new SqliteStore({ filename });
});
afterEach(async () => {
  await store.close();
  await other.close();
  rmSync(dir, { recursive: true, force: true });
});

const step = (count: number) =>
  makeStep({ machineId: 'counter', value: ['counter.counting'], context: { count } });

// A commit of another connection, written synchronously (no turn passes): the instances'
// contexts and sequence numbers change in one transaction.
function bumpElsewhere(ids: readonly string[], count: number): void {
  const update = other.database.prepare(
    `UPDATE machine_instances SET context = ?, sequence_number = sequence_number + 1
     WHERE root_event_id = ?`,
  );
  other.database.transaction(() => {
    for (const id of ids) update.run(JSON.stringify({ count }), id);
  })();
}

describe('SqliteStore read batches', () => {
  it("should see another connection's commit that finished between two reads asked in one turn", async () => {
    const first = step(0);
    const second = step(0);
    await store.commit(first);
    await store.commit(second);

    const before = store.loadForRead(first.snapshot.id);
    bumpElsewhere([first.snapshot.id, second.snapshot.id], 1);
    // Asked after that commit finished: it must be in this read's snapshot.
    const after = store.loadForRead(second.snapshot.id);
    const [a, b] = await Promise.all([before, after]);

    expect(b!.snapshot.context).toEqual({ count: 1 });
    expect(b!.snapshot.sequence).toBe(second.snapshot.sequence + 1);
    // The earlier read may show either version, never a mix.
    expect([0, 1]).toContain(a!.snapshot.context['count']);
    expect(a!.snapshot.sequence - first.snapshot.sequence).toBe(a!.snapshot.context['count']);
  });

  it("should see another process's commit in every read of a batch asked after it finished", async () => {
    const steps = Array.from({ length: 5 }, (_, index) => step(index));
    for (const request of steps) await store.commit(request);
    const ids = steps.map((request) => request.snapshot.id);
    // Warm the store's connection: its page cache holds the old rows.
    await Promise.all(ids.map((id) => store.loadForRead(id)));

    // A separate OS process commits all five in one transaction, and has exited.
    execFileSync(
      process.execPath,
      [
        '-e',
        `const db = new (require('better-sqlite3'))(process.argv[1]);
         const update = db.prepare("UPDATE machine_instances SET context = '{\\"count\\":42}', sequence_number = sequence_number + 1 WHERE root_event_id = ?");
         db.transaction(() => { for (const id of process.argv.slice(2)) update.run(id); })();
         db.close();`,
        filename,
        ...ids,
      ],
      { cwd: process.cwd() },
    );

    const loads = await Promise.all(ids.map((id) => store.loadForRead(id)));
    expect(loads.map((load) => load!.snapshot.context)).toEqual(ids.map(() => ({ count: 42 })));
    expect(loads.map((load) => load!.snapshot.sequence)).toEqual(
      steps.map((request) => request.snapshot.sequence + 1),
    );
  });

  it('should answer each read of a batch as it would be answered alone', async () => {
    const request = step(3);
    await store.commit(request);
    const alone = await store.loadForRead(request.snapshot.id);

    const batch = await Promise.all([
      store.loadForRead(request.snapshot.id),
      store.loadForRead('01J0000000000000000000NONE'),
      store.loadForRead(request.snapshot.id),
    ]);

    expect(batch).toEqual([alone, null, alone]);
    expect(alone!.snapshot).toEqual(request.snapshot);
    expect(store.database.inTransaction).toBe(false);
  });

  it('should answer reads still queued when the store closes', async () => {
    const request = step(7);
    await store.commit(request);

    const pending = [
      store.loadForRead(request.snapshot.id),
      store.loadForRead(request.snapshot.id),
    ];
    await store.close();

    for (const load of await Promise.all(pending))
      expect(load!.snapshot.context).toEqual({ count: 7 });
    // A read asked of the closed store fails instead of waiting forever.
    await expect(store.loadForRead(request.snapshot.id)).rejects.toThrow();
  });
});
