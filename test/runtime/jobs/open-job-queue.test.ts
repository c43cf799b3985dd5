/**
 * Queue selection (`openJobQueue` from a URL or an open store), enqueue validation and the
 * `startWorker` entry of `machine-routes worker`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Json } from '../../../src/runtime/jobs/job-queue.js';
import { EmbeddedJobQueue, openJobQueue } from '../../../src/runtime/jobs/index.js';
import { PgBossJobQueue } from '../../../src/runtime/jobs/pg-boss-job-queue.js';
import { startWorker } from '../../../src/runtime/engine/index.js';
import { MemoryStore } from '../../../src/runtime/persistence/memory-store.js';
import { openStore } from '../../../src/runtime/persistence/open-store.js';
import type { PostgresStore } from '../../../src/runtime/persistence/postgres-store.js';
import { SqliteStore } from '../../../src/runtime/persistence/sqlite-store.js';
import { pgBossBackend } from './support/backends.js';

const FAST = { pollIntervalMs: 20, timeoutMs: 1000, backoffMs: 0 };
const WAIT = { timeoutMs: 10_000 };

describe('openJobQueue', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'mr-open-jobs-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each(['memory:', 'sqlite::memory:'])(
    'should open a non-durable embedded queue for %s',
    async (url) => {
      const queue = await openJobQueue(url, FAST);
      expect(queue).toBeInstanceOf(EmbeddedJobQueue);
      await queue.close();
    },
  );

  it('should open an embedded queue for a MemoryStore', async () => {
    const queue = await openJobQueue(new MemoryStore(), FAST);
    expect(queue).toBeInstanceOf(EmbeddedJobQueue);
    await queue.close();
  });

  it("should keep jobs in a SqliteStore's file and leave the store open on close", async () => {
    const url = `sqlite:${join(dir, 'shared.db')}`;
    const store = await openStore(url);
    expect(store).toBeInstanceOf(SqliteStore);
    const shared = await openJobQueue(store, FAST);
    await shared.enqueue({ name: 'shared.file', payload: 'from the store connection' });
    await shared.close();
    expect(await store.load('01ARZ3NDEKTSV4RRFFQ69G5FAV')).toBeNull();

    const fromUrl = await openJobQueue(url, FAST);
    const ran: Json[] = [];
    await fromUrl.work('shared.file', (payload) => {
      ran.push(payload);
    });
    await fromUrl.start();
    await fromUrl.drain(WAIT);
    await fromUrl.close();
    await store.close();
    expect(ran).toEqual(['from the store connection']);
  });

  it('should reject a job with a bad maxAttempts or backoffMs', async () => {
    const queue = await openJobQueue('memory:', FAST);
    await expect(queue.enqueue({ name: 'bad', payload: null, maxAttempts: 0 })).rejects.toThrow(
      RangeError,
    );
    await expect(queue.enqueue({ name: 'bad', payload: null, backoffMs: -1 })).rejects.toThrow(
      RangeError,
    );
    await expect(queue.enqueue({ name: '', payload: null })).rejects.toThrow(TypeError);
    await queue.close();
  });
});

const pgBoss = await pgBossBackend('jobs/open-job-queue.test.ts');
describe.runIf(pgBoss !== null)('openJobQueue on a PostgresStore', () => {
  beforeAll(() => pgBoss!.setUp());
  afterAll(() => pgBoss!.tearDown());

  it("should run pg-boss beside the store's schema on connections of its own, and leave the store open", async () => {
    const store = (await openStore(pgBoss!.url(), { migrate: true })) as PostgresStore;
    const queue = await openJobQueue(store, FAST);
    expect(queue).toBeInstanceOf(PgBossJobQueue);
    expect((queue as PgBossJobQueue).schema).toBe(`${store.schema}_jobs`);
    const ran: Json[] = [];
    await queue.work('shared.pool', (payload) => {
      ran.push(payload);
    });
    await queue.enqueue({ name: 'shared.pool', payload: { via: 'store pool' } });
    await queue.start();
    await queue.drain(WAIT);
    await queue.close();
    expect(ran).toEqual([{ via: 'store pool' }]);
    expect(await store.load('01ARZ3NDEKTSV4RRFFQ69G5FAV')).toBeNull();
    await store.close();
  });
});

describe('startWorker', () => {
  it('should run the given handlers until stopped', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mr-worker-'));
    try {
      const databaseUrl = `sqlite:${join(dir, 'worker.db')}`;
      const ran: Json[] = [];
      const worker = await startWorker({
        databaseUrl,
        ...FAST,
        concurrency: 2,
        handleSignals: false,
        handlers: {
          'worker.job': (payload) => {
            ran.push(payload);
          },
        },
      });
      await worker.queue.enqueue({ name: 'worker.job', payload: 42 });
      await worker.queue.drain(WAIT);
      await worker.stop();
      await worker.stopped;
      expect(ran).toEqual([42]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('should take the database from MACHINE_DATABASE_URL and let register add handlers', async () => {
    const ran: string[] = [];
    const worker = await startWorker({
      env: { MACHINE_DATABASE_URL: 'memory:' },
      ...FAST,
      handleSignals: false,
      register: (queue) =>
        queue.work('registered', (_payload, job) => {
          ran.push(job.name);
        }),
    });
    await worker.queue.enqueue({ name: 'registered', payload: null });
    await worker.queue.drain(WAIT);
    await worker.stop();
    expect(ran).toEqual(['registered']);
  });
});
