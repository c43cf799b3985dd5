/**
 * Delivers the due timer fires of one instance as ordinary events, through the runtime's send
 * path (history rows, guards, listeners, delegation, the job outbox), holding the instance lock.
 *
 * Exactly once: each fire's `machine_timer_fires` row is claimed in the event's own commit,
 * conditionally on the row the fire was computed from (`TimerFireClaim`). A crash before the
 * commit leaves the fire due (the next sweep delivers it); a second process that computed the
 * same fire loses the claim (`TimerFireConflictError`) and its commit rolls back whole.
 *
 * The instance's lock is taken without waiting (`holdLock`) and held across its fires; each fire
 * is a send under that lock (`{ held }` in engine/locked-step.ts, engine/lock-hold.ts) carrying the claim into its
 * commit.
 *
 * A fire whose behavior throws is tried again at later sweeps, a bounded number of times with a
 * growing wait in between, then given up with a TRANSITION_FAIL record (timer-failures.ts).
 */
import type { TraceCarrier } from '../../telemetry/trace-carrier.js';
import type { MachineDefinition } from '../../definition/machine-definition.js';
import type { TimedTransition } from '../../definition/timed-transitions.js';
import {
  registrationTimers,
  type MissedFirePolicy,
  type TimerRegistration,
} from '../../definition/timer-registration.js';
import {
  MachineValidationException,
  NoTransitionDefinitionFoundException,
  TimerFireFailedException,
} from '../../errors.js';
import { dueTimers, nextFireAt, type DueFire } from '../../interpreter/due-timers.js';
import { instrumentedTimerFire } from '../work-instrumentation.js';
import {
  TimerFireConflictError,
  type Store,
  type TimerFireClaim,
} from '../../persistence/store.js';
import type { LockHandle } from '../../persistence/locks.js';
import type { TimerFailureRow } from '../../persistence/timer-failures.js';
import { commitTimerClaim } from '../commit-step.js';
import type { EngineContext } from '../context.js';
import { holdLock } from '../lock-hold.js';
import { runningDefinition } from '../versioning/instance-versions.js';
import { lockedInstance, type LockedInstance } from '../with-lock.js';
import { isBackingOff, recordFailedAttempt } from './timer-failures.js';

/** Outcome of one instance's delivery. */
export interface DeliveryResult {
  /** Fires committed (each with its event). */
  delivered: number;
  /** The instance was locked by someone else: nothing was tried, its fires stay due. */
  locked: boolean;
  /** Fires another process committed first (nothing of ours was written). */
  conflicts: number;
}

/** Most fires delivered to one instance per sweep (`catch-up` of a long outage is spread out). */
const MAX_FIRES_PER_INSTANCE = 100;

/** The claim of a due fire, as the store writes it. */
export function claimOf(rootEventId: string, fire: DueFire): TimerFireClaim {
  return {
    next: {
      rootEventId,
      timerKey: fire.timer.key,
      stateEnteredAt: fire.stateEnteredAt,
      ...fire.next,
    },
    expected:
      fire.expected === null
        ? null
        : { fireCount: fire.expected.fireCount, status: fire.expected.status },
  };
}

/**
 * Delivers every fire of instance `id` due at `now()`, one event per fire, re-reading the
 * instance after each (a fire may leave the state and cancel the others). `resolved`: the ticks
 * (ISO-8601) resolvers named this instance for, by schedule key (schedule-sweep.ts).
 */
export async function deliverDueFires(
  ctx: EngineContext,
  registration: TimerRegistration,
  id: string,
  now: () => Date,
  resolved?: ReadonlyMap<string, string>,
): Promise<DeliveryResult> {
  const definition = registration.machine;
  const missed = registration.missed ?? 'once';
  const outcome = await holdLock(ctx, { id, lock: 'try', context: 'timer' }, async (lock) => {
    const instance = lockedInstance(ctx, id, lock);
    // A pinned instance follows its own version's timed states (docs/versioning.md); its
    // events are sent through the send path, which runs them on that version too.
    const timers = await instanceTimers(ctx, registration, id);
    let delivered = 0;
    let conflicts = 0;
    for (let round = 0; round < MAX_FIRES_PER_INSTANCE; round += 1) {
      const due = await nextDueFire(ctx.store, timers, id, now(), missed, resolved);
      if (due === null) break;
      const { fire, failure, armedBy } = due;
      // A schedule's fire is its tick; a timer's, its deadline or boundary.
      const dueAt =
        fire.timer.selection === undefined
          ? nextFireAt(fire.timer, fire.stateEnteredAt, fire.expected)
          : new Date(fire.next.lastFiredAt);
      const result = await instrumentedTimerFire(
        {
          machineId: definition.id,
          instanceId: id,
          key: fire.timer.key,
          dueAt: dueAt ?? now(),
          now: now(),
          armedBy,
        },
        () => deliverOne(ctx, { instance, lock, definition, id, fire, failure }, now),
      );
      if (result === 'conflict') {
        conflicts += 1;
        break;
      }
      delivered += 1;
    }
    return { delivered, conflicts };
  });
  return outcome === null
    ? { delivered: 0, locked: true, conflicts: 0 }
    : { ...outcome.value, locked: false };
}

/** The timers of the version instance `id` runs on (read only when versions are pinned). */
async function instanceTimers(
  ctx: EngineContext,
  registration: TimerRegistration,
  id: string,
): Promise<readonly TimedTransition[]> {
  const definition = registration.machine;
  if (definition.pinned === undefined || definition.pinned.size === 0)
    return registrationTimers(registration);
  const snapshot = await ctx.store.load(id);
  return registrationTimers(
    registration,
    snapshot === null ? definition : runningDefinition(definition, snapshot),
  );
}

// The first due fire of the instance as committed now (read under its lock), leaving out fires
// waiting for their next try, with its failed attempts so far and the trace context of the
// step that entered its state.
async function nextDueFire(
  store: Store,
  timers: readonly TimedTransition[],
  id: string,
  now: Date,
  missed: MissedFirePolicy,
  resolved: ReadonlyMap<string, string> | undefined,
): Promise<{
  fire: DueFire;
  failure: TimerFailureRow | undefined;
  armedBy: TraceCarrier | null;
} | null> {
  const scheduled = timers.some((timer) => timer.selection !== undefined);
  const [states, fires, failures, summary] = await Promise.all([
    store.currentStates(id),
    store.timerFires(id),
    store.timerFailures.list(id),
    // Schedules count from the instance's creation and skip finished or paused instances.
    scheduled ? store.queries.instanceSummary(id) : null,
  ]);
  const stays = states.map((row) => ({ stateId: row.stateId, enteredAt: row.stateEnteredAt }));
  const byKey = new Map(fires.map((row) => [row.timerKey, row]));
  const failed = new Map(failures.map((row) => [row.timerKey, row]));
  const instance =
    summary !== null && summary.status === 'active' && summary.pausedAt === null
      ? { createdAt: summary.createdAt, ...(resolved === undefined ? {} : { resolved }) }
      : undefined;
  for (const fire of dueTimers(timers, stays, byKey, now, missed, instance)) {
    const failure = failed.get(fire.timer.key);
    if (isBackingOff(failure, fire, now)) continue;
    const state = states.find((row) => row.stateId === fire.timer.stateId);
    return { fire, failure, armedBy: state?.traceContext ?? null };
  }
  return null;
}

/** One fire's delivery under the instance lock. */
interface Delivery {
  instance: LockedInstance;
  lock: LockHandle;
  definition: MachineDefinition;
  id: string;
  fire: DueFire;
  /** Its failed attempts so far, if any (possibly of an earlier fire). */
  failure: TimerFailureRow | undefined;
}

async function deliverOne(
  ctx: EngineContext,
  delivery: Delivery,
  now: () => Date,
): Promise<'delivered' | 'conflict'> {
  const { instance, definition, id, fire } = delivery;
  const store = ctx.store;
  const timerFire = claimOf(id, fire);
  let stepFailed = false;
  try {
    await instance.send(
      definition,
      { type: fire.eventType },
      { timerFire, onStepError: () => (stepFailed = true) },
    );
    return 'delivered';
  } catch (error) {
    if (error instanceof TimerFireConflictError) return 'conflict';
    // A failed validation guard: its history and the claim were committed, as for any event.
    if (error instanceof MachineValidationException) return 'delivered';
    // The state does not accept the event (a `then` nobody handles): the fire is recorded
    // alone, so it is not retried forever.
    if (error instanceof NoTransitionDefinitionFoundException) {
      const snapshot = await instance.restore(definition);
      try {
        await commitTimerClaim(store, snapshot, timerFire, new Date());
      } catch (claimError) {
        if (claimError instanceof TimerFireConflictError) return 'conflict';
        throw claimError;
      }
      return 'delivered';
    }
    // A behavior threw (not the store): counted, and given up after the last try.
    if (stepFailed) {
      const outcome = await recordFailedAttempt(ctx, {
        definition,
        id,
        lock: delivery.lock,
        fire,
        claim: timerFire,
        previous: delivery.failure,
        error,
        now: now(),
      });
      if (outcome === 'conflict') return 'conflict';
      const givenUp = outcome === 'given-up';
      throw new TimerFireFailedException(
        `Timer '${fire.timer.key}' of ${definition.id} instance ${id}: its event's behavior threw` +
          (givenUp
            ? `; its MACHINE_TIMER_TRIES are used up, the fire is given up (TRANSITION_FAIL recorded).`
            : `; it is tried again after MACHINE_TIMER_BACKOFF.`),
        { machine: definition.id, key: fire.timer.key, instance: id, givenUp },
        error,
      );
    }
    throw error;
  }
}
