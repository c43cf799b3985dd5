/**
 * Migration 18 (unique business key, docs/http.md "Create-or-send") on a SQLite file and on
 * PostgreSQL: a database migrated to 17 whose instances repeat a key (a model binder without an
 * atomic claim, racing) keeps the key on the oldest instance of each machine only, and after it
 * the store refuses a second instance of a machine with a held key (`BusinessKeyTakenError`,
 * nothing written) and `bindBusinessKey` answers `false` instead of throwing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../../src/runtime/persistence/migrations.js';
import { openStore } from '../../../src/runtime/persistence/open-store.js';
import { BusinessKeyTakenError, type Store } from '../../../src/runtime/persistence/store.js';
import { createTestSchema, shouldRunPostgresTests } from '../../support/postgres.js';

const BEFORE = MIGRATIONS.filter((migration) => migration.version < 18);
const ROWS = [
  // id, machine, key, created
  ['01J00000000000000000000001', 'shop', 'K', '2026-01-01T00:00:02.000Z'],
  ['01J00000000000000000000002', 'shop', 'K', '2026-01-01T00:00:01.000Z'],
  ['01J00000000000000000000003', 'shop', 'K', '2026-01-01T00:00:03.000Z'],
  ['01J00000000000000000000004', 'other', 'K', '2026-01-01T00:00:04.000Z'],
  ['01J00000000000000000000005', 'shop', null, '2026-01-01T00:00:05.000Z'],
] as const;
const INSERT = `INSERT INTO machine_instances (root_event_id, machine_id, machine_value, context, status,
  sequence_number, created_at, updated_at, business_key) VALUES `;

async function expectUniqueKeys(store: Store, keys: () => Promise<Record<string, string | null>>) {
  expect(await keys()).toEqual({
    '01J00000000000000000000001': null,
    '01J00000000000000000000002': 'K',
    '01J00000000000000000000003': null,
    '01J00000000000000000000004': 'K',
    '01J00000000000000000000005': null,
  });
  expect(await store.queries.instanceByBusinessKey('shop', 'K')).toBe('01J00000000000000000000002');
  // The key is held: another instance cannot take it, by a commit or afterwards.
  expect(await store.queries.bindBusinessKey('01J00000000000000000000005', 'K')).toBe(false);
  const snapshot = {
    machineId: 'shop',
    id: '01J00000000000000000000006',
    value: ['shop.a'],
    context: {},
    status: 'active' as const,
    sequence: 1,
  };
  const record = {
    id: '01J0000000000000000000000E',
    sequence: 1,
    createdAt: '2026-01-02T00:00:00.000Z',
    machineId: 'shop',
    rootEventId: snapshot.id,
    source: 'internal' as const,
    type: 'xstate.init',
    payload: null,
    value: ['shop.a'],
    context: {},
    version: 1,
    actor: null,
  };
  const commit = store.commit({
    snapshot,
    history: [record],
    expectedSequence: null,
    previousValue: [],
    now: new Date(),
    businessKey: 'K',
  });
  await expect(commit).rejects.toBeInstanceOf(BusinessKeyTakenError);
  expect(await store.load(snapshot.id)).toBeNull();
  await store.commit({
    snapshot,
    history: [record],
    expectedSequence: null,
    previousValue: [],
    now: new Date(),
    businessKey: 'L',
  });
  expect(await store.queries.instanceByBusinessKey('shop', 'L')).toBe(snapshot.id);
}

describe('migration 18: unique business key', () => {
  it('should keep a repeated key on the oldest instance on a SQLite file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mr-unique-key-'));
    try {
      const file = join(dir, 'machines.db');
      const db = new Database(file);
      db.exec(
        'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
      );
      for (const migration of BEFORE) {
        db.exec(migration.sqlite);
        db.prepare('INSERT INTO schema_migrations VALUES (?, ?, ?)').run(
          migration.version,
          migration.name,
          new Date().toISOString(),
        );
      }
      const insert = db.prepare(`${INSERT} (?, ?, '[]', '{}', 'active', 1, ?, ?, ?)`);
      for (const [id, machine, key, created] of ROWS)
        insert.run(id, machine, created, created, key);
      db.close();
      const store = await openStore(`sqlite:${file}`, { migrate: true });
      try {
        const sqlite = (store as unknown as { database: Database.Database }).database;
        await expectUniqueKeys(store, async () =>
          Object.fromEntries(
            (
              sqlite
                .prepare(
                  `SELECT root_event_id, business_key FROM machine_instances WHERE root_event_id < '01J00000000000000000000006' ORDER BY root_event_id`,
                )
                .all() as { root_event_id: string; business_key: string | null }[]
            ).map((row) => [row.root_event_id, row.business_key]),
          ),
        );
      } finally {
        await store.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('should keep a repeated key on the oldest instance on PostgreSQL', async (context) => {
    if (!(await shouldRunPostgresTests('unique-business-key'))) return context.skip();
    const schema = await createTestSchema('unique_key');
    const client = new pg.Client({ connectionString: schema.url.split('?')[0] });
    await client.connect();
    try {
      await client.query(`SET search_path TO "${schema.schema}"`);
      await client.query(
        'CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
      );
      for (const migration of BEFORE) {
        await client.query(migration.postgres);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
          migration.version,
          migration.name,
        ]);
      }
      for (const [id, machine, key, created] of ROWS)
        await client.query(`${INSERT} ($1, $2, '[]', '{}', 'active', 1, $3, $3, $4)`, [
          id,
          machine,
          created,
          key,
        ]);
      const store = await openStore(schema.url, { migrate: true });
      try {
        await expectUniqueKeys(store, async () => {
          const rows = await client.query<{ root_event_id: string; business_key: string | null }>(
            `SELECT root_event_id, business_key FROM machine_instances WHERE root_event_id < '01J00000000000000000000006' ORDER BY root_event_id`,
          );
          return Object.fromEntries(rows.rows.map((row) => [row.root_event_id, row.business_key]));
        });
      } finally {
        await store.close();
      }
    } finally {
      await client.end();
      await schema.drop();
    }
  });
});
