/**
 * Store factories shared by persistence suites: one entry per backend, each opening a fresh,
 * migrated store and cleaning up after itself (temp dirs, PostgreSQL schemas).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ulid } from 'ulid';
import { describe, it } from 'vitest';
import type { HistoryRecord, MachineSnapshot } from '../../src/runtime/interpreter/types.js';
import { openStore } from '../../src/runtime/persistence/open-store.js';
import type { CommitRequest, Store } from '../../src/runtime/persistence/store.js';
import { createTestSchema, shouldRunPostgresTests, type TestSchema } from './postgres.js';

/** A backend under test. */
export interface StoreBackend {
  name: string;
  /** Opens the store URL of this backend for the current file (after `setUp`). */
  url(): string;
  /** Prepares the backend for a test file (temp dir, schema). */
  setUp(): Promise<void>;
  /** Removes what `setUp` made. */
  tearDown(): Promise<void>;
  /** A store at `url()`, migrated. */
  open(): Promise<Store>;
}

/** SQLite file in a fresh temp dir. */
export function sqliteFileBackend(): StoreBackend {
  let dir: string | undefined;
  const url = () => `sqlite:${join(dir!, 'machines.db')}`;
  return {
    name: 'sqlite file',
    url,
    async setUp() {
      dir = mkdtempSync(join(tmpdir(), 'mr-persistence-'));
    },
    async tearDown() {
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
    open: () => openStore(url()),
  };
}

/** PostgreSQL in a schema of its own; `null` when PostgreSQL tests are skipped here. */
export async function postgresBackend(file: string): Promise<StoreBackend | null> {
  if (!(await shouldRunPostgresTests(file))) return null;
  let schema: TestSchema | undefined;
  const url = () => schema!.url;
  return {
    name: 'postgres',
    url,
    async setUp() {
      schema = await createTestSchema(file);
      await (await openStore(url(), { migrate: true })).close();
    },
    async tearDown() {
      await schema?.drop();
    },
    open: () => openStore(url()),
  };
}

/**
 * Every backend the shared suite covers. When PostgreSQL tests are skipped (no server, not
 * required), a skipped placeholder test is registered so the run's summary shows it.
 */
export async function allBackends(file: string): Promise<StoreBackend[]> {
  const backends: StoreBackend[] = [
    {
      name: 'memory',
      url: () => 'memory:',
      async setUp() {},
      async tearDown() {},
      open: () => openStore('memory:'),
    },
    {
      name: 'sqlite :memory:',
      url: () => 'sqlite::memory:',
      async setUp() {},
      async tearDown() {},
      open: () => openStore('sqlite::memory:'),
    },
    sqliteFileBackend(),
  ];
  const postgres = await postgresBackend(file);
  if (postgres) backends.push(postgres);
  else describe.skip(`${file} (postgres)`, () => it('needs a reachable PostgreSQL', () => {}));
  return backends;
}

/** Synthetic history for store tests (the interpreter is not involved). */
export function makeStep(options: {
  machineId: string;
  id?: string;
  from?: MachineSnapshot | null;
  value: string[];
  context: Record<string, unknown>;
  records?: number;
  type?: string;
  payload?: Record<string, unknown> | null;
  now?: Date;
  status?: 'active' | 'done';
}): CommitRequest & { history: HistoryRecord[] } {
  const from = options.from ?? null;
  const id = options.id ?? from?.id ?? ulid();
  const now = options.now ?? new Date();
  const count = options.records ?? 3;
  const start = from?.sequence ?? 0;
  const history: HistoryRecord[] = Array.from({ length: count }, (_, index) => {
    const last = index === count - 1;
    return {
      id: index === 0 && from === null ? id : ulid(),
      sequence: start + index + 1,
      createdAt: now.toISOString(),
      machineId: options.machineId,
      rootEventId: id,
      source: index === 0 && from !== null ? 'external' : 'internal',
      type:
        index === 0
          ? (options.type ?? `${options.machineId}.start`)
          : `${options.machineId}.step.${index}`,
      payload: index === 0 ? (options.payload ?? null) : null,
      value: last ? options.value : (from?.value ?? []),
      context: last ? options.context : null,
      version: 1,
      actor: null,
    };
  });
  return {
    snapshot: {
      machineId: options.machineId,
      id,
      value: options.value,
      context: options.context,
      status: options.status ?? 'active',
      sequence: start + count,
    },
    history,
    expectedSequence: from ? from.sequence : null,
    previousValue: from?.value ?? [],
    now,
  };
}
