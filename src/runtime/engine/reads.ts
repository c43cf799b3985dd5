/**
 * Reads of instances: the last committed snapshot (`restore`, `read`), histories, instances in a
 * state, available events with the children's, and the checks every read and write makes of a
 * loaded snapshot (unknown id or another machine's instance: 404; a state the definition no
 * longer has: 409).
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import type { ForwardDefinition } from '../definition/types.js';
import {
  InstancePausedException,
  MachineNotFoundException,
  StateNotInDefinitionException,
} from '../errors.js';
import { isInstanceId } from '../ids.js';
import type {
  AvailableEvent,
  HistoryRecord,
  MachineSnapshot,
  StoredScenario,
} from '../interpreter/types.js';
import { keptScenario as keptScenarioOf } from '../persistence/kept-scenarios.js';
import type { FindInStateOptions, HistoryQuery, InstanceInState } from '../persistence/store.js';
import type { AvailableEventsReadOptions, InstanceRead } from '../persistence/types.js';
import { availableEventsWithChildren, forwardedChild } from './child-reads.js';
import type { EngineContext } from './context.js';
import { readView, runningDefinition } from './versioning/instance-versions.js';

/** The last committed snapshot; `MachineNotFoundException` for unknown or foreign ids. */
export async function restore(
  ctx: EngineContext,
  definition: MachineDefinition,
  id: string,
): Promise<MachineSnapshot> {
  const snapshot = isInstanceId(id) ? await ctx.store.load(id) : null;
  return checked(definition, id, snapshot);
}

/**
 * The snapshot of instance `id` of `definition` as read: 404 when it is not one, 409 for a
 * removed state; an instance of an older version with a migration as migrated (not written).
 */
export function checked(
  definition: MachineDefinition,
  id: string,
  snapshot: MachineSnapshot | null,
): MachineSnapshot {
  if (!snapshot || snapshot.machineId !== definition.id) throw notFound(definition, id);
  // An instance of an older version reads as migrated before its migration is written.
  const view = readView(definition, snapshot);
  // A pinned instance is checked against its own version's states.
  assertKnownStates(runningDefinition(definition, view), view);
  return view;
}

/**
 * `snapshot`, unless an operator paused it: a paused instance refuses events
 * (`InstancePausedException`, docs/operations.md "Pause and resume"). Checked as the lock is
 * taken, on the row read with it, so a pause committed before is never missed.
 */
export function refusePaused(snapshot: MachineSnapshot): MachineSnapshot {
  if (snapshot.pausedAt === undefined) return snapshot;
  throw new InstancePausedException(
    `Machine '${snapshot.machineId}' instance '${snapshot.id}' was paused by an operator at ${snapshot.pausedAt}: it accepts no events until resumed (machine-routes instances resume ${snapshot.machineId} ${snapshot.id}).`,
    { machine: snapshot.machineId, key: snapshot.id, pausedAt: snapshot.pausedAt },
  );
}

/** The last committed snapshot and whether a live lock is held; one statement, no write. */
export async function read(
  ctx: EngineContext,
  definition: MachineDefinition,
  id: string,
): Promise<InstanceRead> {
  // The lock row is looked at, never taken or waited for.
  const loaded = isInstanceId(id) ? await ctx.store.loadForRead(id) : null;
  const snapshot = checked(definition, id, loaded?.snapshot ?? null);
  const expires = loaded!.lockExpiresAt;
  return { snapshot, isProcessing: expires !== null && expires > Date.now() };
}

/** History of an instance in sequence order; `MachineNotFoundException` for unknown or foreign ids. */
export async function history(
  ctx: EngineContext,
  definition: MachineDefinition,
  id: string,
  query?: HistoryQuery,
): Promise<HistoryRecord[]> {
  await restore(ctx, definition, id);
  return ctx.store.history(id, query);
}

/**
 * Instances of `definition` whose active states include `stateId` (full id `order.submitted`,
 * or relative to the machine, `submitted`), oldest entry first.
 */
export function findInstancesInState(
  ctx: EngineContext,
  definition: MachineDefinition,
  stateId: string,
  options: FindInStateOptions,
): Promise<InstanceInState[]> {
  const fullId = stateId.startsWith(`${definition.id}.`) ? stateId : `${definition.id}.${stateId}`;
  return ctx.store.findInstancesInState(definition.id, fullId, options);
}

/** Events the instance accepts now, with the forwarded ones its running children accept. */
export function availableEvents(
  ctx: EngineContext,
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  options?: AvailableEventsReadOptions,
): Promise<AvailableEvent[]> {
  return availableEventsWithChildren(ctx.store, definition, snapshot, options);
}

/** The child a forwarded endpoint reached (running, else the latest of its state), or `null`. */
export function forwardedChildOf(
  ctx: EngineContext,
  parent: MachineSnapshot,
  forward: ForwardDefinition,
): Promise<MachineSnapshot | null> {
  return forwardedChild(ctx.store, parent, forward);
}

/** The scenario kept on an instance (a continuation), `null` when none. */
export async function keptScenario(ctx: EngineContext, id: string): Promise<StoredScenario | null> {
  return keptScenarioOf(await ctx.store.currentStates(id));
}

/**
 * A deploy removed or renamed a state the instance sits in: 409 naming the state, instead of
 * letting the interpreter fail on an unknown node (which used to surface as a 404 / 500).
 */
function assertKnownStates(definition: MachineDefinition, snapshot: MachineSnapshot): void {
  for (const stateId of snapshot.value) {
    if (definition.idMap.has(stateId)) continue;
    throw new StateNotInDefinitionException(
      `Machine '${snapshot.id}' of '${definition.id}' is in state '${stateId}', which the current definition no longer has (removed or renamed). ` +
        `Restore the state or migrate the instance; 'machine-routes check --database <url>' lists such instances before a deploy.`,
      { machine: definition.id, key: snapshot.id, path: stateId },
    );
  }
}

/** The 404 of an unknown id, or of another machine's instance. */
export function notFound(definition: MachineDefinition, id: string): MachineNotFoundException {
  return new MachineNotFoundException(`Machine '${id}' of '${definition.id}' was not found.`, {
    machine: definition.id,
    key: id,
  });
}
