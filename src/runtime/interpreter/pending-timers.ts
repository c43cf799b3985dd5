/**
 * When each timer of an instance fires next: the operator's view of the rules in due-timers.ts
 * (a pure function of the same inputs). The sweep fires a timer at its first pass at or after
 * that time; a past time means the fire is due and waits for a sweep (or a worker).
 */
import type { TimedTransition } from '../definition/timed-transitions.js';
import { nextFireAt, type ActiveStay, type TimerFireState } from './due-timers.js';

/** A timer of an active state and its next fire. */
export interface PendingTimer {
  /** `machine_timer_fires.timer_key`. */
  key: string;
  stateId: string;
  /** `after`, `every` or `cron`. */
  kind: 'after' | 'every' | 'cron';
  /** The event the next fire sends (a recurring timer's `then` after its last fire). */
  eventType: string;
  /** ISO-8601 UTC, `null` when the timer will not fire again in this stay. */
  dueAt: string | null;
  /** Fires delivered in this stay. */
  fireCount: number;
  /** ISO-8601 UTC entry time of the stay. */
  stateEnteredAt: string;
}

/**
 * The timers of `timers` whose state is active, with their next fire: `fires` are the
 * instance's records by timer key, each with the stay it belongs to.
 */
export function pendingTimers(
  timers: readonly TimedTransition[],
  stays: readonly ActiveStay[],
  fires: ReadonlyMap<string, TimerFireState & { stateEnteredAt: string | null }>,
): PendingTimer[] {
  const entered = new Map(stays.map((stay) => [stay.stateId, stay.enteredAt]));
  const pending: PendingTimer[] = [];
  for (const timer of timers) {
    const stateEnteredAt = entered.get(timer.stateId);
    if (stateEnteredAt === undefined) continue;
    const record = fires.get(timer.key);
    const fire = record !== undefined && record.stateEnteredAt === stateEnteredAt ? record : null;
    const next = nextFire(timer, stateEnteredAt, fire);
    pending.push({
      key: timer.key,
      stateId: timer.stateId,
      kind: timer.timer.kind,
      eventType: next.eventType,
      dueAt: next.at === null ? null : new Date(next.at).toISOString(),
      fireCount: fire?.fireCount ?? 0,
      stateEnteredAt,
    });
  }
  return pending;
}

// The time is the due rules' own (`nextFireAt`); the event is `then` once `max` fires were sent.
function nextFire(
  timer: TimedTransition,
  stateEnteredAt: string,
  fire: TimerFireState | null,
): { eventType: string; at: number | null } {
  const at = nextFireAt(timer, stateEnteredAt, fire)?.getTime() ?? null;
  const spec = timer.timer;
  const exhausted =
    spec.kind === 'every' && spec.max !== undefined && (fire?.fireCount ?? 0) >= spec.max;
  if (!exhausted || spec.kind !== 'every') return { eventType: timer.eventType, at };
  return spec.then === undefined
    ? { eventType: timer.eventType, at: null }
    : { eventType: spec.then, at };
}
