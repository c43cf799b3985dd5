/**
 * A timer fire given up: its event made a behavior throw at every one of its tries
 * (`MACHINE_TIMER_TRIES`, engine/timers/timer-failures.ts). The spec's rule for a transition
 * that does not happen is the one for a failed guard: the state stays and a TRANSITION_FAIL
 * record is made (`<m>.transition.<route>.<EVENT>.fail`). This step is that record alone, with
 * the error and the tries in its payload; the engine commits it with the fire's claim, so the
 * fire is consumed (a recurring timer goes on at its next boundary). No `@fail` transition is
 * taken: the spec routes `@fail` for a failed child or region job, work the state started and
 * waits for, not for an event of the instance's own whose behavior threw, which is a bug to fix
 * rather than an outcome the machine models.
 */
import type { MachineDefinition } from '../definition/machine-definition.js';
import { finishMacrostep } from './macrostep.js';
import { macrostepFromSnapshot, type SnapshotStepOptions } from './macrostep-context.js';
import type { MacrostepResult, MachineSnapshot } from './types.js';

/** The fire given up, and why. */
export interface GivenUpFire {
  /** Full id of the state whose timer fired. */
  stateId: string;
  /** The event the fire sent. */
  eventType: string;
  /** `machine_timer_fires.timer_key`. */
  timerKey: string;
  /** Tries made (all failed). */
  tries: number;
  /** The last try's error. */
  error: { name: string; message: string };
}

/** The record type of a given-up fire: the TRANSITION_FAIL of its event in its state. */
export function timerFailType(definition: MachineDefinition, fire: GivenUpFire): string {
  const route = definition.idMap.get(fire.stateId)?.route ?? fire.stateId;
  return `${definition.id}.transition.${route}.${fire.eventType}.fail`;
}

/**
 * The step recording `fire` as given up on `snapshot`: one `...transition.<route>.<EVENT>.fail`
 * record (payload `{ timer, tries, error }`), state and context unchanged.
 */
export function giveUpTimerFire(
  definition: MachineDefinition,
  snapshot: MachineSnapshot,
  fire: GivenUpFire,
  options: Pick<SnapshotStepOptions, 'now' | 'machines' | 'maxTransitionDepth'> = {},
): MacrostepResult {
  const macrostep = macrostepFromSnapshot(definition, snapshot, { type: fire.eventType }, options);
  macrostep.record(timerFailType(definition, fire), {
    timer: fire.timerKey,
    tries: fire.tries,
    error: fire.error,
  });
  return finishMacrostep(macrostep, snapshot);
}
