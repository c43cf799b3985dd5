/**
 * The timed transitions of a machine (`after` / `every` on a leaf state's `on` entry), listed
 * once per definition for the timer sweep, and the key each fire is recorded under in
 * `machine_timer_fires`.
 */
import type { MachineDefinition } from './machine-definition.js';
import type { CronTimer, ScheduleSelection } from './schedules.js';
import { isLeaf } from './state-node.js';
import type { MissedFirePolicy } from './timer-registration.js';
import type { TimerDefinition } from './timers.js';

/**
 * One timed transition: the state it waits in, the event it sends, its timer. A scheduled
 * (cron) event is one entry of the machine's root state (schedules.ts), with a `cron` timer.
 */
export interface TimedTransition {
  /** Full id of the state that declares it (`order.submitted`). */
  readonly stateId: string;
  /** The event the fire sends (the `on` key). */
  readonly eventType: string;
  readonly timer: TimerDefinition | CronTimer;
  /**
   * `machine_timer_fires.timer_key`: `<stateId>:<eventType>:<seconds>` (the original's
   * TimerDefinition::key), so changing the duration starts a fresh count;
   * `<stateId>:<eventType>:cron:<name>` for a schedule.
   */
  readonly key: string;
  /** A schedule's own missed-tick policy (else the registration's). */
  readonly missed?: MissedFirePolicy;
  /**
   * A schedule's selection of instances (only schedules have one): the entry is a timer of the
   * machine's root state, one fire row per instance (interpreter/due-ticks.ts).
   */
  readonly selection?: ScheduleSelection;
}

const cache = new WeakMap<MachineDefinition, readonly TimedTransition[]>();

/**
 * Every timed transition of `definition`, in document order. Reserved `@` events are left out:
 * `@timeout` uses `after` for a child's deadline, which delegation schedules itself. The timer
 * of a transition is its first branch's that has one.
 */
export function timedTransitions(definition: MachineDefinition): readonly TimedTransition[] {
  const known = cache.get(definition);
  if (known !== undefined) return known;
  const found: TimedTransition[] = [];
  for (const node of definition.idMap.values()) {
    for (const [eventType, transition] of node.on) {
      if (eventType.startsWith('@')) continue;
      const timer = transition.branches.find((branch) => branch.timer !== null)?.timer ?? null;
      if (timer === null || !isLeaf(node)) continue;
      found.push(
        Object.freeze({
          stateId: node.id,
          eventType,
          timer,
          key: `${node.id}:${eventType}:${timer.seconds}`,
        }),
      );
    }
  }
  const frozen = Object.freeze(found);
  cache.set(definition, frozen);
  return frozen;
}
