/**
 * Which tick of a schedule is due for an instance: a pure function of the schedule, the
 * instance (its creation, its active states), its fire row and `now` (and, for a resolver's
 * schedule, the tick the resolver named it for). The sweep (engine/timers/schedule-sweep.ts)
 * reads these inputs and delivers what this returns as an ordinary event.
 *
 * A schedule is a timer of the machine's root state, whose stay is the instance's life: its fire
 * row (one per instance and schedule) is anchored at the instance's creation and records the
 * last tick delivered. A tick is due when it is later than that, not later than `now`, and the
 * instance was selected for it:
 * - `states`: a selected state's stay began before the tick (any of them: a parallel instance in
 *   two selected states receives the tick once);
 * - `all`: the instance was created before the tick;
 * - `resolver`: the resolver named it for that tick.
 * Missed ticks follow the `missed` policy as `every` boundaries do (due-timers.ts).
 */
import type { CronTimer } from '../definition/schedules.js';
import type { TimedTransition } from '../definition/timed-transitions.js';
import type { MissedFirePolicy } from '../definition/timer-registration.js';

// The timers' types live here (due-timers.ts re-exports them), so neither module imports the other's.
/** Status of a timer's fire record: `active` (recurring, running), `fired` (one-shot), `exhausted`. */
export type TimerFireStatus = 'active' | 'fired' | 'exhausted';

/** The recorded fires of one timer during one stay. */
export interface TimerFireState {
  fireCount: number;
  /** ISO-8601 UTC: the boundary (or deadline) of the last fire. */
  lastFiredAt: string;
  status: TimerFireStatus;
}

/** An active state and when its stay began (`machine_current_states`). */
export interface ActiveStay {
  stateId: string;
  /** ISO-8601 UTC. */
  enteredAt: string;
}

/** A fire to deliver. */
export interface DueFire {
  readonly timer: TimedTransition;
  /** The event to send: the timer's, or `then` after the last recurring fire. */
  readonly eventType: string;
  /** The stay it belongs to (ISO-8601 UTC entry time). */
  readonly stateEnteredAt: string;
  /** The record it was computed from (`null`: first fire of the stay). */
  readonly expected: TimerFireState | null;
  /** The record after the fire. */
  readonly next: TimerFireState;
}

const SKIP_TOLERANCE_MS = 60_000;

/** What a schedule's due rule knows of an instance. */
export interface ScheduledInstance {
  /** ISO-8601 UTC creation time: the anchor of its schedule rows. */
  createdAt: string;
  /** Active leaf states and their entry times. */
  stays: readonly ActiveStay[];
  /** Resolver schedules: the tick (ISO-8601 UTC) each named this instance for, by timer key. */
  resolved?: ReadonlyMap<string, string>;
}

/**
 * The tick of `timer` (a schedule: it has a `selection`) due for `instance` at `now`, or `null`.
 * `fire` is the instance's row of the schedule, whatever its anchor (a row of another anchor
 * counts as none); `floor` is a tick already delivered some other way (rows of the per-state
 * keys written before schedules had one row per instance), never delivered again.
 */
export function dueScheduledTick(
  timer: TimedTransition,
  instance: ScheduledInstance,
  fire: (TimerFireState & { stateEnteredAt: string | null }) | null,
  now: Date,
  registrationMissed: MissedFirePolicy = 'once',
  floor: string | null = null,
): DueFire | null {
  const selection = timer.selection;
  if (selection === undefined || timer.timer.kind !== 'cron') return null;
  const missed = timer.missed ?? registrationMissed;
  const row = fire !== null && fire.stateEnteredAt === instance.createdAt ? fire : null;
  if (row !== null && row.status !== 'active') return null;
  let since = instance.createdAt;
  if (selection.kind === 'states') {
    const entered = instance.stays
      .filter((stay) => selection.stateIds.includes(stay.stateId))
      .map((stay) => stay.enteredAt)
      .sort();
    if (entered.length === 0) return null;
    since = later(since, entered[0]!);
  }
  if (row !== null) since = later(since, row.lastFiredAt);
  if (floor !== null) since = later(since, floor);
  let tick: Date | null;
  if (selection.kind === 'resolver') {
    const named = instance.resolved?.get(timer.key);
    if (named === undefined || Date.parse(named) <= Date.parse(since)) return null;
    tick = missed === 'skip' && stale(timer.timer, new Date(named), now) ? null : new Date(named);
  } else {
    tick = tickAfter(timer.timer, new Date(since), now, missed);
  }
  if (tick === null) return null;
  return {
    timer,
    eventType: timer.eventType,
    stateEnteredAt: instance.createdAt,
    expected: row === null ? null : { ...row },
    next: {
      fireCount: (row?.fireCount ?? 0) + 1,
      lastFiredAt: tick.toISOString(),
      status: 'active',
    },
  };
}

/**
 * The tick to deliver for ticks after `since` at `now` under `missed`, or `null`: the first one
 * (`catch-up`), the latest (`once`), the latest while it is fresh (`skip`: not older than half
 * the gap to the next tick, at most a minute).
 */
export function tickAfter(
  cron: CronTimer,
  since: Date,
  now: Date,
  missed: MissedFirePolicy,
): Date | null {
  const next = cron.cron.nextRun(since);
  if (next === null || next.getTime() > now.getTime()) return null;
  if (missed === 'catch-up') return next;
  const latest = latestTick(cron, now)!;
  if (missed === 'skip' && stale(cron, latest, now)) return null;
  return latest;
}

/** The last tick at or before `now`. */
export function latestTick(cron: CronTimer, now: Date): Date | null {
  return cron.cron.previousRuns(1, new Date(now.getTime() + 1))[0] ?? null;
}

// A tick `skip` drops: older than half the gap to the next tick, at most a minute.
function stale(cron: CronTimer, tick: Date, now: Date): boolean {
  const following = cron.cron.nextRun(tick);
  const gap = following === null ? SKIP_TOLERANCE_MS : following.getTime() - tick.getTime();
  return now.getTime() - tick.getTime() >= Math.min(gap / 2, SKIP_TOLERANCE_MS);
}

function later(a: string, b: string): string {
  return Date.parse(a) >= Date.parse(b) ? a : b;
}
