/**
 * SQLite group commits (docs/persistence.md "Group commits"): the commits queued in one turn of
 * the event loop share one write transaction, each in a savepoint of its own, so a refused one
 * (fenced out, its hook failing) writes nothing and the others commit; a part that ends the
 * whole transaction makes the others commit alone; a busy database refuses them all. What a
 * commit writes does not depend on whether it was grouped. The reads queued by the time a group
 * is written run at the end of its transaction and are answered once it committed.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  MachineRuntime,
  SequenceConflictError,
  SqliteStore,
  StoreBusyError,
} from '../../../src/runtime/index.js';
import type { HistoryRecord } from '../../../src/runtime/interpreter/types.js';
import { makeStep } from '../../support/stores.js';
import { counterMachine } from './fixtures/machines.js';

let dir: string;
let filename: string;
let store: SqliteStore;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mr-group-commit-'));
  filename = join(dir, 'machines.db');
  // Inline checkpoints, and none while a test runs: the WAL keeps every transaction's frames.
  store = new SqliteStore({ filename, checkpoints: 'inline', busyTimeoutMs: 20 });
  store.database.pragma('wal_autocheckpoint = 0');
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Committed transactions in the WAL since its last reset: frames that end a commit. */
function walCommits(): number {
  const wal = readFileSync(`${filename}-wal`);
  const pageSize = wal.readUInt32BE(8);
  let commits = 0;
  for (let offset = 32; offset + 24 + pageSize <= wal.length; offset += 24 + pageSize)
    if (wal.readUInt32BE(offset + 4) !== 0) commits += 1;
  return commits;
}

const step = (context: Record<string, unknown> = { count: 0 }) =>
  makeStep({ machineId: 'counter', value: ['counter.counting'], context });

describe('SqliteStore group commits', () => {
  it('should write the commits of one turn in one transaction, each as it would be alone', async () => {
    const steps = Array.from({ length: 5 }, (_, index) => step({ count: index }));
    store.database.pragma('wal_checkpoint(TRUNCATE)');

    await Promise.all(steps.map((request) => store.commit(request)));

    expect(walCommits()).toBe(1);
    for (const request of steps) {
      expect(await store.load(request.snapshot.id)).toEqual(request.snapshot);
      expect(await store.history(request.snapshot.id)).toEqual(request.history);
    }
    // Commits of different turns stay apart.
    store.database.pragma('wal_checkpoint(TRUNCATE)');
    for (const request of [step(), step()]) await store.commit(request);
    expect(walCommits()).toBe(2);
  });

  it('should refuse only the fenced-out commit of a group and write the others', async () => {
    const first = step();
    await store.commit(first);
    const stale = makeStep({
      machineId: 'counter',
      from: { ...first.snapshot, sequence: first.snapshot.sequence - 1 },
      value: ['counter.counting'],
      context: { count: 9 },
    });
    const before = step();
    const after = step();

    const outcomes = await Promise.allSettled([
      store.commit(before),
      store.commit(stale),
      store.commit(after),
    ]);

    expect(outcomes.map((outcome) => outcome.status)).toEqual([
      'fulfilled',
      'rejected',
      'fulfilled',
    ]);
    expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(SequenceConflictError);
    expect(await store.load(first.snapshot.id)).toEqual(first.snapshot);
    expect(await store.history(first.snapshot.id)).toEqual(first.history);
    expect(await store.load(before.snapshot.id)).toEqual(before.snapshot);
    expect(await store.load(after.snapshot.id)).toEqual(after.snapshot);
  });

  it('should roll back a part whose transaction hook throws, and only that part', async () => {
    const good = step();
    const bad = {
      ...step(),
      inTransaction: () => {
        throw new Error('hook failed');
      },
    };

    const outcomes = await Promise.allSettled([store.commit(bad), store.commit(good)]);

    expect((outcomes[0] as PromiseRejectedResult).reason).toEqual(new Error('hook failed'));
    expect(outcomes[1]!.status).toBe('fulfilled');
    expect(await store.load(bad.snapshot.id)).toBeNull();
    expect(await store.history(bad.snapshot.id)).toEqual([]);
    expect(await store.load(good.snapshot.id)).toEqual(good.snapshot);
  });

  it('should commit the others alone when a part ends the whole transaction', async () => {
    const good = [step(), step()];
    const bad = {
      ...step(),
      // What SQLite does on SQLITE_FULL or an I/O error: the transaction is gone.
      inTransaction: ({ database }: { database?: { exec(sql: string): unknown } }) => {
        database!.exec('ROLLBACK');
        throw new Error('disk full');
      },
    };
    store.database.pragma('wal_checkpoint(TRUNCATE)');

    const outcomes = await Promise.allSettled([
      store.commit(good[0]!),
      store.commit(bad as never),
      store.commit(good[1]!),
    ]);

    expect(outcomes.map((outcome) => outcome.status)).toEqual([
      'fulfilled',
      'rejected',
      'fulfilled',
    ]);
    expect(await store.load(bad.snapshot.id)).toBeNull();
    for (const request of good) {
      expect(await store.load(request.snapshot.id)).toEqual(request.snapshot);
      expect(await store.history(request.snapshot.id)).toEqual(request.history);
    }
    expect(walCommits()).toBe(2);
    expect(store.database.inTransaction).toBe(false);
  });

  it('should refuse every commit of a group with StoreBusyError when the database stays locked', async () => {
    const other = new SqliteStore({ filename });
    const steps = [step(), step()];
    try {
      other.database.prepare('BEGIN IMMEDIATE').run();
      const outcomes = await Promise.allSettled(steps.map((request) => store.commit(request)));
      other.database.prepare('ROLLBACK').run();

      for (const outcome of outcomes)
        expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(StoreBusyError);
      for (const request of steps) expect(await store.load(request.snapshot.id)).toBeNull();
    } finally {
      await other.close();
    }
  });

  it('should write on close the commits still queued', async () => {
    const request = step();
    const committed = store.commit(request);
    await store.close();
    await committed;

    const reopened = new SqliteStore({ filename });
    try {
      expect(await reopened.load(request.snapshot.id)).toEqual(request.snapshot);
    } finally {
      await reopened.close();
    }
  });
});

describe('SqliteStore reads in a group commit', () => {
  it("should run the turn's reads in its group's write transaction, after its commits", async () => {
    const earlier = step({ count: 1 });
    await store.commit(earlier);
    const prepare = vi.spyOn(store.database, 'prepare');
    store.database.pragma('wal_checkpoint(TRUNCATE)');

    // Asked after the commit in one turn: the group commit's immediate runs first.
    const committed = store.commit(step({ count: 2 }));
    const later = step({ count: 3 });
    const commitLater = store.commit(later);
    const reads = [store.loadForRead(earlier.snapshot.id), store.loadForRead(later.snapshot.id)];
    const loads = await Promise.all(reads);
    await Promise.all([committed, commitLater]);

    expect(loads.map((load) => load!.snapshot)).toEqual([earlier.snapshot, later.snapshot]);
    // One transaction for the turn: the reads opened no read transaction of their own.
    expect(prepare.mock.calls.map(([sql]) => sql)).not.toContain('BEGIN DEFERRED');
    expect(walCommits()).toBe(1);
    expect(store.database.inTransaction).toBe(false);
  });

  it('should read with the one commit of a turn, and not see a refused part', async () => {
    const first = step();
    await store.commit(first);
    const from = first.snapshot;
    const next = makeStep({ machineId: 'counter', from, value: from.value, context: { count: 1 } });
    const stale = makeStep({
      machineId: 'counter',
      from,
      value: from.value,
      context: { count: 9 },
    });
    await store.commit(next);

    // Fenced out (its expected sequence is gone): rolled back alone, the reads go on.
    const outcome = store.commit(stale);
    const load = store.loadForRead(first.snapshot.id);

    await expect(outcome).rejects.toBeInstanceOf(SequenceConflictError);
    expect((await load)!.snapshot).toEqual(next.snapshot);
  });

  it('should answer the reads of a group rolled back as a whole from a transaction of their own', async () => {
    const existing = step({ count: 5 });
    await store.commit(existing);
    const good = step({ count: 6 });
    const bad = {
      ...step(),
      inTransaction: ({ database }: { database?: { exec(sql: string): unknown } }) => {
        database!.exec('ROLLBACK');
        throw new Error('disk full');
      },
    };

    const outcomes = Promise.allSettled([store.commit(good), store.commit(bad as never)]);
    const loads = Promise.all([
      store.loadForRead(existing.snapshot.id),
      store.loadForRead(good.snapshot.id),
      store.loadForRead(bad.snapshot.id),
    ]);

    expect((await outcomes).map((outcome) => outcome.status)).toEqual(['fulfilled', 'rejected']);
    // Read again after the retried commits: the good one committed alone, the bad one never.
    expect((await loads).map((load) => load?.snapshot ?? null)).toEqual([
      existing.snapshot,
      good.snapshot,
      null,
    ]);
    expect(store.database.inTransaction).toBe(false);
  });
});

describe('MachineRuntime.send with group commits', () => {
  // History without what differs by run (ids, times).
  const shape = (history: HistoryRecord[]) =>
    history.map(({ id: _id, createdAt: _createdAt, ...rest }) => rest);

  it('should write the same history and states for concurrent sends as for sequential ones', async () => {
    const runtime = new MachineRuntime({ store });
    const ids: string[] = [];
    for (let index = 0; index < 8; index += 1)
      ids.push((await runtime.create(counterMachine)).snapshot.id);
    const sequential = ids.slice(0, 4);
    const concurrent = ids.slice(4);
    for (let round = 0; round < 3; round += 1) {
      for (const id of sequential) await runtime.send(counterMachine, id, { type: 'INC' });
      store.database.pragma('wal_checkpoint(TRUNCATE)');
      await Promise.all(concurrent.map((id) => runtime.send(counterMachine, id, { type: 'INC' })));
      // The concurrent sends of a round (lock-free once the type is known quick) share a commit.
      if (round > 0) expect(walCommits()).toBe(1);
    }

    const reference = shape(await store.history(sequential[0]!));
    for (const id of ids) {
      expect(
        shape(await store.history(id)).map((record) => ({ ...record, rootEventId: '' })),
      ).toEqual(reference.map((record) => ({ ...record, rootEventId: '' })));
      expect((await store.load(id))!.context).toEqual({ count: 3 });
      expect(await store.readLock(id)).toBeNull();
    }
  });
});
