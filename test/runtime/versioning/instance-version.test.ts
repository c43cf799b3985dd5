/**
 * Every instance records the version of the definition that last wrote it (migration 11,
 * `machine_instances.definition_version`), on a SQLite file and on PostgreSQL.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { defineMachine } from '../../../src/runtime/definition/index.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import type { Store } from '../../../src/runtime/persistence/store.js';
import { postgresBackend, sqliteFileBackend } from '../../support/stores.js';

const counter = (version?: string) =>
  defineMachine({
    config: {
      id: 'versioned_counter',
      initial: 'counting',
      context: { count: 0 },
      ...(version === undefined ? {} : { version }),
      states: {
        counting: { on: { INC: { actions: 'inc' }, STOP: 'stopped' } },
        stopped: { type: 'final' },
      },
    },
    behavior: {
      actions: { inc: ({ context }) => void (context.count = Number(context.count) + 1) },
    },
  });

const backends = [sqliteFileBackend(), await postgresBackend('instance-version')].filter(
  (backend) => backend !== null,
);

describe.each(backends)('instance versions ($name)', (backend) => {
  let store: Store;
  let runtime: MachineRuntime;

  beforeAll(() => backend.setUp());
  afterAll(() => backend.tearDown());
  beforeEach(async () => {
    store = await backend.open();
    runtime = new MachineRuntime({ store });
  });
  afterEach(() => runtime.close());

  it('records the writing definition version on create and on every commit', async () => {
    const v1 = counter('v1');
    const { snapshot } = await runtime.create(v1);
    expect(snapshot.version).toBe('v1');
    expect((await store.load(snapshot.id))?.version).toBe('v1');
    await runtime.send(v1, snapshot.id, { type: 'INC' });
    expect((await store.load(snapshot.id))?.version).toBe('v1');
    expect((await store.loadForRead(snapshot.id))?.snapshot.version).toBe('v1');
    expect((await runtime.read(v1, snapshot.id)).snapshot).toMatchObject({
      version: 'v1',
      context: { count: 1 },
    });
  });

  it('records the fingerprint of an unversioned machine', async () => {
    const unversioned = counter();
    const { snapshot } = await runtime.create(unversioned);
    await runtime.send(unversioned, snapshot.id, { type: 'STOP' });
    expect((await store.load(snapshot.id))?.version).toBe(unversioned.version);
    expect(unversioned.version).toMatch(/^fp-/);
  });
});
