/**
 * Pinned mode (docs/versioning.md): one process keeps v1 of a machine loaded beside v2; a v1
 * instance runs on v1 until it finishes, new instances start on v2, side by side, on a SQLite
 * file and on PostgreSQL.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { defineMachine } from '../../../src/runtime/definition/index.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import type { Store } from '../../../src/runtime/persistence/store.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';
import { loanV1, loanV2, loanV2Behavior } from './fixtures/loans.js';

const loanV2Pinned = defineMachine({
  config: loanV2.config,
  behavior: loanV2Behavior,
  versioning: 'pin',
  previous: [loanV1],
});

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('versioning-pinned');
if (postgres) backends.push(postgres);

describe.each(backends)('pinned versions ($name)', (backend) => {
  let store: Store;
  let runtime: MachineRuntime;

  beforeAll(() => backend.setUp());
  afterAll(() => backend.tearDown());
  beforeEach(async () => {
    store = await backend.open();
    runtime = new MachineRuntime({ store, machines: [loanV2Pinned] });
  });
  afterEach(() => runtime.close());

  it('serves a v1 instance with v1 and a new one with v2 in one process', async () => {
    const old = (await runtime.create(loanV1, { input: { amount: '5' } })).snapshot.id;
    const created = await runtime.create(loanV2Pinned, { input: { amount: 5 } });
    expect(created.snapshot).toMatchObject({ version: 'v2', value: ['loan.applied'] });

    // v1's REVIEW and `approved` exist only in v1: the pinned instance takes them.
    await runtime.send(loanV2Pinned, old, { type: 'REVIEW' });
    const reviewed = await runtime.send(loanV2Pinned, old, { type: 'APPROVE' });
    expect(reviewed.snapshot).toMatchObject({
      value: ['loan.approved'],
      version: 'v1',
      context: { amount: '5' },
    });
    expect((await runtime.read(loanV2Pinned, old)).snapshot.value).toEqual(['loan.approved']);

    const accepted = await runtime.send(loanV2Pinned, created.snapshot.id, { type: 'APPROVE' });
    expect(accepted.snapshot).toMatchObject({ value: ['loan.accepted'], version: 'v2' });
    const paid = await runtime.send(loanV2Pinned, created.snapshot.id, { type: 'PAY' });
    expect(paid.snapshot.context).toEqual({ amount: 5, note: 'paid 6' });

    const finished = await runtime.send(loanV2Pinned, old, { type: 'PAY' });
    expect(finished.snapshot).toMatchObject({
      value: ['loan.paid'],
      status: 'done',
      version: 'v1',
    });
    expect((await store.load(old))!.version).toBe('v1');
    expect((await store.history(old)).some((record) => record.type === 'loan.migration')).toBe(
      false,
    );
  });

  it("refuses 'previous' of another machine", () => {
    const other = defineMachine({
      config: { id: 'other', version: 'v0', initial: 'a', states: { a: {} } },
    });
    expect(() =>
      defineMachine({
        config: loanV2.config,
        behavior: loanV2Behavior,
        versioning: 'pin',
        previous: [other],
      }),
    ).toThrow(/'previous' must hold older definitions of machine 'loan'/);
  });
});
