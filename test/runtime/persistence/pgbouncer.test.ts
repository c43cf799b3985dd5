/**
 * Behind PgBouncer (docs/scaling.md "PgBouncer"): a real PgBouncer (Debian's, .ci/run installs
 * it) in front of the test database. In transaction mode the store cannot work (named prepared
 * statements fail on other server connections: "prepared statement ... already exists"; LISTEN
 * and the holder connection need a session), so opening a runtime or migrating through it is
 * refused with StoreBehindPoolerException before anything is written; in session mode, and
 * straight to PostgreSQL, the check lets the store through.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreBehindPoolerException } from '../../../src/runtime/errors.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { openStore } from '../../../src/runtime/persistence/open-store.js';
import type { PostgresStore } from '../../../src/runtime/persistence/postgres-store.js';
import { pgbouncerInstalled, PGBOUNCER_BINARY, startPgBouncer } from '../../support/pgbouncer.js';
import {
  PG_TEST_URL,
  POSTGRES_REQUIRED,
  createTestSchema,
  shouldRunPostgresTests,
  type TestSchema,
} from '../../support/postgres.js';
import { counterMachine } from './fixtures/machines.js';

const postgres = await shouldRunPostgresTests('pgbouncer');
const installed = pgbouncerInstalled();
if (postgres && !installed && !POSTGRES_REQUIRED)
  console.warn(
    `\n!!! PgBouncer tests SKIPPED: ${PGBOUNCER_BINARY} is missing (apt-get install pgbouncer; .ci/run installs it).\n`,
  );

// A database of the file's own: the no-schema URLs below would otherwise reach the test
// database's public schema, which a failing check would migrate.
const DATABASE = `mrt_pgbouncer_${process.pid}`;

async function admin<T>(use: (client: pg.Client) => Promise<T>, database?: string): Promise<T> {
  const url = new URL(PG_TEST_URL);
  if (database !== undefined) url.pathname = `/${database}`;
  const client = new pg.Client(url.toString());
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

/** The tables of the own database's public schema. */
async function publicTables(): Promise<string[]> {
  return admin(async (client) => {
    const { rows } = await client.query<{ name: string }>(
      `SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'`,
    );
    return rows.map((row) => row.name);
  }, DATABASE);
}

/** A URL of the own database through `port`. */
function through(port: number): string {
  const url = new URL(PG_TEST_URL);
  url.port = String(port);
  url.pathname = `/${DATABASE}`;
  return url.toString();
}

describe.runIf(postgres && (installed || POSTGRES_REQUIRED))('PostgreSQL behind PgBouncer', () => {
  let schema: TestSchema;
  beforeAll(async () => {
    schema = await createTestSchema('pgbouncer');
    await admin((client) => client.query(`CREATE DATABASE ${DATABASE}`));
  });
  afterAll(async () => {
    await schema.drop();
    await admin((client) => client.query(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`));
  });

  it('refuses a runtime through a transaction-mode pool, before writing anything', async () => {
    const bouncer = await startPgBouncer('transaction');
    try {
      const opening = MachineRuntime.open({
        databaseUrl: through(bouncer.port),
        migrate: true,
        worker: false,
        machines: [counterMachine],
      });
      await expect(opening).rejects.toBeInstanceOf(StoreBehindPoolerException);
      await expect(opening).rejects.toMatchObject({
        code: 'MR_STORE_BEHIND_POOLER',
        message: expect.stringContaining('pool_mode = session'),
      });
      // The migration did not run in the role's default schema.
      expect(await publicTables()).toEqual([]);

      // Without migrate: the runtime start refuses it the same way.
      await expect(
        MachineRuntime.open({
          databaseUrl: through(bouncer.port),
          worker: false,
          machines: [counterMachine],
        }),
      ).rejects.toBeInstanceOf(StoreBehindPoolerException);
    } finally {
      await bouncer.stop();
    }
  });

  it('names the pooler when it refuses the ?schema= startup parameter', async () => {
    const bouncer = await startPgBouncer('transaction');
    try {
      const url = new URL(schema.url);
      url.port = String(bouncer.port);
      const opening = openStore(url.toString(), { migrate: true });
      await expect(opening).rejects.toBeInstanceOf(StoreBehindPoolerException);
      await expect(opening).rejects.toMatchObject({
        message: expect.stringContaining(schema.schema),
      });
      // Nothing was migrated into the schema.
      const direct = (await openStore(schema.url)) as PostgresStore;
      try {
        expect(await direct.appliedMigrations().catch(() => [])).toEqual([]);
      } finally {
        await direct.close();
      }
    } finally {
      await bouncer.stop();
    }
  });

  it('lets the store through a session-mode pool and straight to PostgreSQL', async () => {
    const bouncer = await startPgBouncer('session');
    try {
      const pooled = (await openStore(through(bouncer.port))) as PostgresStore;
      try {
        expect(await pooled.sharesSessions()).toBe(false);
      } finally {
        await pooled.close();
      }
    } finally {
      await bouncer.stop();
    }
    const direct = (await openStore(PG_TEST_URL)) as PostgresStore;
    try {
      expect(await direct.sharesSessions()).toBe(false);
    } finally {
      await direct.close();
    }
  });
});
