/**
 * Lock-free sends on PostgreSQL (docs/persistence.md "Lock-free sends"): once an event type's
 * transition was quick, its next events read the instance and its lock row in one statement,
 * take no lock row, and commit in one statement that refuses when a live lock row appeared
 * (`InstanceLockedError`) or the instance moved (the sequence fence): 423 with the state
 * committed meanwhile, nothing written. Another process acts here between the read and the
 * commit, through a connection of its own.
 */
import pg from 'pg';
import { ulid } from 'ulid';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { MachineAlreadyRunningException } from '../../../src/runtime/errors.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import type { MachineSnapshot } from '../../../src/runtime/interpreter/types.js';
import { openStore } from '../../../src/runtime/persistence/open-store.js';
import type { PostgresStore } from '../../../src/runtime/persistence/postgres-store.js';
import {
  PG_TEST_URL,
  createTestSchema,
  shouldRunPostgresTests,
  type TestSchema,
} from '../../support/postgres.js';
import { counterMachine } from './fixtures/machines.js';

const run = await shouldRunPostgresTests('lock-free-postgres');

describe.runIf(run)('MachineRuntime.send without a lock row (PostgreSQL)', () => {
  let schema: TestSchema;
  let store: PostgresStore;
  let runtime: MachineRuntime;
  /** Another process's connection. */
  let other: pg.Client;

  beforeAll(async () => {
    schema = await createTestSchema('lock_free');
    await (await openStore(schema.url, { migrate: true })).close();
  });
  afterAll(() => schema.drop());
  beforeEach(async () => {
    // Transitions take no time by the runtime's clock, so which send is quick does not depend
    // on the machine's load (a warm-up slower than LOCK_FREE_MAX_MS took the lock row again).
    vi.spyOn(performance, 'now').mockReturnValue(0);
    store = (await openStore(schema.url)) as PostgresStore;
    runtime = new MachineRuntime({ store });
    other = new pg.Client({
      connectionString: PG_TEST_URL,
      options: `-c search_path="${schema.schema}"`,
    });
    await other.connect();
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await other.end();
    await runtime.close();
  });

  /** An instance whose INC is known quick: one INC sent through the locking path. */
  async function warmed(): Promise<MachineSnapshot> {
    const { snapshot } = await runtime.create(counterMachine);
    return (await runtime.send(counterMachine, snapshot.id, { type: 'INC' })).snapshot;
  }

  /** Runs `act` once, after the next send's read and before its commit. */
  function afterNextRead(act: () => Promise<unknown>): void {
    const read = store.loadForRead.bind(store);
    vi.spyOn(store, 'loadForRead').mockImplementationOnce(async (id) => {
      const loaded = await read(id);
      await act();
      return loaded;
    });
  }

  it('should commit a quick event type in one statement after one read, never writing a lock row', async () => {
    const lockAndLoad = vi.spyOn(store, 'lockAndLoad');
    const warm = await warmed();
    expect(lockAndLoad).toHaveBeenCalledTimes(1);
    const commit = vi.spyOn(store, 'commit');
    const queries = vi.spyOn(store.pool, 'query');

    const sent = await runtime.send(counterMachine, warm.id, { type: 'INC' });

    expect(lockAndLoad).toHaveBeenCalledTimes(1);
    expect(commit.mock.calls.at(-1)![0]).toMatchObject({ lockFree: true });
    const texts = queries.mock.calls.map(([query]) =>
      typeof query === 'string' ? query : (query as { text: string }).text,
    );
    expect(texts.filter((text) => !text.includes('pg_notify'))).toHaveLength(2);
    expect(texts.some((text) => text.includes('INSERT INTO machine_locks'))).toBe(false);
    expect(sent.snapshot.context).toEqual({ count: 2 });
    expect(await runtime.restore(counterMachine, warm.id)).toEqual(sent.snapshot);
    const history = await store.history(warm.id);
    expect(history.map((record) => record.sequence)).toEqual(history.map((_, i) => i + 1));
    expect(await store.readLock(warm.id)).toBeNull();
  });

  it('should refuse at commit when another process took the lock after the read, writing nothing', async () => {
    const warm = await warmed();
    afterNextRead(() =>
      other.query(
        `INSERT INTO machine_locks (root_event_id, owner_id, acquired_at, expires_at, context)
         VALUES ($1, $2, now(), now() + interval '1 minute', 'x')`,
        [warm.id, ulid()],
      ),
    );

    const error = await runtime
      .send(counterMachine, warm.id, { type: 'INC' })
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(MachineAlreadyRunningException);
    expect((error as MachineAlreadyRunningException).snapshot).toEqual(warm);
    expect(await store.history(warm.id)).toHaveLength(warm.sequence);
    // Refused while the row lives, by the read this time.
    const read = await runtime
      .send(counterMachine, warm.id, { type: 'INC' })
      .catch((e: unknown) => e);
    expect((read as MachineAlreadyRunningException).snapshot).toEqual(warm);
  });

  it('should refuse at commit when the instance moved after the read (sequence fence)', async () => {
    const warm = await warmed();
    afterNextRead(() =>
      other.query(
        `UPDATE machine_instances SET sequence_number = sequence_number + 1,
           context = '{"count":41}' WHERE root_event_id = $1`,
        [warm.id],
      ),
    );

    const error = await runtime
      .send(counterMachine, warm.id, { type: 'INC' })
      .catch((e: unknown) => e);

    expect(error).toBeInstanceOf(MachineAlreadyRunningException);
    expect((error as MachineAlreadyRunningException).snapshot).toMatchObject({
      context: { count: 41 },
    });
    expect(await store.history(warm.id)).toHaveLength(warm.sequence);
  });

  it('should take over an expired lock row through the locking path and delete it', async () => {
    const warm = await warmed();
    await other.query(
      `INSERT INTO machine_locks (root_event_id, owner_id, acquired_at, expires_at, context)
       VALUES ($1, $2, now() - interval '2 minutes', now() - interval '1 minute', 'crashed')`,
      [warm.id, ulid()],
    );
    const lockAndLoad = vi.spyOn(store, 'lockAndLoad');

    const sent = await runtime.send(counterMachine, warm.id, { type: 'INC' });

    expect(lockAndLoad).toHaveBeenCalledTimes(1);
    expect(sent.snapshot.context).toEqual({ count: 2 });
    expect(await store.readLock(warm.id)).toBeNull();
  });
});
