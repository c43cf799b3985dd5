/**
 * History archiving (`MACHINE_HISTORY_RETENTION_ARCHIVE`): the retention sweep moves the records
 * of instances finished before the cutoff into `machine_events_archive` instead of deleting them,
 * in batches, on a SQLite file and on PostgreSQL. A sweep stopped after its first batch leaves a
 * consistent store (that batch moved, the rest untouched), and a real `machine-routes worker`
 * process started after it moves the rest: every record is in the archive exactly once, with its
 * content, and none is left in `machine_events`.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/runtime/clock.js';
import { HistoryRetentionSweeper } from '../../../src/runtime/engine/history-retention.js';
import { MachineRuntime, SqliteStore, openStore, type Store } from '../../../src/runtime/index.js';
import type { PostgresStore } from '../../../src/postgres.js';
import { startFixture, type FixtureProcess } from '../../support/child-process.js';
import { durableBackends } from '../../support/durable-backends.js';
import { documentMachine } from './retention/machines.js';
import { finishedDocuments, markedOf } from './retention/store-rows.js';

const CLI = fileURLToPath(new URL('./retention/cli.ts', import.meta.url));
const CONFIG = fileURLToPath(new URL('./retention/machine-routes.config.ts', import.meta.url));
const DAY = 86_400_000;

const backends = await durableBackends('operations/history-archive');

/** A record as compared before and after the move (JSON columns as text on both stores). */
interface RecordRow {
  id: string;
  root_event_id: string;
  sequence_number: number;
  type: string;
  payload: string | null;
  machine_value: string;
  actor: string | null;
}

/** Rows of `table` for some instances, in instance and sequence order. */
async function rows(store: Store, table: string, ids: readonly string[]): Promise<RecordRow[]> {
  const columns = `id, root_event_id, sequence_number, type, payload, machine_value, actor`;
  const order = `ORDER BY root_event_id, sequence_number`;
  if (store instanceof SqliteStore) {
    const marks = ids.map(() => '?').join(', ');
    return store.database
      .prepare(`SELECT ${columns} FROM ${table} WHERE root_event_id IN (${marks}) ${order}`)
      .all(...ids) as RecordRow[];
  }
  const result = await (store as PostgresStore).pool.query<RecordRow>(
    `SELECT id, root_event_id, sequence_number, type, payload::text AS payload,
       machine_value::text AS machine_value, actor
     FROM ${table} WHERE root_event_id = ANY($1::text[]) ${order}`,
    [ids],
  );
  return result.rows;
}

describe.each(backends)('history archiving on $name', (backend) => {
  let url: string;
  const processes: FixtureProcess[] = [];

  beforeAll(async () => {
    url = await backend.setUp();
  });
  afterAll(async () => {
    for (const started of processes) started.child.kill('SIGKILL');
    await Promise.all(processes.map((started) => started.exited));
    await backend.tearDown();
  });

  // 250 instances by 750 steps, then a worker process: minutes on a loaded shared host.
  it('should move every record of instances finished before the retention once, across a stopped sweep', async () => {
    const clock = new ManualClock(new Date(Date.now() - 40 * DAY).toISOString());
    const runtime = await MachineRuntime.open({ databaseUrl: url, worker: false, clock });
    let old: string[];
    let recent: string;
    try {
      // 250 instances finished 40 days ago: three batches of 100.
      old = await finishedDocuments(runtime, 250);
      recent = (await runtime.create(documentMachine)).snapshot.id;
      clock.advance(30 * DAY);
      await runtime.send(documentMachine, recent, { type: 'PUBLISH' });
    } finally {
      await runtime.close();
    }

    const store = await openStore(url);
    try {
      const before = await rows(store, 'machine_events', old);
      expect(before.length).toBeGreaterThan(250 * 3);
      const recentBefore = await rows(store, 'machine_events', [recent]);

      // A sweep stopped after its first batch (as a worker stopping mid-sweep ends it).
      const first = new HistoryRetentionSweeper({
        store,
        retentionDays: 30,
        archive: true,
        batchSize: 100,
        onError: (error) => {
          throw error;
        },
      });
      await first.stop();
      const report = await first.sweepOnce();
      expect(report).toMatchObject({ instances: 100, batches: 1 });
      expect(await markedOf(store, old)).toBe(100);
      const archivedFirst = await rows(store, 'machine_events_archive', old);
      expect(archivedFirst.length).toBe(report.records);
      expect((await rows(store, 'machine_events', old)).length).toBe(
        before.length - report.records,
      );

      // A real worker process resumes with the instances the first sweep did not mark.
      const worker = startFixture(CLI, ['worker', '--config', CONFIG, '--database', url], {
        MACHINE_HISTORY_RETENTION_DAYS: '30',
        MACHINE_HISTORY_RETENTION_ARCHIVE: 'true',
      });
      processes.push(worker);
      await worker.waitForLine((line) => line.startsWith('Worker running'), 60_000);
      const deadline = Date.now() + 60_000;
      while ((await markedOf(store, old)) < old.length && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 100));

      expect(await markedOf(store, old)).toBe(old.length);
      expect(await rows(store, 'machine_events', old)).toEqual([]);
      // Every record once, with its content (same ids, sequences, types, payloads, states).
      expect(await rows(store, 'machine_events_archive', old)).toEqual(before);
      // Finished within the retention: kept where it was, nothing archived.
      expect(await rows(store, 'machine_events', [recent])).toEqual(recentBefore);
      expect(await rows(store, 'machine_events_archive', [recent])).toEqual([]);
    } finally {
      await store.close();
    }
    const started = processes.at(-1)!;
    started.child.kill('SIGTERM');
    expect(await started.exited).toBe(0);
    expect(started.stderr()).not.toMatch(/retention failed/);
  }, 180_000);
});
