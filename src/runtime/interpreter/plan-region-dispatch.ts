/**
 * Parallel dispatch, the pure rules (docs/parallel-dispatch.md). With `parallelDispatch` on, a
 * step that enters a parallel state records each region's `region.enter` and `enter` records
 * as usual but leaves the regions' entry actions to region jobs (`dispatchRegion` effects).
 * A region job then:
 *
 * 1. runs the region's entry actions on the last committed snapshot, without the lock
 *    (`runRegionEntry`): regions run at the same time in different workers;
 * 2. under the instance lock, on the snapshot committed by then, checks the work is still due
 *    (`regionStatus`) and merges it (`mergeRegion`): the entry records, the context keys the
 *    actions changed, a `region.merged` record, then the raised events, `@always` and `@done`
 *    as any step. The commit is fenced on that snapshot's sequence.
 *
 * Context conflicts: two regions of one entry of a parallel state changing the same key is a
 * `<m>.parallel.<region>.context.conflict` record, and the value of the region later in
 * document order is kept, whichever merged first: the value a run without dispatch (regions
 * entered one after the other, in document order) would leave.
 *
 * The end of an entry is in parallel-entry-end.ts: whether a job's work is still due
 * (`regionStatus`), the watchdog (`timeoutParallel`, `region_timeout`): a parallel state whose
 * regions have not all merged in time gets a `<m>.parallel.<state>.region.timeout` record and
 * takes its `@timeout` transition, else its `@fail`; and a region job that fails its last
 * attempt (`failParallel`): a `<m>.parallel.<state>.fail` record (PARALLEL_FAIL) and the
 * state's `@fail` transition. Region jobs of an entry that was left, timed out or failed
 * merge nothing.
 */
import { isDescendantOrSelf, isLeaf, type StateNode } from '../definition/state-node.js';
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { Context, EventObject } from '../definition/types.js';
import type { DispatchRegionEffect, MacrostepEffect } from './effects.js';
import type { JobPayloads } from './job-payloads.js';
import { finishMacrostep, settle } from './macrostep.js';
import { macrostepFromSnapshot, type Macrostep, type RegionDeferral } from './macrostep-context.js';
import type { HistoryRecord, MacrostepOptions, MacrostepResult, MachineSnapshot } from './types.js';

/** A region job's work (the `parallel.region` job payload). */
export type RegionWork = JobPayloads['parallel.region'];

/** What a region's entry actions did, computed without the lock. */
export interface RegionEntryRun {
  /** Records the actions wrote (entry start/finish, actions, raised events), to be replayed. */
  records: { type: string; payload: Record<string, unknown> | null }[];
  /** Events the actions raised, processed by the merge. */
  raised: EventObject[];
  /** Effects the actions caused (messages, ...), applied by the merge's commit. */
  effects: MacrostepEffect[];
  /** Top-level context keys the actions changed, with their new values (`undefined`: deleted). */
  changes: Map<string, unknown>;
}

/** Options of the region steps (a subset of the macrostep's). */
export type StepOptions = Pick<
  MacrostepOptions,
  'now' | 'machines' | 'maxTransitionDepth' | 'traceBehaviors'
> & {
  parallelDispatch?: MacrostepOptions['parallelDispatch'];
};

/**
 * Called by `enterStates` before entering `states`: which of them have their entry actions
 * deferred to region jobs. A region is dispatched when it has entry actions to run and none of
 * its entered leaves is transient (an `@always` leaf moves on in this step, before a job could
 * run its entry actions: such a region runs inline). A parallel state inside a dispatched
 * region is part of that region's work.
 */
export function planRegionDeferral(macrostep: Macrostep, states: readonly StateNode[]): void {
  for (const parallel of states) {
    if (parallel.type !== 'parallel' || macrostep.deferredEntries.has(parallel)) continue;
    let entry = null;
    for (const region of parallel.children) {
      const entered = states.filter((state) => isDescendantOrSelf(state, region));
      if (!entered.some((state) => state.entry.length > 0)) continue;
      if (entered.some((state) => isLeaf(state) && state.hasAlways)) continue;
      entry ??= { enteredAt: 0 };
      const deferral: RegionDeferral = { parallel, region, entry };
      for (const state of entered) macrostep.deferredEntries.set(state, deferral);
    }
    if (entry !== null) macrostep.parallelEntries.set(parallel, entry);
  }
}

/** Called by `enterState` instead of running `state`'s entry actions. */
export function deferEntry(macrostep: Macrostep, state: StateNode, deferral: RegionDeferral): void {
  macrostep.deferredEntries.delete(state);
  if (state.entry.length === 0) return;
  let dispatched = macrostep.dispatchedRegions.find(
    (candidate) => candidate.region === deferral.region && candidate.entry === deferral.entry,
  );
  if (dispatched === undefined) {
    dispatched = { ...deferral, states: [] };
    macrostep.dispatchedRegions.push(dispatched);
  }
  dispatched.states.push(state);
}

/** The `dispatchRegion` effects of a finished macrostep: regions still active at its end. */
export function regionDispatchEffects(macrostep: Macrostep): DispatchRegionEffect[] {
  const active = macrostep.dispatchedRegions.filter(
    (dispatched) =>
      macrostep.leaves.some((leaf) => isDescendantOrSelf(leaf, dispatched.region)) &&
      // Entered again later in the same step: the last entry is the one that counts.
      macrostep.dispatchedRegions.findLast((other) => other.region === dispatched.region) ===
        dispatched,
  );
  return active.map((dispatched) => ({
    kind: 'dispatchRegion',
    machineId: macrostep.machineId,
    instanceId: macrostep.id,
    parallelStateId: dispatched.parallel.id,
    regionId: dispatched.region.id,
    regionIds: active
      .filter((other) => other.entry === dispatched.entry)
      .map((other) => other.region.id),
    states: dispatched.states.map((state) => state.id),
    enteredAt: dispatched.entry.enteredAt,
    trigger: macrostep.trigger,
    timeoutSeconds: macrostep.parallelDispatch?.regionTimeoutSeconds ?? null,
  }));
}

/** The record a merged region job writes (its idempotency mark). */
export function regionMergedType(definition: MachineDefinition, region: StateNode): string {
  return `${definition.id}.parallel.${region.route}.region.merged`;
}

/** The record of a context conflict between two regions. */
export function contextConflictType(definition: MachineDefinition, region: StateNode): string {
  return `${definition.id}.parallel.${region.route}.context.conflict`;
}

/**
 * Step 1 of a region job, without the lock: runs the region's deferred entry actions on
 * `base` (the last committed snapshot) and returns what they did. Behaviors are synchronous,
 * so this blocks its process for as long as they take: regions run concurrently in different
 * worker processes.
 */
export function runRegionEntry(
  definition: MachineDefinition,
  base: MachineSnapshot,
  work: RegionWork,
  options: StepOptions = {},
): RegionEntryRun {
  const macrostep = macrostepFromSnapshot(definition, base, work.trigger, options);
  for (const id of work.states) {
    const state = definition.idMap.get(id);
    if (state === undefined || state.entry.length === 0) continue;
    macrostep.record(state.records.entryStart);
    macrostep.runActions(state.entry);
    macrostep.record(state.records.entryFinish);
  }
  return {
    records: macrostep.history.records.map((record) => ({
      type: record.type,
      payload: record.payload,
    })),
    raised: [...macrostep.raised],
    effects: [...macrostep.effects],
    changes: changedKeys(base.context, macrostep.context),
  };
}

/**
 * Step 2 of a region job, under the lock: merges `run` into `fresh` (the snapshot committed
 * now) as one macrostep: the entry records, the changed keys (conflicts with sibling regions
 * of the same entry decided by document order, see the module comment), the `region.merged`
 * record, then the raised events, `@always` and `@done` (the parallel state's `@done` fires in
 * the merge that completes its last region).
 */
export function mergeRegion(
  definition: MachineDefinition,
  fresh: MachineSnapshot,
  afterEntry: readonly HistoryRecord[],
  work: RegionWork,
  run: RegionEntryRun,
  options: StepOptions = {},
): MacrostepResult {
  const region = definition.idMap.get(work.regionId) as StateNode;
  const macrostep = macrostepFromSnapshot(definition, fresh, work.trigger, options);
  macrostep.own();
  for (const record of run.records) macrostep.record(record.type, record.payload);
  const written = siblingWrites(definition, afterEntry, work);
  const context = macrostep.context;
  for (const [key, value] of run.changes) {
    const other = written.get(key);
    if (other !== undefined && !sameJson(context[key], value)) {
      const otherRegion = definition.idMap.get(other);
      const oursWins = otherRegion === undefined || region.order > otherRegion.order;
      macrostep.record(contextConflictType(definition, region), {
        key,
        enteredAt: work.enteredAt,
        regions: [other, work.regionId],
        values: [toJson(context[key]), toJson(value)],
        kept: oursWins ? work.regionId : other,
      });
      if (!oursWins) continue;
    }
    if (value === undefined) delete context[key];
    else context[key] = value;
  }
  macrostep.record(regionMergedType(definition, region), {
    region: work.regionId,
    enteredAt: work.enteredAt,
    keys: [...run.changes.keys()],
  });
  macrostep.raised.push(...run.raised);
  macrostep.effects.push(...run.effects);
  settle(macrostep);
  return finishMacrostep(macrostep, fresh);
}

/** Keys a sibling region of the same entry merged, with the region that wrote each. */
function siblingWrites(
  definition: MachineDefinition,
  afterEntry: readonly HistoryRecord[],
  work: RegionWork,
): Map<string, string> {
  const written = new Map<string, string>();
  for (const regionId of work.regionIds) {
    if (regionId === work.regionId) continue;
    const region = definition.idMap.get(regionId);
    if (region === undefined) continue;
    const mergedType = regionMergedType(definition, region);
    for (const record of afterEntry) {
      if (record.type !== mergedType || record.payload?.enteredAt !== work.enteredAt) continue;
      const keys = record.payload.keys;
      if (Array.isArray(keys)) for (const key of keys) written.set(String(key), regionId);
    }
  }
  return written;
}

function changedKeys(before: Context, after: Context): Map<string, unknown> {
  const changes = new Map<string, unknown>();
  if (before === after) return changes;
  for (const key of Object.keys(after))
    if (!(key in before) || !sameJson(before[key], after[key])) changes.set(key, after[key]);
  for (const key of Object.keys(before)) if (!(key in after)) changes.set(key, undefined);
  return changes;
}

function sameJson(a: unknown, b: unknown): boolean {
  return a === b || JSON.stringify(a) === JSON.stringify(b);
}

function toJson(value: unknown): unknown {
  return value === undefined ? null : (JSON.parse(JSON.stringify(value)) as unknown);
}
