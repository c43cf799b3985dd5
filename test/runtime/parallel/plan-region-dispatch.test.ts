/**
 * The pure rules of parallel dispatch: which entry actions are deferred, the effects and jobs a
 * step plans, the merge (conflict rule, `@done` once), idempotency, the watchdog and a region
 * job's failed last attempt.
 */
import { describe, expect, it } from 'vitest';
import { initialize, transition } from '../../../src/runtime/index.js';
import type { DispatchRegionEffect } from '../../../src/runtime/interpreter/effects.js';
import { planCommit } from '../../../src/runtime/interpreter/plan-commit.js';
import {
  mergeRegion,
  runRegionEntry,
  type RegionWork,
} from '../../../src/runtime/interpreter/plan-region-dispatch.js';
import {
  failParallel,
  regionStatus,
  timeoutParallel,
} from '../../../src/runtime/interpreter/parallel-entry-end.js';
import type { HistoryRecord, MachineSnapshot } from '../../../src/runtime/interpreter/types.js';
import { shipmentMachine } from './fixtures/machines.js';

const dispatch = { parallelDispatch: { regionTimeoutSeconds: 5 } };

function enter(payload: Record<string, unknown> = { workMs: 0 }) {
  const created = initialize(shipmentMachine, dispatch);
  return transition(shipmentMachine, created.snapshot, { type: 'START', payload }, dispatch);
}

function workOf(effect: DispatchRegionEffect): RegionWork {
  const { kind: _kind, timeoutSeconds: _timeout, ...work } = effect;
  return work;
}

describe('parallel dispatch rules', () => {
  it('should commit the parallel state with its regions pending and plan one job per region', () => {
    const entered = enter();
    expect(entered.snapshot.value).toEqual([
      'shipment.working.billing.charging',
      'shipment.working.packing.boxing',
    ]);
    // Entry actions did not run: no keys of theirs, no entry records.
    expect(entered.snapshot.context).not.toHaveProperty('billing');
    const types = entered.history.map((record) => record.type);
    expect(types).toContain('shipment.parallel.working.billing.region.enter');
    expect(types).not.toContain('shipment.state.working.billing.charging.entry.start');
    const effects = entered.effects.filter((effect) => effect.kind === 'dispatchRegion');
    expect(effects.map((effect) => [effect.regionId, effect.states])).toEqual([
      ['shipment.working.billing', ['shipment.working.billing.charging']],
      ['shipment.working.packing', ['shipment.working.packing.boxing']],
    ]);
    const enterRecord = entered.history.find(
      (record) => record.type === 'shipment.state.working.enter',
    );
    expect(effects[0]!.enteredAt).toBe(enterRecord!.sequence);

    const plan = planCommit({ main: { result: entered, from: null }, at: new Date(0) });
    expect(plan.jobs.map((job) => [job.kind, job.key])).toEqual([
      [
        'parallel.region',
        `region:${entered.snapshot.id}:${effects[0]!.enteredAt}:shipment.working.billing`,
      ],
      [
        'parallel.timeout',
        `parallel-timeout:${entered.snapshot.id}:${effects[0]!.enteredAt}:shipment.working`,
      ],
      [
        'parallel.region',
        `region:${entered.snapshot.id}:${effects[0]!.enteredAt}:shipment.working.packing`,
      ],
    ]);
    expect(plan.jobs[1]!.runAt).toEqual(new Date(5000));
  });

  it('should run entry actions inline with dispatch off', () => {
    const created = initialize(shipmentMachine);
    const entered = transition(shipmentMachine, created.snapshot, {
      type: 'START',
      payload: { workMs: 0 },
    });
    expect(entered.snapshot.value).toEqual(['shipment.shipped']);
    expect(entered.snapshot.context.shared).toBe('packing');
    expect(entered.effects).toEqual([]);
  });

  it("should merge both regions, keep the later region's value on a conflict, and fire @done once", () => {
    const entered = enter();
    const [billing, packing] = entered.effects.map((effect) =>
      workOf(effect as DispatchRegionEffect),
    );
    const history: HistoryRecord[] = [];
    // Both run on the same committed snapshot; packing merges first.
    const billingRun = runRegionEntry(shipmentMachine, entered.snapshot, billing!);
    const packingRun = runRegionEntry(shipmentMachine, entered.snapshot, packing!);
    expect([...packingRun.changes.keys()]).toEqual(['shared', 'packing']);

    const first = mergeRegion(shipmentMachine, entered.snapshot, history, packing!, packingRun);
    history.push(...first.history);
    expect(first.snapshot.value).toEqual([
      'shipment.working.billing.charging',
      'shipment.working.packing.boxed',
    ]);
    expect(regionStatus(shipmentMachine, first.snapshot, history, packing!)).toBe('merged');
    expect(regionStatus(shipmentMachine, first.snapshot, history, billing!)).toBe('pending');

    const second = mergeRegion(shipmentMachine, first.snapshot, history, billing!, billingRun);
    const types = second.history.map((record) => record.type);
    expect(second.snapshot.value).toEqual(['shipment.shipped']);
    expect(second.snapshot.context.doneCount).toBe(1);
    // packing comes later in document order: its value stays.
    expect(second.snapshot.context.shared).toBe('packing');
    const conflict = second.history.find(
      (record) => record.type === 'shipment.parallel.working.billing.context.conflict',
    );
    expect(conflict?.payload).toMatchObject({
      key: 'shared',
      regions: ['shipment.working.packing', 'shipment.working.billing'],
      values: ['packing', 'billing'],
      kept: 'shipment.working.packing',
    });
    expect(types.filter((type) => type === 'shipment.parallel.working.done')).toHaveLength(1);
    expect(types).toContain('shipment.state.working.billing.charging.entry.start');
  });

  it("should keep the later region's value when it merges last too", () => {
    const entered = enter();
    const [billing, packing] = entered.effects.map((effect) =>
      workOf(effect as DispatchRegionEffect),
    );
    const billingRun = runRegionEntry(shipmentMachine, entered.snapshot, billing!);
    const packingRun = runRegionEntry(shipmentMachine, entered.snapshot, packing!);
    const first = mergeRegion(shipmentMachine, entered.snapshot, [], billing!, billingRun);
    const second = mergeRegion(
      shipmentMachine,
      first.snapshot,
      first.history,
      packing!,
      packingRun,
    );
    expect(second.snapshot.context.shared).toBe('packing');
    expect(second.history.map((record) => record.type)).toContain(
      'shipment.parallel.working.packing.context.conflict',
    );
  });

  it('should fail a parallel state whose regions have not all merged, and make its jobs stale', () => {
    const entered = enter();
    const [billing, packing] = entered.effects.map((effect) =>
      workOf(effect as DispatchRegionEffect),
    );
    const first = mergeRegion(
      shipmentMachine,
      entered.snapshot,
      [],
      billing!,
      runRegionEntry(shipmentMachine, entered.snapshot, billing!),
    );
    const watch = {
      machineId: 'shipment',
      instanceId: entered.snapshot.id,
      parallelStateId: 'shipment.working',
      regionIds: billing!.regionIds,
      enteredAt: billing!.enteredAt,
      timeoutSeconds: 5,
    };
    const timedOut = timeoutParallel(shipmentMachine, first.snapshot, first.history, watch)!;
    expect(timedOut.snapshot.value).toEqual(['shipment.failed']);
    expect(timedOut.history[0]).toMatchObject({
      type: 'shipment.parallel.working.region.timeout',
      payload: { pending: ['shipment.working.packing'], after: 5 },
    });
    const after: HistoryRecord[] = [...first.history, ...timedOut.history];
    expect(regionStatus(shipmentMachine, timedOut.snapshot, after, packing!)).toBe('stale');
    // Every region merged: the watchdog does nothing.
    const done: MachineSnapshot = mergeRegion(
      shipmentMachine,
      first.snapshot,
      first.history,
      packing!,
      runRegionEntry(shipmentMachine, entered.snapshot, packing!),
    ).snapshot;
    expect(timeoutParallel(shipmentMachine, done, [], watch)).toBeNull();
  });

  it('should fail a parallel state whose region job failed for good, and make its siblings stale', () => {
    const entered = enter();
    const [billing, packing] = entered.effects.map((effect) =>
      workOf(effect as DispatchRegionEffect),
    );
    const error = { name: 'Error', message: 'packing is out of stock' };
    const failed = failParallel(shipmentMachine, entered.snapshot, [], packing!, error)!;
    expect(failed.snapshot.value).toEqual(['shipment.failed']);
    expect(failed.history[0]).toMatchObject({
      type: 'shipment.parallel.working.fail',
      payload: { region: 'shipment.working.packing', enteredAt: packing!.enteredAt, error },
    });
    expect(regionStatus(shipmentMachine, failed.snapshot, failed.history, billing!)).toBe('stale');
    // A region whose work merged meanwhile fails nothing.
    const merged = mergeRegion(
      shipmentMachine,
      entered.snapshot,
      [],
      packing!,
      runRegionEntry(shipmentMachine, entered.snapshot, packing!),
    );
    expect(
      failParallel(shipmentMachine, merged.snapshot, merged.history, packing!, error),
    ).toBeNull();
  });
});
