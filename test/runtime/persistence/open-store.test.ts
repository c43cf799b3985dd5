import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../../src/runtime/persistence/migrations.js';
import { MissingPeerDependencyException } from '../../../src/runtime/errors.js';
import {
  importPostgres,
  migrate,
  openStore,
  parseStoreUrl,
} from '../../../src/runtime/persistence/open-store.js';
import { SqliteStore } from '../../../src/runtime/persistence/sqlite-store.js';
import { PostgresStore } from '../../../src/runtime/persistence/postgres-store.js';
import { createTestSchema, shouldRunPostgresTests } from '../../support/postgres.js';

const runPostgres = await shouldRunPostgresTests('open-store');
const dir = mkdtempSync(join(tmpdir(), 'mr-open-store-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('parseStoreUrl', () => {
  it.each([
    ['memory:', { kind: 'memory' }],
    ['sqlite::memory:', { kind: 'sqlite', filename: ':memory:', synchronous: 'NORMAL' }],
    [
      'sqlite:./data/machines.db',
      { kind: 'sqlite', filename: './data/machines.db', synchronous: 'NORMAL' },
    ],
    [
      'sqlite:/abs/m.db?synchronous=full',
      { kind: 'sqlite', filename: '/abs/m.db', synchronous: 'FULL' },
    ],
    [
      'postgres://postgres@127.0.0.1:5432/db?schema=tenant_a',
      {
        kind: 'postgres',
        connectionString: 'postgres://postgres@127.0.0.1:5432/db',
        schema: 'tenant_a',
      },
    ],
    [
      'postgresql://u:p@h/db',
      { kind: 'postgres', connectionString: 'postgresql://u:p@h/db', schema: undefined },
    ],
  ])('should parse %s', (url, expected) => {
    expect(parseStoreUrl(url)).toEqual(expected);
  });

  it.each(['mysql://x', 'sqlite:', 'sqlite:x.db?synchronous=off', 'file.db'])(
    'should reject %s',
    (url) => {
      expect(() => parseStoreUrl(url)).toThrow(/Invalid store URL/);
    },
  );
});

describe('openStore', () => {
  it('should create and migrate a SQLite file on first use, in WAL mode with synchronous NORMAL', async () => {
    const file = join(dir, 'nested', 'first.db');
    const store = await openStore(`sqlite:${file}`);
    expect(store).toBeInstanceOf(SqliteStore);
    expect(existsSync(file)).toBe(true);
    const db = (store as SqliteStore).database;
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('synchronous', { simple: true })).toBe(1); // NORMAL
    expect((store as SqliteStore).appliedMigrations()).toEqual(MIGRATIONS.map((m) => m.version));
    await store.close();
  });

  it('should open PostgreSQL for postgres:// and postgresql:// URLs without migrating', async () => {
    for (const url of ['postgres://nobody@127.0.0.1:1/x', 'postgresql://nobody@127.0.0.1:1/x']) {
      const store = await openStore(url);
      expect(store).toBeInstanceOf(PostgresStore);
      await store.close();
    }
  });
});

describe('migrate', () => {
  it('should migrate a SQLite file and record every version once', async () => {
    const file = join(dir, 'migrate.db');
    await migrate(`sqlite:${file}`);
    await migrate(`sqlite:${file}`);
    const db = new Database(file, { readonly: true });
    const versions = db
      .prepare('SELECT version FROM schema_migrations ORDER BY version')
      .pluck()
      .all();
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .pluck()
      .all();
    db.close();
    expect(versions).toEqual(MIGRATIONS.map((m) => m.version));
    expect(tables).toEqual([
      'machine_children',
      'machine_current_states',
      'machine_events',
      'machine_events_archive',
      'machine_idempotency_keys',
      'machine_instances',
      'machine_jobs',
      'machine_locks',
      'machine_timer_failures',
      'machine_timer_fires',
      'schema_migrations',
    ]);
  });

  it.runIf(runPostgres)(
    'should migrate a PostgreSQL schema, concurrently and idempotently',
    async () => {
      const schema = await createTestSchema('migrate');
      try {
        // Several processes starting at once: the advisory lock serializes them.
        await Promise.all([migrate(schema.url), migrate(schema.url), migrate(schema.url)]);
        const store = (await openStore(schema.url)) as PostgresStore;
        expect(await store.appliedMigrations()).toEqual(MIGRATIONS.map((m) => m.version));
        await store.close();
      } finally {
        await schema.drop();
      }
    },
  );

  it.runIf(runPostgres)(
    'should keep lock rows and flow-control counters in unlogged tables and everything else logged',
    async () => {
      const schema = await createTestSchema('unlogged');
      try {
        await migrate(schema.url);
        const store = (await openStore(schema.url)) as PostgresStore;
        const { rows } = await store.pool.query<{ relname: string; relpersistence: string }>(
          `SELECT c.relname, c.relpersistence FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE n.nspname = $1 AND c.relkind = 'r' ORDER BY c.relname`,
          [schema.schema],
        );
        // 'u': unlogged (no WAL, emptied after a server crash); 'p': permanent.
        const unlogged = rows.filter((row) => row.relpersistence === 'u').map((row) => row.relname);
        // Flow-control counters (migration 17) need no durability either.
        expect(unlogged).toEqual([
          'machine_flow_buckets',
          'machine_flow_latest',
          'machine_flow_slots',
          'machine_locks',
        ]);
        expect(rows.length).toBeGreaterThan(5);
        await store.close();
      } finally {
        await schema.drop();
      }
    },
  );

  it.runIf(runPostgres)('should create a missing schema named in the URL', async () => {
    const schema = await createTestSchema('create');
    await schema.drop();
    try {
      await migrate(schema.url);
      const store = await openStore(schema.url);
      expect(await store.load('01ARZ3NDEKTSV4RRFFQ69G5FAV')).toBeNull();
      await store.close();
    } finally {
      await schema.drop();
    }
  });
});

describe('importPostgres', () => {
  it('should name a missing driver as a MachineRoutesError (one CLI line, not a stack)', async () => {
    const missing = Object.assign(
      new Error("Cannot find package 'pg' imported from /app/node_modules/machine-routes/x.js"),
      { code: 'ERR_MODULE_NOT_FOUND' },
    );
    const error = await importPostgres(() => Promise.reject(missing)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MissingPeerDependencyException);
    expect(error).toMatchObject({
      code: 'MR_MISSING_PEER_DEPENDENCY',
      message:
        "PostgreSQL stores need the 'pg' package, which is not installed: run npm install pg pg-boss.",
      cause: missing,
    });
    // Anything else is not ours to rename.
    const other = new Error('boom');
    await expect(importPostgres(() => Promise.reject(other))).rejects.toBe(other);
  });
});
