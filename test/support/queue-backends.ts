/**
 * Backends of the tests that run workers as processes: a SQLite file in a temp dir and, when
 * PostgreSQL tests run here, a schema of its own (migrated) whose pg-boss schema is dropped
 * with it. Each `setUp` returns the database URL the processes share.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';
import { defaultJobSchema, openStore } from '../../src/runtime/index.js';
import { createTestSchema, dropSchema, shouldRunPostgresTests } from './postgres.js';

/** A backend of a worker-process test. */
export interface QueueBackend {
  name: string;
  /** Prepares a fresh database; its URL. */
  setUp(): Promise<string>;
  tearDown(): Promise<void>;
}

/**
 * The SQLite file backend and, unless PostgreSQL tests are skipped (then a skipped placeholder
 * test says so), the PostgreSQL one. `file` names the test (`delegation/worker-crash`).
 */
export async function queueBackends(file: string): Promise<QueueBackend[]> {
  const slug = file.replace(/\W+/g, '_');
  let dir: string | undefined;
  const backends: QueueBackend[] = [
    {
      name: 'sqlite file',
      async setUp() {
        dir = mkdtempSync(join(tmpdir(), `mr-${slug}-`));
        return `sqlite:${join(dir, 'machines.db')}`;
      },
      async tearDown() {
        if (dir) rmSync(dir, { recursive: true, force: true });
      },
    },
  ];
  if (!(await shouldRunPostgresTests(file))) {
    describe.skip(`${file} (postgres)`, () => it('needs a reachable PostgreSQL', () => {}));
    return backends;
  }
  let schema: Awaited<ReturnType<typeof createTestSchema>> | undefined;
  backends.push({
    name: 'postgres',
    async setUp() {
      schema = await createTestSchema(slug);
      await (await openStore(schema.url, { migrate: true })).close();
      return schema.url;
    },
    async tearDown() {
      if (schema === undefined) return;
      await dropSchema(defaultJobSchema(schema.schema));
      await schema.drop();
    },
  });
  return backends;
}
