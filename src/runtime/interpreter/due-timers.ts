/**
 * Which timers of an instance are due: a pure function of the definition, the instance's active
 * states with their entry times, the fires recorded so far and `now`. The sweep (engine/timers/timer-sweep.ts) reads
 * these inputs from the store and delivers what this returns as ordinary events.
 *
 * Rules:
 * - A stay in a state is named by its entry time. Leaving the state ends the stay (its timers
 *   are cancelled); entering again, or a self-transition, starts a new stay with fresh
 *   deadlines and counts. A targetless transition keeps the stay.
 * - `after`: one fire per stay, due at entry + duration. A deadline that passed while no
 *   worker ran fires once, late.
 * - `every`: due at each period boundary (entry + n x period) while the stay lasts. With `max`,
 *   it stops after `max` fires; with `then` as well, the `then` event is sent once, one period
 *   after the last fire (where the next fire would have been), and the timer is exhausted.
 * - Boundaries missed while no worker ran follow the registration's `missed` policy:
 *   `once` (default) fires one event for all of them, `catch-up` fires one per missed
 *   boundary, `skip` drops them and fires again at the next boundary (a boundary counts as
 *   missed once it is `min(period / 2, 1 minute)` old; sweeps run far more often than that).
 */
import type { CronTimer } from '../definition/schedules.js';
import type { TimedTransition } from '../definition/timed-transitions.js';
import type { MissedFirePolicy } from '../definition/timer-registration.js';
import {
  dueScheduledTick,
  latestTick,
  tickAfter,
  type ActiveStay,
  type DueFire,
  type ScheduledInstance,
  type TimerFireState,
} from './due-ticks.js';

export type { ActiveStay, DueFire, TimerFireState, TimerFireStatus } from './due-ticks.js';

const SKIP_TOLERANCE_MS = 60_000;

/**
 * The fire of one timer due at `now`, or `null`. `fire` must be the record of this stay (a
 * record of an earlier stay counts as none).
 */
export function dueFire(
  timer: TimedTransition,
  stateEnteredAt: string,
  fire: TimerFireState | null,
  now: Date,
  registrationMissed: MissedFirePolicy = 'once',
): DueFire | null {
  const missed = timer.missed ?? registrationMissed;
  if (timer.timer.kind === 'cron')
    return dueTick(timer, timer.timer, stateEnteredAt, fire, now, missed);
  const period = timer.timer.seconds * 1000;
  const time = now.getTime();
  const entered = Date.parse(stateEnteredAt);
  const base = { timer, stateEnteredAt, expected: fire };
  if (timer.timer.kind === 'after') {
    const deadline = entered + period;
    if (fire !== null || deadline > time) return null;
    return {
      ...base,
      eventType: timer.eventType,
      next: { fireCount: 1, lastFiredAt: iso(deadline), status: 'fired' },
    };
  }
  if (fire !== null && fire.status !== 'active') return null;
  const count = fire?.fireCount ?? 0;
  const last = fire === null ? entered : Date.parse(fire.lastFiredAt);
  const next = last + period;
  if (next > time) return null;
  const { max, then } = timer.timer;
  if (max !== undefined && count >= max) {
    // Reached only with `then` (without it, the last fire exhausts the timer).
    if (then === undefined) return null;
    return {
      ...base,
      eventType: then,
      next: { fireCount: count, lastFiredAt: iso(next), status: 'exhausted' },
    };
  }
  const latest = last + Math.floor((time - last) / period) * period;
  let boundary: number;
  if (missed === 'catch-up') boundary = next;
  else if (missed === 'once') boundary = latest;
  else if (time - latest < Math.min(period / 2, SKIP_TOLERANCE_MS)) boundary = latest;
  else return null;
  const fireCount = count + 1;
  return {
    ...base,
    eventType: timer.eventType,
    next: {
      fireCount,
      lastFiredAt: iso(boundary),
      status: max !== undefined && fireCount >= max && then === undefined ? 'exhausted' : 'active',
    },
  };
}

// A cron timer without a selection (schedules have one and go through due-ticks.ts): the first
// tick after the stay began or the last fire, as `every` boundaries are.
function dueTick(
  timer: TimedTransition,
  cron: CronTimer,
  stateEnteredAt: string,
  fire: TimerFireState | null,
  now: Date,
  missed: MissedFirePolicy,
): DueFire | null {
  if (fire !== null && fire.status !== 'active') return null;
  const since = new Date(fire === null ? stateEnteredAt : fire.lastFiredAt);
  const tick = tickAfter(cron, since, now, missed);
  if (tick === null) return null;
  return {
    timer,
    stateEnteredAt,
    expected: fire,
    eventType: timer.eventType,
    next: {
      fireCount: (fire?.fireCount ?? 0) + 1,
      lastFiredAt: tick.toISOString(),
      status: 'active',
    },
  };
}

/**
 * The bound of the sweep's candidate query for a timer at `now`: stays that began, and fires
 * last delivered, at or before it may be due (`null`: nothing can be). For `after`/`every`, one
 * period ago; for a schedule, just before its latest tick.
 */
export function candidateBound(timer: TimedTransition, now: Date): Date | null {
  if (timer.timer.kind !== 'cron') return new Date(now.getTime() - timer.timer.seconds * 1000);
  const latest = latestTick(timer.timer, now);
  return latest === null ? null : new Date(latest.getTime() - 1);
}

/**
 * When the next fire of one timer falls due in a stay (the first time {@link dueFire} returns
 * one), or `null` when the stay has no fire left: a clock that jumps (a test's virtual time)
 * moves to each such time in turn instead of past all of them at once.
 */
export function nextFireAt(
  timer: TimedTransition,
  stateEnteredAt: string,
  fire: TimerFireState | null,
): Date | null {
  if (timer.timer.kind === 'after')
    return fire === null ? new Date(Date.parse(stateEnteredAt) + timer.timer.seconds * 1000) : null;
  if (fire !== null && fire.status !== 'active') return null;
  const last = fire === null ? stateEnteredAt : fire.lastFiredAt;
  if (timer.timer.kind === 'cron') return timer.timer.cron.nextRun(new Date(last));
  return new Date(Date.parse(last) + timer.timer.seconds * 1000);
}

/**
 * Every fire due at `now` for an instance, in the order of `timers` (a machine's timed
 * transitions, then its schedules): `stays` are its active states, `fires` its records by timer
 * key, each with the stay it belongs to. Schedules need `instance` (its creation, and the ticks
 * resolvers named it for; due-ticks.ts) and are left out without it.
 */
export function dueTimers(
  timers: readonly TimedTransition[],
  stays: readonly ActiveStay[],
  fires: ReadonlyMap<string, TimerFireState & { stateEnteredAt: string | null }>,
  now: Date,
  missed: MissedFirePolicy = 'once',
  instance?: Omit<ScheduledInstance, 'stays'>,
): DueFire[] {
  const entered = new Map(stays.map((stay) => [stay.stateId, stay.enteredAt]));
  const due: DueFire[] = [];
  for (const timer of timers) {
    if (timer.selection !== undefined) {
      if (instance === undefined) continue;
      const found = dueScheduledTick(
        timer,
        { ...instance, stays },
        fires.get(timer.key) ?? null,
        now,
        missed,
        perStateFloor(timer, fires),
      );
      if (found !== null) due.push(found);
      continue;
    }
    const stateEnteredAt = entered.get(timer.stateId);
    if (stateEnteredAt === undefined) continue;
    const record = fires.get(timer.key);
    const fire = record !== undefined && record.stateEnteredAt === stateEnteredAt ? record : null;
    const found = dueFire(timer, stateEnteredAt, fire, now, missed);
    if (found !== null) due.push(found);
  }
  return due;
}

// The last tick delivered under the per-state keys of a schedule (`<stateId>:<event>:cron:<name>`,
// before one row per instance): an upgrade does not deliver it again.
function perStateFloor(
  timer: TimedTransition,
  fires: ReadonlyMap<string, TimerFireState>,
): string | null {
  const suffix = timer.key.slice(timer.stateId.length);
  let floor: string | null = null;
  for (const [key, row] of fires) {
    if (!key.startsWith(`${timer.stateId}.`) || !key.endsWith(suffix)) continue;
    if (floor === null || Date.parse(row.lastFiredAt) > Date.parse(floor)) floor = row.lastFiredAt;
  }
  return floor;
}

function iso(time: number): string {
  return new Date(time).toISOString();
}
