/**
 * History retention (`MACHINE_HISTORY_RETENTION_DAYS`): a real `machine-routes worker` process
 * deletes the history of instances finished more than the retention ago, in batches, on a SQLite
 * file and on PostgreSQL; instances still running, and instances finished within the
 * retention, keep every record (and timer rows), and a running instance old enough goes on
 * taking events (its sequence is intact). Timer fire rows left by versions that kept them after
 * the finish go with the history.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/runtime/clock.js';
import { MachineOperations } from '../../../src/runtime/engine/operations/machine-operations.js';
import { MachineRuntime, SqliteStore, openStore, type Store } from '../../../src/runtime/index.js';
import type { PostgresStore } from '../../../src/postgres.js';
import { startFixture, type FixtureProcess } from '../../support/child-process.js';
import { durableBackends } from '../../support/durable-backends.js';
import { documentMachine } from './retention/machines.js';
import { countOf, finishedDocuments, markedOf } from './retention/store-rows.js';

const CLI = fileURLToPath(new URL('./retention/cli.ts', import.meta.url));
const CONFIG = fileURLToPath(new URL('./retention/machine-routes.config.ts', import.meta.url));
const DAY = 86_400_000;

const backends = await durableBackends('operations/history-retention');

/** A timer fire row as versions that did not delete them at the finish left behind. */
async function leaveFireRow(store: Store, id: string): Promise<void> {
  const sql = `INSERT INTO machine_timer_fires (root_event_id, timer_key, last_fired_at, fire_count, status)
    VALUES (?, 'document.draft:REMIND:60', ?, 1, 'fired')`;
  const at = new Date().toISOString();
  if (store instanceof SqliteStore) store.database.prepare(sql).run(id, at);
  else
    await (store as PostgresStore).pool.query(sql.replace('?', '$1').replace('?', '$2'), [id, at]);
}
const firesOf = (store: Store, ids: readonly string[]) =>
  countOf(store, 'SELECT count(*) AS n FROM machine_timer_fires WHERE root_event_id', ids);
const eventsOf = (store: Store, ids: readonly string[]) =>
  countOf(store, 'SELECT count(*) AS n FROM machine_events WHERE root_event_id', ids);
describe.each(backends)('history retention by the worker on $name', (backend) => {
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
  it('should delete the history of instances finished before the retention, and only theirs', async () => {
    // Written on a clock 40 days back, moved forward by hand: the worker (system clock) sees
    // these times as they are.
    const clock = new ManualClock(new Date(Date.now() - 40 * DAY).toISOString());
    const runtime = await MachineRuntime.open({ databaseUrl: url, worker: false, clock });
    let old: string[];
    let recent: string;
    let running: string;
    try {
      // 250 instances finished 40 days ago: more than two batches of 100.
      old = await finishedDocuments(runtime, 250);
      // Started 40 days ago: one finishes 10 days ago, one is still running.
      recent = (await runtime.create(documentMachine)).snapshot.id;
      running = (await runtime.create(documentMachine)).snapshot.id;
      await runtime.send(documentMachine, running, { type: 'EDIT' });
      clock.advance(30 * DAY);
      await runtime.send(documentMachine, recent, { type: 'PUBLISH' });
    } finally {
      await runtime.close();
    }

    const store = await openStore(url);
    try {
      const before = await eventsOf(store, old);
      expect(before).toBeGreaterThan(250 * 3);
      const keptBefore = await eventsOf(store, [recent, running]);
      await leaveFireRow(store, old[0]!);
      await leaveFireRow(store, running);

      const worker = startFixture(CLI, ['worker', '--config', CONFIG, '--database', url], {
        MACHINE_HISTORY_RETENTION_DAYS: '30',
      });
      processes.push(worker);
      await worker.waitForLine((line) => line.startsWith('Worker running'), 60_000);
      // The worker sweeps when it starts: wait for it (bounded), then look at every table.
      const deadline = Date.now() + 60_000;
      while ((await markedOf(store, old)) < old.length && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 100));

      expect(await markedOf(store, old)).toBe(old.length);
      expect(await eventsOf(store, old)).toBe(0);
      // Timer rows an older version left with a finished instance go with its history.
      expect(await firesOf(store, old)).toBe(0);
      expect(await firesOf(store, [running])).toBe(1);
      // Finished within the retention, or running: every record kept, nothing marked.
      expect(await eventsOf(store, [recent, running])).toBe(keptBefore);
      expect(await markedOf(store, [recent, running])).toBe(0);
      // The instance rows stay: final state and context.
      const finished = await store.load(old[0]!);
      expect(finished).toMatchObject({ status: 'done', value: ['document.published'] });
      expect(finished!.context).toEqual({ edits: 1 });
    } finally {
      await store.close();
    }

    // The running instance, 40 days old, goes on: its history is whole and its sequence fence
    // intact; the timeline of a swept instance is empty, not cut.
    const after = await MachineRuntime.open({ databaseUrl: url, worker: false });
    try {
      const sent = await after.send(documentMachine, running, { type: 'PUBLISH' });
      expect(sent.snapshot.status).toBe('done');
      const operations = new MachineOperations({ runtime: after, machines: [documentMachine] });
      const timeline = await operations.history('document', running, { limit: 500 });
      expect(timeline.items.map((record) => record.sequence)).toEqual(
        timeline.items.map((_, index) => index + 1),
      );
      expect((await operations.history('document', old[0]!, {})).items).toEqual([]);
    } finally {
      await after.close();
    }
    const worker = processes.at(-1)!;
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    expect(worker.stderr()).not.toMatch(/retention failed/);
  }, 180_000);
});
