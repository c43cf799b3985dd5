/**
 * The transactional outbox: jobs a step causes are written inside the step's commit when the
 * queue lives in the store's database (embedded `machine_jobs` on a SQLite file, pg-boss beside
 * a PostgreSQL store), so they commit, or roll back, together.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  JOB_HANDLERS,
  MachineRuntime,
  MemoryStore,
  SqliteStore,
  defaultJobSchema,
  openJobQueue,
  openStore,
  type DurableJobQueue,
  type JobQueue,
  type Store,
} from '../../../src/runtime/index.js';
import { PostgresStore } from '../../../src/postgres.js';
import {
  createTestSchema,
  dropSchema,
  shouldRunPostgresTests,
  type TestSchema,
} from '../../support/postgres.js';
import { makeStep } from '../../support/stores.js';
import { claimMachine } from '../delegation/fixtures/machines.js';

interface Backend {
  name: string;
  url(): string;
  setUp(): Promise<void>;
  tearDown(): Promise<void>;
  /** Names of the jobs waiting in the queue's storage, sorted. */
  waitingJobs(store: Store): Promise<string[]>;
}

const backends: Backend[] = [];
{
  let dir: string | undefined;
  backends.push({
    name: 'sqlite file',
    url: () => `sqlite:${join(dir!, 'machines.db')}`,
    async setUp() {
      dir = mkdtempSync(join(tmpdir(), 'mr-outbox-'));
    },
    async tearDown() {
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
    async waitingJobs(store) {
      return (store as SqliteStore).database
        .prepare(`SELECT name FROM machine_jobs WHERE status = 'queued' ORDER BY name`)
        .pluck()
        .all() as string[];
    },
  });
}
if (await shouldRunPostgresTests('jobs/outbox')) {
  let schema: TestSchema | undefined;
  backends.push({
    name: 'postgres',
    url: () => schema!.url,
    async setUp() {
      schema = await createTestSchema('outbox');
      await (await openStore(schema.url, { migrate: true })).close();
    },
    async tearDown() {
      if (schema === undefined) return;
      await dropSchema(defaultJobSchema(schema.schema));
      await schema.drop();
    },
    async waitingJobs(store) {
      const result = await (store as PostgresStore).pool.query<{ name: string }>(
        `SELECT name FROM "${defaultJobSchema(schema!.schema)}".job WHERE state = 'created' ORDER BY name`,
      );
      return result.rows.map((row) => row.name);
    },
  });
} else {
  describe.skip('jobs/outbox (postgres)', () => it('needs a reachable PostgreSQL', () => {}));
}

describe.each(backends)('transactional outbox on $name', (backend) => {
  let store: Store;
  let queue: DurableJobQueue;

  beforeAll(async () => {
    await backend.setUp();
    store = await openStore(backend.url());
    queue = await openJobQueue(store, { pollIntervalMs: 20, backoffMs: 50 });
    await queue.work('outbox.test', () => {});
  });
  afterAll(async () => {
    await queue?.close({ timeoutMs: 0 });
    await store?.close();
    await backend.tearDown();
  });

  it('should commit the jobs with the step', async () => {
    const outbox = queue.outboxFor!(store)!;
    const step = makeStep({ machineId: 'm', value: ['m.a'], context: {} });

    await store.commit({
      ...step,
      inTransaction: outbox.write([{ name: 'outbox.test', payload: 1 }]),
    });

    expect(await store.load(step.snapshot.id)).not.toBeNull();
    expect(await backend.waitingJobs(store)).toEqual(['outbox.test']);
    await queue.start();
    outbox.committed();
    await queue.drain({ timeoutMs: 15_000 });
    expect(await backend.waitingJobs(store)).toEqual([]);
    await queue.stop();
  });

  it('should roll the jobs back with a failed commit', async () => {
    const outbox = queue.outboxFor!(store)!;
    const write = outbox.write([{ name: 'outbox.test', payload: 2 }]);
    const step = makeStep({ machineId: 'm', value: ['m.a'], context: {} });

    await expect(
      store.commit({
        ...step,
        inTransaction: (transaction) => {
          const written = write(transaction);
          // Fails after the job row was written: everything goes.
          if (written instanceof Promise)
            return written.then(() => Promise.reject(new Error('after the job')));
          throw new Error('after the job');
        },
      }),
    ).rejects.toThrow('after the job');

    expect(await store.load(step.snapshot.id)).toBeNull();
    expect(await backend.waitingJobs(store)).toEqual([]);
  });

  it('should write a child start into the parent commit, never through enqueue', async () => {
    // The store's queue, except that enqueueing after the commit fails loudly.
    const strict: JobQueue = {
      enqueue: async (job) => {
        throw new Error(`'${job.name}' was enqueued after the commit`);
      },
      work: () => {},
      outboxFor: (target) => queue.outboxFor!(target),
    };
    const producer = new MachineRuntime({ store, jobs: strict });

    const { snapshot } = await producer.create(claimMachine);

    expect(await backend.waitingJobs(store)).toEqual([JOB_HANDLERS['child.start'].name]);
    expect((await producer.children(snapshot.id)).map((row) => row.status)).toEqual(['pending']);
    // A worker elsewhere (here: a runtime opened on the same database) runs it.
    const worker = await MachineRuntime.open({
      databaseUrl: backend.url(),
      machines: [claimMachine],
      jobQueue: { pollIntervalMs: 20 },
    });
    try {
      await vi.waitFor(
        async () => {
          expect((await worker.children(snapshot.id)).map((row) => row.status)).toEqual([
            'running',
          ]);
        },
        { timeout: 20_000, interval: 25 },
      );
    } finally {
      await worker.close();
    }
  });
});

describe('queues that cannot share the store transaction', () => {
  it('should have no outbox for a memory store or an in-memory queue', async () => {
    const memory = await openJobQueue(new MemoryStore());
    const sqlite = new SqliteStore({ filename: ':memory:' });
    const privateQueue = await openJobQueue('sqlite::memory:');
    try {
      expect(memory.outboxFor!(new MemoryStore())).toBeNull();
      expect(privateQueue.outboxFor!(sqlite)).toBeNull();
      // The store's own :memory: database holds its machine_jobs table: that one is shared.
      const shared = await openJobQueue(sqlite);
      expect(shared.outboxFor!(sqlite)).not.toBeNull();
      await shared.close();
    } finally {
      await memory.close();
      await privateQueue.close();
      await sqlite.close();
    }
  });
});
