/**
 * The generated server loads the store driver it uses, no other: on PostgreSQL, better-sqlite3
 * (14 modules and a native addon) stays unloaded although the runtime exports the SQLite store.
 * better-sqlite3 is CommonJS, so Node's `require.cache` tells. This file runs in a process of
 * its own, and its first test is the PostgreSQL one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../../generated-example/app.gen.js';
import { migrate } from '../../src/runtime/index.js';
import { createTestSchema, dropSchema, shouldRunPostgresTests } from '../support/postgres.js';

const loadedSqliteDriver = (): string[] =>
  Object.keys(createRequire(import.meta.url).cache).filter((file) =>
    file.includes('/node_modules/better-sqlite3/'),
  );

const runPostgres = await shouldRunPostgresTests('example-drivers.test.ts');
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Starts the example on `databaseUrl` and creates an order: the store is really used. */
async function createOrder(databaseUrl: string): Promise<void> {
  const app: App = await buildApp({ databaseUrl });
  cleanups.push(() => app.close());
  const baseUrl = await app.listen(0);
  const response = await fetch(`${baseUrl}/orders/create`, { method: 'POST' });
  expect(response.status).toBe(201);
}

describe('the generated server and the store drivers', () => {
  it.runIf(runPostgres)('should not load better-sqlite3 on PostgreSQL', async () => {
    const schema = await createTestSchema('example_drivers');
    cleanups.push(
      () => schema.drop(),
      () => dropSchema(`${schema.schema}_jobs`),
    );
    await migrate(schema.url);
    await createOrder(schema.url);
    expect(loadedSqliteDriver()).toEqual([]);
  });

  it('should load better-sqlite3 on a SQLite file', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'machine-routes-drivers-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    await createOrder(`sqlite:${path.join(dir, 'example.db')}`);
    expect(loadedSqliteDriver()).not.toEqual([]);
  });
});
