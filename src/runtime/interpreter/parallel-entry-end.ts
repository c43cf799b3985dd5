/**
 * Parallel dispatch, the end of a parallel state's entry (docs/parallel-dispatch.md): whether a
 * region job's work is still due (`regionStatus`), the watchdog (`timeoutParallel`,
 * `region_timeout`) and a region job's failed last attempt (`failParallel`), which both end the
 * entry with a record and the state's `@timeout` / `@fail` transition (`endParallel`). The
 * deferral and the merge are in plan-region-dispatch.ts.
 *
 * An entry is over once the state was entered again, or a `region.timeout` or `parallel.fail`
 * record names it (`entryEnded`): region jobs of an ended entry merge nothing.
 */
import { isDescendantOrSelf, type Handler, type StateNode } from '../definition/state-node.js';
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { ParallelTimeoutPayload } from './job-payloads.js';
import { finishMacrostep, settle } from './macrostep.js';
import { leavesOf, macrostepFromSnapshot } from './macrostep-context.js';
import { runMicrostep } from './microstep.js';
import { regionMergedType, type RegionWork, type StepOptions } from './plan-region-dispatch.js';
import { selectCompletion } from './select-transitions.js';
import type { HistoryRecord, MacrostepResult, MachineSnapshot } from './types.js';

/** Whether a region job still has work: `merged` and `stale` jobs commit nothing. */
export type RegionStatus = 'pending' | 'merged' | 'stale';

/** The record of the watchdog firing on a parallel state. */
export function regionTimeoutType(definition: MachineDefinition, parallel: StateNode): string {
  return `${definition.id}.parallel.${parallel.route}.region.timeout`;
}

/** The record of a region job that failed its last attempt (PARALLEL_FAIL). */
export function parallelFailType(definition: MachineDefinition, parallel: StateNode): string {
  return `${definition.id}.parallel.${parallel.route}.fail`;
}

/**
 * Whether the work of `work` is still to merge into `fresh`, given the history recorded after
 * the parallel state was entered (`afterEntry`: records with a sequence above `enteredAt`).
 * `merged`: an earlier attempt committed it (the job ran again after a crash). `stale`: the
 * instance finished, left the parallel state, entered it again, or the watchdog timed it out.
 */
export function regionStatus(
  definition: MachineDefinition,
  fresh: MachineSnapshot,
  afterEntry: readonly HistoryRecord[],
  work: RegionWork,
): RegionStatus {
  const region = definition.idMap.get(work.regionId);
  const parallel = definition.idMap.get(work.parallelStateId);
  if (region === undefined || parallel === undefined) return 'stale';
  const mergedType = regionMergedType(definition, region);
  if (
    afterEntry.some(
      (record) => record.type === mergedType && record.payload?.enteredAt === work.enteredAt,
    )
  )
    return 'merged';
  if (fresh.status === 'done') return 'stale';
  const leaves = leavesOf(definition, fresh.value);
  if (!leaves.some((leaf) => isDescendantOrSelf(leaf, region))) return 'stale';
  return entryEnded(definition, parallel, afterEntry, work.enteredAt) ? 'stale' : 'pending';
}

/**
 * Whether the entry of `parallel` made at `enteredAt` is over: the state was entered again, or
 * the watchdog or a failed region job ended it.
 */
function entryEnded(
  definition: MachineDefinition,
  parallel: StateNode,
  afterEntry: readonly HistoryRecord[],
  enteredAt: number,
): boolean {
  const ends = [regionTimeoutType(definition, parallel), parallelFailType(definition, parallel)];
  return afterEntry.some(
    (record) =>
      record.type === parallel.records.enter ||
      (ends.includes(record.type) && record.payload?.enteredAt === enteredAt),
  );
}

/**
 * The watchdog: `null` when the entry of the parallel state is over (left, entered again, the
 * instance finished) or every region merged; else the step that records `region.timeout` and
 * takes the state's `@timeout`, else `@fail`, transition (none: the record alone).
 */
export function timeoutParallel(
  definition: MachineDefinition,
  fresh: MachineSnapshot,
  afterEntry: readonly HistoryRecord[],
  watch: ParallelTimeoutPayload,
  options: StepOptions = {},
): MacrostepResult | null {
  const parallel = definition.idMap.get(watch.parallelStateId);
  if (parallel === undefined || fresh.status === 'done') return null;
  const leaves = leavesOf(definition, fresh.value);
  if (!leaves.some((leaf) => isDescendantOrSelf(leaf, parallel))) return null;
  if (entryEnded(definition, parallel, afterEntry, watch.enteredAt)) return null;
  const pending = watch.regionIds.filter((regionId) => {
    const region = definition.idMap.get(regionId);
    if (region === undefined) return false;
    const mergedType = regionMergedType(definition, region);
    return !afterEntry.some(
      (record) => record.type === mergedType && record.payload?.enteredAt === watch.enteredAt,
    );
  });
  if (pending.length === 0) return null;
  return endParallel(definition, fresh, parallel, ['@timeout', '@fail'], options, {
    type: regionTimeoutType(definition, parallel),
    payload: { enteredAt: watch.enteredAt, pending, after: watch.timeoutSeconds },
  });
}

/**
 * A region job's last attempt failed with `error`: `null` when its work is no longer due
 * (`regionStatus`), else the step that records `<m>.parallel.<state>.fail` and takes the
 * parallel state's `@fail` transition (none: the record alone).
 */
export function failParallel(
  definition: MachineDefinition,
  fresh: MachineSnapshot,
  afterEntry: readonly HistoryRecord[],
  work: RegionWork,
  error: { name: string; message: string },
  options: StepOptions = {},
): MacrostepResult | null {
  if (regionStatus(definition, fresh, afterEntry, work) !== 'pending') return null;
  const parallel = definition.idMap.get(work.parallelStateId) as StateNode;
  return endParallel(definition, fresh, parallel, ['@fail'], options, {
    type: parallelFailType(definition, parallel),
    payload: { region: work.regionId, enteredAt: work.enteredAt, error },
  });
}

/**
 * Ends an entry of `parallel`: records `record`, then takes the first of its `eventTypes`
 * transitions it has (none: the record alone, the state stays).
 */
function endParallel(
  definition: MachineDefinition,
  fresh: MachineSnapshot,
  parallel: StateNode,
  eventTypes: readonly [string, ...string[]],
  options: StepOptions,
  record: { type: string; payload: Record<string, unknown> },
): MacrostepResult {
  const transition = eventTypes
    .map((eventType) => parallel.on.get(eventType))
    .find((candidate) => candidate !== undefined);
  const macrostep = macrostepFromSnapshot(
    definition,
    fresh,
    { type: transition?.eventType ?? eventTypes[0] },
    options,
  );
  macrostep.record(record.type, record.payload);
  if (transition !== undefined) {
    const prefix = `${definition.id}.transition.${parallel.route}.${transition.eventType}`;
    const handler: Handler = {
      transition,
      startType: `${prefix}.start`,
      finishType: `${prefix}.finish`,
      failType: `${prefix}.fail`,
    };
    const selection = selectCompletion(macrostep, handler);
    if (selection.kind === 'selected' && selection.selected.length > 0)
      runMicrostep(macrostep, selection.selected);
    settle(macrostep);
  }
  return finishMacrostep(macrostep, fresh);
}
