/**
 * When each timer of an instance fires next: the operator's view of the rules in due-timers.ts
 * (a pure function of the same inputs). The sweep fires a timer at its first pass at or after
 * that time; a past time means the fire is due and waits for a sweep (or a worker).
 */
import type { TimedTransition } from '../definition/timed-transitions.js';
import type { ActiveStay, TimerFireState } from './due-timers.js';

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

function nextFire(
  timer: TimedTransition,
  stateEnteredAt: string,
  fire: TimerFireState | null,
): { eventType: string; at: number | null } {
  const none = { eventType: timer.eventType, at: null };
  if (fire !== null && fire.status !== 'active') return none;
  const from = fire === null ? stateEnteredAt : fire.lastFiredAt;
  if (timer.timer.kind === 'cron') {
    const next = timer.timer.cron.nextRun(new Date(from));
    return { eventType: timer.eventType, at: next === null ? null : next.getTime() };
  }
  const at = Date.parse(from) + timer.timer.seconds * 1000;
  if (timer.timer.kind === 'after') return { eventType: timer.eventType, at };
  const { max, then } = timer.timer;
  if (max !== undefined && (fire?.fireCount ?? 0) >= max)
    return then === undefined ? none : { eventType: then, at };
  return { eventType: timer.eventType, at };
}
