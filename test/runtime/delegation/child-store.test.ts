/**
 * `machine_children` rows and multi-instance commits on every store backend.
 */
import { ulid } from 'ulid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChildRow } from '../../../src/runtime/index.js';
import { SequenceConflictError, type Store } from '../../../src/runtime/persistence/store.js';
import { allBackends, makeStep } from '../../support/stores.js';

const AT = '2026-03-01T10:00:00.000Z';

function row(overrides: Partial<ChildRow> & { id: string; parentRootEventId: string }): ChildRow {
  return {
    parentStateId: 'order.paying',
    parentMachineId: 'order',
    childMachineId: 'payment',
    childRootEventId: overrides.id,
    status: 'pending',
    createdAt: AT,
    completedAt: null,
    ...overrides,
  };
}

describe.each(await allBackends('delegation-child-store'))('child rows on $name', (backend) => {
  let store: Store;

  beforeAll(async () => {
    await backend.setUp();
    store = await backend.open();
  });
  afterAll(async () => {
    await store.close();
    await backend.tearDown();
  });

  it('should insert rows with a commit and find them by parent, state, machine and status', async () => {
    const parent = makeStep({ machineId: 'order', value: ['order.paying'], context: {} });
    const childId = ulid();
    const other = ulid();

    await store.commit({
      ...parent,
      children: [
        { kind: 'insert', row: row({ id: childId, parentRootEventId: parent.snapshot.id }) },
        {
          kind: 'insert',
          row: row({
            id: other,
            parentRootEventId: parent.snapshot.id,
            parentStateId: 'order.shipping',
            childMachineId: 'parcel',
            status: 'running',
          }),
        },
      ],
    });

    expect(await store.findChildren({ parentRootEventId: parent.snapshot.id })).toEqual(
      [
        row({ id: childId, parentRootEventId: parent.snapshot.id }),
        row({
          id: other,
          parentRootEventId: parent.snapshot.id,
          parentStateId: 'order.shipping',
          childMachineId: 'parcel',
          status: 'running',
        }),
      ].sort((a, b) => (a.id < b.id ? -1 : 1)),
    );
    expect(
      (
        await store.findChildren({
          parentRootEventId: parent.snapshot.id,
          childMachineId: 'parcel',
          statuses: ['running'],
        })
      ).map((found) => found.id),
    ).toEqual([other]);
    expect(
      await store.findChildren({ parentRootEventId: parent.snapshot.id, statuses: [] }),
    ).toEqual([]);
  });

  it('should move a status only from the listed ones and cancel only active rows', async () => {
    const parentId = ulid();
    const [a, b] = [ulid(), ulid()];
    await store.updateChildren([
      { kind: 'insert', row: row({ id: a, parentRootEventId: parentId }) },
      {
        kind: 'insert',
        row: row({ id: b, parentRootEventId: parentId, status: 'completed', completedAt: AT }),
      },
    ]);

    await store.updateChildren([
      { kind: 'setStatus', childId: a, from: ['pending'], status: 'running', at: AT },
      { kind: 'setStatus', childId: b, from: ['pending', 'running'], status: 'failed', at: AT },
    ]);
    expect(
      (await store.findChildren({ parentRootEventId: parentId })).map((found) => [
        found.id,
        found.status,
      ]),
    ).toEqual(
      [
        [a, 'running'],
        [b, 'completed'],
      ].sort(),
    );

    await store.updateChildren([
      {
        kind: 'cancel',
        parentRootEventId: parentId,
        parentStateId: 'order.paying',
        at: '2026-03-01T11:00:00.000Z',
      },
    ]);
    const rows = await store.findChildren({ parentRootEventId: parentId });
    expect(rows.find((found) => found.id === a)).toMatchObject({
      status: 'cancelled',
      completedAt: '2026-03-01T11:00:00.000Z',
    });
    expect(rows.find((found) => found.id === b)).toMatchObject({
      status: 'completed',
      completedAt: AT,
    });
  });

  it('should write `also` instances with the main one, keep their parent, and roll everything back when one is fenced', async () => {
    const parent = makeStep({ machineId: 'order', value: ['order.paying'], context: {} });
    const child = makeStep({
      machineId: 'payment',
      value: ['payment.awaiting'],
      context: { amount: 1 },
    });
    child.snapshot.parent = { machineId: 'order', id: parent.snapshot.id };

    await store.commit({
      ...parent,
      also: [child],
      children: [
        {
          kind: 'insert',
          row: row({ id: child.snapshot.id, parentRootEventId: parent.snapshot.id }),
        },
      ],
    });
    expect(await store.load(child.snapshot.id)).toEqual(child.snapshot);

    const next = makeStep({
      machineId: 'order',
      from: parent.snapshot,
      value: ['order.paid'],
      context: {},
    });
    const stale = makeStep({
      machineId: 'payment',
      id: child.snapshot.id,
      value: ['payment.awaiting'],
      context: {},
    });
    await expect(
      store.commit({
        ...next,
        also: [stale],
        children: [
          {
            kind: 'setStatus',
            childId: child.snapshot.id,
            from: ['pending'],
            status: 'running',
            at: AT,
          },
        ],
      }),
    ).rejects.toThrow(SequenceConflictError);
    expect((await store.load(parent.snapshot.id))?.value).toEqual(['order.paying']);
    expect((await store.findChildren({ id: child.snapshot.id }))[0]?.status).toBe('pending');
  });
});
