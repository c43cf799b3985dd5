/**
 * The must-show of issue 31 on both stores: 1,000 instances of v1 spread over its states; v2
 * renames `approved` to `accepted`, removes `reviewing` (to `applied`) and turns `amount` from a
 * string into a number, with a migration. The lazy path (next load in the locked step) and the
 * eager path (`migrateInstances`, in batches, resumable) both restore every instance without a
 * failure, in its mapped state with the transformed context, its history gap-free with one
 * migration record after the records v1 wrote.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { migrateInstances } from '../../../src/runtime/engine/versioning/eager-migration.js';
import type { MachineSnapshot } from '../../../src/runtime/interpreter/types.js';
import type { Store } from '../../../src/runtime/persistence/store.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';
import { loanV1, loanV2 } from './fixtures/loans.js';

const COUNT = 1000;
const V1_STATES = ['applied', 'reviewing', 'approved', 'paid', 'rejected'] as const;
/** Where v2 puts each v1 state. */
const MAPPED: Record<(typeof V1_STATES)[number], string> = {
  applied: 'loan.applied',
  reviewing: 'loan.applied',
  approved: 'loan.accepted',
  paid: 'loan.paid',
  rejected: 'loan.rejected',
};
const EVENTS: Record<(typeof V1_STATES)[number], string[]> = {
  applied: [],
  reviewing: ['REVIEW'],
  approved: ['APPROVE'],
  paid: ['APPROVE', 'PAY'],
  rejected: ['REVIEW', 'REJECT'],
};

interface Seeded {
  id: string;
  state: (typeof V1_STATES)[number];
  amount: string;
  v1Records: number;
}

async function seed(runtime: MachineRuntime): Promise<Seeded[]> {
  const seeded: Seeded[] = [];
  for (let index = 0; index < COUNT; index += 10) {
    // Ten at a time: the stores' commits group, and seeding 1,000 stays a few seconds.
    seeded.push(
      ...(await Promise.all(
        Array.from({ length: 10 }, async (_, offset) => {
          const state = V1_STATES[(index + offset) % V1_STATES.length]!;
          const amount = String(index + offset);
          const { snapshot } = await runtime.create(loanV1, { input: { amount } });
          let last: MachineSnapshot = snapshot;
          for (const type of EVENTS[state])
            last = (await runtime.send(loanV1, snapshot.id, { type })).snapshot;
          return { id: snapshot.id, state, amount, v1Records: last.sequence };
        }),
      )),
    );
  }
  return seeded;
}

/** Every instance in its mapped state with a number amount, history gap-free with one migration record after v1's. */
async function expectMigrated(store: Store, seeded: readonly Seeded[]): Promise<void> {
  let failed = 0;
  const byState = new Map<string, number>();
  for (const instance of seeded) {
    const stored = await store.load(instance.id);
    if (stored === null) {
      failed += 1;
      continue;
    }
    expect(stored.version).toBe('v2');
    expect(stored.value[0]).toBe(MAPPED[instance.state]);
    expect(stored.context.amount).toBe(Number(instance.amount));
    byState.set(stored.value[0]!, (byState.get(stored.value[0]!) ?? 0) + 1);
    const history = await store.history(instance.id);
    expect(history.map((record) => record.sequence)).toEqual(history.map((_, index) => index + 1));
    const migrations = history.filter((record) => record.type === 'loan.migration');
    expect(migrations).toHaveLength(1);
    expect(migrations[0]!.sequence).toBe(instance.v1Records + 1);
    expect(
      history.slice(0, instance.v1Records).every((record) => record.type !== 'loan.migration'),
    ).toBe(true);
  }
  expect(failed).toBe(0);
  expect(Object.fromEntries(byState)).toEqual({
    'loan.applied': 400,
    'loan.accepted': 200,
    'loan.paid': 200,
    'loan.rejected': 200,
  });
}

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('thousand-instances');
if (postgres) backends.push(postgres);

describe.each(backends)('1,000 v1 instances, v2 with a migration ($name)', (backend) => {
  let store: Store;
  let runtime: MachineRuntime;

  beforeAll(() => backend.setUp());
  afterAll(() => backend.tearDown());
  beforeEach(async () => {
    store = await backend.open();
    runtime = new MachineRuntime({ store });
  });
  afterEach(() => runtime.close());

  it('lazy: every instance restores migrated; the next step writes the migration first', async () => {
    const seeded = await seed(runtime);
    // v2 restores all of them before anything is written: 0 failed restores.
    let failed = 0;
    for (const instance of seeded) {
      const restored = await runtime.restore(loanV2, instance.id).catch(() => null);
      if (restored === null || restored.value[0] !== MAPPED[instance.state]) failed += 1;
      else expect(restored.context.amount).toBe(Number(instance.amount));
    }
    expect(failed).toBe(0);
    // The next event's locked step writes the migration first, then the event.
    for (const instance of seeded) {
      const event =
        instance.state === 'approved'
          ? 'PAY'
          : instance.state === 'applied' || instance.state === 'reviewing'
            ? 'REJECT'
            : null;
      if (event === null) continue;
      await runtime.send(loanV2, instance.id, { type: event });
    }
    // Done instances take no event: the eager run migrates them, and counts only them.
    const report = await migrateInstances(runtime.context, loanV2, { batch: 50 });
    expect(report.failed).toEqual([]);
    expect(report.migrated).toHaveLength(400);
    expect(report.current).toBe(600);
    for (const instance of seeded) {
      const stored = (await store.load(instance.id))!;
      expect(stored.version).toBe('v2');
      expect(stored.context.amount).toBe(Number(instance.amount));
      const history = await store.history(instance.id);
      expect(history.map((record) => record.sequence)).toEqual(
        history.map((_, index) => index + 1),
      );
      expect(history.filter((record) => record.type === 'loan.migration')).toHaveLength(1);
      expect(history[instance.v1Records]!.type).toBe('loan.migration');
    }
  }, 300_000);

  it('eager: a dry run lists 1,000 changes and 0 failures; the run migrates them in batches; a rerun skips them', async () => {
    const seeded = await seed(runtime);
    const dry = await migrateInstances(runtime.context, loanV2, { dryRun: true, batch: 100 });
    expect(dry.failed).toEqual([]);
    expect(dry.migrated.length).toBeGreaterThanOrEqual(COUNT);
    expect((await store.load(seeded[0]!.id))!.version).toBe('v1');
    const batches: number[] = [];
    const report = await migrateInstances(runtime.context, loanV2, {
      batch: 100,
      onBatch: (progress) => batches.push(progress.scanned),
    });
    expect(report.failed).toEqual([]);
    expect(batches.length).toBeGreaterThanOrEqual(10);
    await expectMigrated(store, seeded);
    const again = await migrateInstances(runtime.context, loanV2, { batch: 100 });
    expect(again.migrated).toEqual([]);
    expect(again.failed).toEqual([]);
  }, 300_000);
});
