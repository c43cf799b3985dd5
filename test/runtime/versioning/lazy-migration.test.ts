/**
 * Lazy migrations (docs/versioning.md): an instance of an older version is migrated on its next
 * load inside the locked step, the migration written through the commit step with a history
 * record of its own; reads show the migrated view before that; the version fence refuses
 * writes of a version the process does not know.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  InstanceMigrationFailedException,
  StateNotInDefinitionException,
  VersionFenceException,
} from '../../../src/runtime/errors.js';
import { defineMachine, defineMigration } from '../../../src/runtime/definition/index.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import type { Store } from '../../../src/runtime/persistence/store.js';
import { postgresBackend, sqliteFileBackend } from '../../support/stores.js';
import { loanV1, loanV2, loanV2Behavior, loanV2Unmigrated } from './fixtures/loans.js';

const backends = [sqliteFileBackend(), await postgresBackend('lazy-migration')].filter(
  (backend) => backend !== null,
);

describe.each(backends)('lazy migration ($name)', (backend) => {
  let store: Store;
  let runtime: MachineRuntime;

  beforeAll(() => backend.setUp());
  afterAll(() => backend.tearDown());
  beforeEach(async () => {
    store = await backend.open();
    runtime = new MachineRuntime({ store });
  });
  afterEach(() => runtime.close());

  async function v1In(state: 'applied' | 'reviewing' | 'approved', amount = '42') {
    const { snapshot } = await runtime.create(loanV1, { input: { amount } });
    if (state === 'reviewing') await runtime.send(loanV1, snapshot.id, { type: 'REVIEW' });
    if (state === 'approved') await runtime.send(loanV1, snapshot.id, { type: 'APPROVE' });
    return snapshot.id;
  }

  it('migrates a renamed state and a changed context type on the next send', async () => {
    const id = await v1In('approved');
    const before = await store.history(id);
    const result = await runtime.send(loanV2, id, { type: 'PAY' });
    expect(result.snapshot).toMatchObject({
      value: ['loan.paid'],
      context: { amount: 42, note: 'paid 43' },
      version: 'v2',
    });
    const history = await store.history(id);
    // History as written stays; the migration record follows it, then the event's records.
    expect(history.slice(0, before.length)).toEqual(before);
    expect(history.map((record) => record.sequence)).toEqual(history.map((_, index) => index + 1));
    const migration = history[before.length]!;
    expect(migration).toMatchObject({
      type: 'loan.migration',
      source: 'internal',
      value: ['loan.accepted'],
      context: { amount: 42, note: '' },
      payload: { from: 'v1', to: 'v2', previousValue: ['loan.approved'] },
    });
    expect((await store.load(id))?.version).toBe('v2');
    expect((await store.currentStates(id)).map((row) => row.stateId)).toEqual(['loan.paid']);
  });

  it('sends a removed state to its target', async () => {
    const id = await v1In('reviewing');
    const result = await runtime.send(loanV2, id, { type: 'APPROVE' });
    expect(result.snapshot.value).toEqual(['loan.accepted']);
    const types = (await store.history(id)).map((record) => record.type);
    expect(types).toContain('loan.migration');
  });

  it('reads show the migrated view before anything is written', async () => {
    const id = await v1In('approved', '7');
    const sequence = (await store.load(id))!.sequence;
    const read = await runtime.read(loanV2, id);
    expect(read.snapshot).toMatchObject({
      value: ['loan.accepted'],
      context: { amount: 7 },
      version: 'v2',
      sequence,
    });
    expect((await store.load(id))!.version).toBe('v1');
  });

  it('without a migration an explicitly versioned instance answers 409 naming both versions', async () => {
    const id = await v1In('approved');
    const refused = await runtime
      .send(loanV2Unmigrated, id, { type: 'PAY' })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(VersionFenceException);
    expect((refused as Error).message).toMatch(
      /version 'v1', which this process \(version 'v2'\) neither runs nor migrates from/,
    );
  });

  it('an unversioned machine keeps the old answer: 409 naming the removed state', async () => {
    const before = defineMachine({
      config: { id: 'loan', initial: 'a', states: { a: { on: { GO: 'b' } }, b: {} } },
    });
    const after = defineMachine({
      config: { id: 'loan', initial: 'a', states: { a: { on: { GO: 'c' } }, c: {} } },
    });
    const { snapshot } = await runtime.create(before);
    await runtime.send(before, snapshot.id, { type: 'GO' });
    await expect(runtime.send(after, snapshot.id, { type: 'GO' })).rejects.toBeInstanceOf(
      StateNotInDefinitionException,
    );
  });

  it('the version fence: v1 code does not write an instance v2 migrated', async () => {
    const id = await v1In('applied');
    await runtime.send(loanV2, id, { type: 'APPROVE' });
    const stored = await store.load(id);
    const refused = await runtime
      .send(loanV1, id, { type: 'PAY' })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(VersionFenceException);
    expect((refused as VersionFenceException).statusCode).toBe(409);
    expect((refused as Error).message).toMatch(/last written by version 'v2'/);
    expect(await store.load(id)).toEqual(stored);
  });

  it('a migration that throws writes nothing and answers 409 naming the step', async () => {
    const broken = defineMachine({
      config: { ...loanV2.config, version: 'v2' },
      behavior: loanV2Behavior,
      migrations: [
        defineMigration({
          from: 'v1',
          to: 'v2',
          states: { approved: 'accepted', reviewing: 'applied' },
          context: () => {
            throw new Error('no rate for this amount');
          },
        }),
      ],
    });
    const id = await v1In('approved');
    const stored = await store.load(id);
    const refused = await runtime
      .send(broken, id, { type: 'PAY' })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(InstanceMigrationFailedException);
    expect((refused as Error).message).toMatch(/from 'v1' to 'v2'.*no rate for this amount/);
    expect(await store.load(id)).toEqual(stored);
  });

  it('a migrated context that fails the schema is refused', async () => {
    const sloppy = defineMachine({
      config: { ...loanV2.config, version: 'v2' },
      behavior: loanV2Behavior,
      migrations: [
        defineMigration({
          from: 'v1',
          to: 'v2',
          states: { approved: 'accepted', reviewing: 'applied' },
        }),
      ],
    });
    const id = await v1In('approved');
    await expect(runtime.send(sloppy, id, { type: 'PAY' })).rejects.toThrow(
      /fails its schema \(amount/,
    );
  });
});
