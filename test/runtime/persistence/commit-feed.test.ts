/**
 * The commit feed's shutdown: a runtime closes its feed before its store, so the last notices
 * still go out, the LISTEN connection is given back (else the pool's end() would wait for it
 * forever) and nothing touches the pool after it ended. Closing twice is harmless, and watching
 * after close is refused with RuntimeClosedException. On PostgreSQL and on the embedded store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineMachine } from '../../../src/runtime/definition/define-machine.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { RuntimeClosedException } from '../../../src/runtime/errors.js';
import {
  commitChannel,
  PostgresCommitFeed,
  type CommitNotice,
} from '../../../src/runtime/persistence/commit-feed.js';
import type { PostgresStore } from '../../../src/runtime/persistence/postgres-store.js';
import { openStore } from '../../../src/runtime/persistence/open-store.js';
import { createTestSchema, dropSchema } from '../../support/postgres.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';

const machine = defineMachine({
  config: {
    id: 'feed',
    initial: 'idle',
    states: { idle: { on: { GO: 'done' } }, done: { type: 'final' } },
  },
});

const postgres = await postgresBackend('commit_feed');
const backends: StoreBackend[] = [sqliteFileBackend()];
if (postgres) backends.push(postgres);

/**
 * Migrates the store at `url`, then one runtime sends an event and another runtime of the same
 * schema hears its commit through the feed.
 */
async function expectNoticeAcrossRuntimes(url: string): Promise<void> {
  await (await openStore(url, { migrate: true })).close();
  const listening = new MachineRuntime({ store: await openStore(url) });
  const sending = new MachineRuntime({ store: await openStore(url) });
  try {
    const { snapshot } = await sending.create(machine);
    let heard!: (notice: CommitNotice) => void;
    const arrived = new Promise<CommitNotice>((resolve) => (heard = resolve));
    await listening.watch(snapshot.id, (notice) => {
      if (notice.sequence > snapshot.sequence) heard(notice);
    });
    await sending.send(machine, snapshot.id, { type: 'GO' });
    const notice = await arrived;
    const { snapshot: last } = await listening.read(machine, snapshot.id);
    expect(notice).toEqual({ machineId: 'feed', id: snapshot.id, sequence: last.sequence });
  } finally {
    await sending.close();
    await listening.close();
  }
}

describe.each(backends)('closing a runtime and its commit feed on $name', (backend) => {
  beforeAll(() => backend.setUp());
  afterAll(() => backend.tearDown());

  it('should close once, however often it is called, without errors after the store ended', async () => {
    const errors: unknown[] = [];
    const runtime = new MachineRuntime({
      store: await backend.open(),
      onDeferredError: (error) => errors.push(error),
    });
    const heard: CommitNotice[] = [];
    const { snapshot } = await runtime.create(machine);
    const stop = await runtime.watch(snapshot.id, (notice) => heard.push(notice));
    // A commit whose notice is still queued when close starts (NOTIFY is sent per loop turn).
    await runtime.send(machine, snapshot.id, { type: 'GO' });
    await Promise.all([runtime.close(), runtime.close()]);
    await runtime.close();
    // Past the turn in which a queued NOTIFY used to be sent to the ended pool.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(errors).toEqual([]);
    stop();
    await expect(runtime.watch(snapshot.id, () => {})).rejects.toBeInstanceOf(
      RuntimeClosedException,
    );
  });
});

describe.runIf(postgres !== null)('the PostgreSQL commit feed', () => {
  beforeAll(() => postgres!.setUp());
  afterAll(() => postgres!.tearDown());

  it('should send the notices queued at close to the other listeners of the schema', async () => {
    const listening = new MachineRuntime({ store: await postgres!.open() });
    const closing = new MachineRuntime({ store: await postgres!.open() });
    try {
      const { snapshot } = await closing.create(machine);
      const heard: CommitNotice[] = [];
      let wake = (): void => {};
      const arrived = new Promise<void>((resolve) => (wake = resolve));
      // The create's own notice may or may not arrive (sent while LISTEN starts): not counted.
      await listening.watch(snapshot.id, (notice) => {
        if (notice.sequence === snapshot.sequence) return;
        heard.push(notice);
        wake();
      });
      await closing.send(machine, snapshot.id, { type: 'GO' });
      // Closed in the same turn as the commit: its NOTIFY is sent by close, not lost.
      await closing.close();
      await arrived;
      const { snapshot: last } = await listening.read(machine, snapshot.id);
      expect(heard).toEqual([{ machineId: 'feed', id: snapshot.id, sequence: last.sequence }]);
    } finally {
      await closing.close();
      await listening.close();
    }
  });

  it('should reach listeners of a schema whose name is too long for a channel name', async () => {
    // Longer than the 40 characters the channel prefix leaves of PostgreSQL's 63; the prefix
    // keeps room for the pid and random suffix that make the name unique.
    const long = await createTestSchema('commit_feed_with_a_long_schema_name');
    expect(`machine_routes_commits_${long.schema}`.length).toBeGreaterThan(63);
    expect(commitChannel(long.schema).length).toBeLessThanOrEqual(63);
    try {
      await expectNoticeAcrossRuntimes(long.url);
    } finally {
      await long.drop();
    }
  });

  it('should migrate, serve and reach listeners of a schema named in mixed case', async () => {
    // The store accepts upper-case letters in a schema name and creates it quoted: the
    // search_path and the channel must keep its case (unquoted, PostgreSQL folds both to lower
    // case: migrate found no schema to create in, and `Tenant` and `tenant` shared a channel).
    const schema = `Mrt_Mixed_Case_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
    expect(commitChannel(schema)).not.toBe(commitChannel(schema.toLowerCase()));
    const url = new URL(postgres!.url());
    url.searchParams.set('schema', schema);
    try {
      await expectNoticeAcrossRuntimes(url.toString());
    } finally {
      await dropSchema(schema);
    }
  });

  it('should give the LISTEN connection back to the pool, so the pool can end', async () => {
    const store = (await postgres!.open()) as PostgresStore;
    const feed = new PostgresCommitFeed(store);
    await feed.subscribe('any', () => {});
    expect(store.pool.totalCount - store.pool.idleCount).toBe(1);
    await feed.close();
    await feed.close();
    expect(store.pool.totalCount - store.pool.idleCount).toBe(0);
    await store.close();
  });

  it('should hold a watch lease while an instance is watched and let it run out after', async () => {
    const store = (await postgres!.open()) as PostgresStore;
    const runtime = new MachineRuntime({ store });
    // A lease of 2 s, renewed once this process took it 300 ms ago.
    const feed = new PostgresCommitFeed(store, undefined, { leaseSeconds: 2, renewAfterMs: 300 });
    const lease = async (id: string) =>
      (
        await store.pool.query<{ until: Date | null; live: boolean | null }>(
          `SELECT watched_until AS until, watched_until > now() AS live
           FROM machine_instances WHERE root_event_id = $1`,
          [id],
        )
      ).rows[0]!;
    try {
      const { snapshot } = await runtime.create(machine);
      expect(await lease(snapshot.id)).toEqual({ until: null, live: null });
      const stop = await feed.subscribe(snapshot.id, () => {});
      const first = await lease(snapshot.id);
      expect(first.live).toBe(true);
      // Renewed while watched: the lease moves on.
      let renewed = first;
      while (renewed.until!.getTime() <= first.until!.getTime()) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        renewed = await lease(snapshot.id);
      }
      expect(renewed.live).toBe(true);
      // No longer watched: not renewed, it runs out.
      stop();
      let current = renewed;
      while (current.live === true) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        current = await lease(snapshot.id);
      }
      expect(current.live).toBe(false);
    } finally {
      await feed.close();
      await runtime.close();
    }
  });
});
