/**
 * The two durable backends of runtime tests that run real jobs: a SQLite file in a temp dir and
 * a PostgreSQL schema of its own (plus pg-boss's `<schema>_jobs`, dropped with it). When
 * PostgreSQL tests are skipped here, a skipped placeholder test is registered instead.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { defaultJobSchema } from '../../src/runtime/jobs/index.js';
import { openStore } from '../../src/runtime/persistence/open-store.js';
import { createTestSchema, dropSchema, shouldRunPostgresTests } from './postgres.js';

/** A durable backend: `setUp` returns the store URL (the SQLite file lives in `dir()`). */
export interface DurableBackend {
  name: string;
  setUp(): Promise<string>;
  tearDown(): Promise<void>;
  /** A temp dir of this backend's test file, removed by `tearDown`. */
  dir(): string;
}

/** `name`: the test file's name, used for the temp dir prefix and the PostgreSQL schema. */
export async function durableBackends(name: string): Promise<DurableBackend[]> {
  const tempDir = () => {
    let dir: string | undefined;
    return {
      get: () => (dir ??= mkdtempSync(join(tmpdir(), `mr-${name.replace(/\W+/g, '-')}-`))),
      remove: () => {
        if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
        dir = undefined;
      },
    };
  };
  const sqliteDir = tempDir();
  const backends: DurableBackend[] = [
    {
      name: 'sqlite file',
      setUp: async () => `sqlite:${join(sqliteDir.get(), 'machines.db')}`,
      tearDown: async () => sqliteDir.remove(),
      dir: sqliteDir.get,
    },
  ];
  if (await shouldRunPostgresTests(name)) {
    const pgDir = tempDir();
    let schema: Awaited<ReturnType<typeof createTestSchema>> | undefined;
    backends.push({
      name: 'postgres',
      async setUp() {
        // Short: pg-boss's `<schema>_jobs` must stay within 50 characters.
        schema = await createTestSchema((name.split('/').pop() ?? name).replace(/\W+/g, '_'));
        await (await openStore(schema.url, { migrate: true })).close();
        return schema.url;
      },
      async tearDown() {
        pgDir.remove();
        if (schema === undefined) return;
        await dropSchema(defaultJobSchema(schema.schema));
        await schema.drop();
      },
      dir: pgDir.get,
    });
  } else {
    describe.skip(`${name} (postgres)`, () => it('needs a reachable PostgreSQL', () => {}));
  }
  return backends;
}
