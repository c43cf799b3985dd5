/**
 * Queue backends under test: the embedded queue on a shared in-memory database and on a SQLite
 * file in a temp dir, and pg-boss on PostgreSQL (a store schema per test file, plus the pg-boss
 * schema beside it, both dropped afterwards). Settings are in milliseconds so tests stay short;
 * pg-boss works in whole seconds, hence its longer timeout and backoff.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import pg from 'pg';
import { describe, it } from 'vitest';
import {
  EmbeddedJobQueue,
  createJobsDatabase,
  defaultJobSchema,
  openJobQueue,
  type DurableJobQueue,
  type DurableJobQueueOptions,
} from '../../../../src/runtime/jobs/index.js';
import {
  PG_TEST_URL,
  createTestSchema,
  shouldRunPostgresTests,
  type TestSchema,
} from '../../../support/postgres.js';

/** A queue backend for one test file. */
export interface QueueBackend {
  name: string;
  /** Settings every queue of this backend is opened with. */
  settings: Required<Pick<DurableJobQueueOptions, 'timeoutMs' | 'backoffMs' | 'pollIntervalMs'>>;
  /** Store URL shared by the queues and worker processes of this file (after `setUp`). */
  url(): string;
  setUp(): Promise<void>;
  tearDown(): Promise<void>;
  /** A new queue on this backend's storage (the same jobs as every other queue it opened). */
  open(options?: DurableJobQueueOptions): Promise<DurableJobQueue>;
}

const EMBEDDED_SETTINGS = { timeoutMs: 250, backoffMs: 50, pollIntervalMs: 20 };
const PG_BOSS_SETTINGS = { timeoutMs: 1000, backoffMs: 1000, pollIntervalMs: 20 };

/** The embedded queue on one in-memory database shared by every queue of the file. */
export function memoryBackend(): QueueBackend {
  let database: Database.Database | undefined;
  return {
    name: 'embedded (memory)',
    settings: EMBEDDED_SETTINGS,
    url: () => 'memory:',
    async setUp() {
      database = createJobsDatabase();
    },
    async tearDown() {
      database?.close();
    },
    async open(options = {}) {
      return new EmbeddedJobQueue({ ...EMBEDDED_SETTINGS, ...options, database: database! });
    },
  };
}

/** The embedded queue on a SQLite file in a fresh temp dir; each queue has its own connection. */
export function sqliteFileBackend(): QueueBackend {
  let dir: string | undefined;
  const url = () => `sqlite:${join(dir!, 'machines.db')}`;
  return {
    name: 'embedded (sqlite file)',
    settings: EMBEDDED_SETTINGS,
    url,
    async setUp() {
      dir = mkdtempSync(join(tmpdir(), 'mr-jobs-'));
    },
    async tearDown() {
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
    open: (options = {}) => openJobQueue(url(), { ...EMBEDDED_SETTINGS, ...options }),
  };
}

/** pg-boss in a schema of its own; `null` (with a loud skip) when PostgreSQL tests do not run. */
export async function pgBossBackend(file: string): Promise<QueueBackend | null> {
  if (!(await shouldRunPostgresTests(file))) {
    describe.skip(`${file} (pg-boss)`, () => it('needs a reachable PostgreSQL', () => {}));
    return null;
  }
  let schema: TestSchema | undefined;
  return {
    name: 'pg-boss',
    settings: PG_BOSS_SETTINGS,
    url: () => schema!.url,
    async setUp() {
      schema = await createTestSchema('jobs');
    },
    async tearDown() {
      if (schema === undefined) return;
      await dropSchema(defaultJobSchema(schema.schema));
      await schema.drop();
    },
    open: (options = {}) => openJobQueue(schema!.url, { ...PG_BOSS_SETTINGS, ...options }),
  };
}

async function dropSchema(name: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_TEST_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
  } finally {
    await client.end();
  }
}

/** A promise with its resolver, for handlers that signal or block. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}
