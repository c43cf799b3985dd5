/**
 * The `moveState` child row change (a migration renaming a delegating state, docs/versioning.md
 * "Delegating states") on every store: an active row naming the old state is pointed at the new
 * one; a row that moved on (another state, or terminal) is left as it is.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ChildRow } from '../../../src/runtime/interpreter/child-rows.js';
import type { Store } from '../../../src/runtime/persistence/store.js';
import { allBackends } from '../../support/stores.js';

const backends = await allBackends('child_move');

describe.each(backends)('moveState child row change ($name)', (backend) => {
  let store: Store;
  beforeAll(() => backend.setUp());
  afterAll(() => backend.tearDown());
  beforeEach(async () => {
    store = await backend.open();
  });
  afterEach(() => store.close());

  const row = (id: string, parent: string, status: ChildRow['status']): ChildRow => ({
    id,
    parentRootEventId: parent,
    parentStateId: 'claim.reviewing',
    parentMachineId: 'claim',
    childMachineId: 'approver',
    childRootEventId: id,
    status,
    createdAt: '2026-01-01T00:00:00.000Z',
    completedAt: null,
  });

  it('should point an active row at the renamed state and leave others alone', async () => {
    const parent = `p${Math.random().toString(36).slice(2, 9)}`;
    const rows = [row(`${parent}a`, parent, 'running'), row(`${parent}b`, parent, 'completed')];
    await store.updateChildren(rows.map((entry) => ({ kind: 'insert' as const, row: entry })));
    await store.updateChildren([
      { kind: 'moveState', childId: `${parent}a`, from: 'claim.reviewing', to: 'claim.inReview' },
      { kind: 'moveState', childId: `${parent}b`, from: 'claim.reviewing', to: 'claim.inReview' },
      // Named from a state the row is not in: nothing.
      { kind: 'moveState', childId: `${parent}a`, from: 'claim.checking', to: 'claim.manual' },
    ]);
    const found = await store.findChildren({ parentRootEventId: parent });
    expect(found.map((entry) => [entry.id, entry.parentStateId, entry.status])).toEqual([
      [`${parent}a`, 'claim.inReview', 'running'],
      [`${parent}b`, 'claim.reviewing', 'completed'],
    ]);
  });
});
