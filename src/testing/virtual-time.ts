/**
 * When the next thing falls due on a test runtime's virtual clock: the earliest job waiting in
 * its queue and the earliest timer fire of any instance in a timed state (read from the store
 * as the sweep reads its candidates, with the sweep's own due rule). The clock then jumps to
 * that time, not past it, so fires and jobs run in due order with the times they would have.
 */
import {
  registrationTimers,
  type TimerRegistration,
} from '../runtime/definition/timer-registration.js';
import type { TimedTransition } from '../runtime/definition/timed-transitions.js';
import { candidateBound, nextFireAt } from '../runtime/interpreter/due-timers.js';
import type { JobInfo } from '../runtime/jobs/job-queue.js';
import type { Store } from '../runtime/persistence/store.js';

const PAGE = 500;

/**
 * The timers of every version of the registered machine: the newest definition's, then those of
 * each version it keeps loaded (pinned, docs/versioning.md). A candidate's version is not known
 * here, so each version's timer of its state is considered: the clock may stop at a time that
 * fires nothing for it (the sweep delivers each instance's own version's fires), but never
 * skips one of a pinned instance's fires.
 */
function versionTimers(registration: TimerRegistration): readonly TimedTransition[] {
  const pinned = registration.machine.pinned;
  const own = registrationTimers(registration);
  if (pinned === undefined || pinned.size === 0) return own;
  return [...own, ...[...pinned.values()].flatMap((old) => registrationTimers(registration, old))];
}

/** The earliest time after `now` and at or before `horizon` when a job or a timer falls due, else `null`. */
export async function nextDueTime(
  store: Store,
  registrations: readonly TimerRegistration[],
  jobs: readonly JobInfo[],
  now: Date,
  horizon: Date,
): Promise<Date | null> {
  let next: number | null = null;
  const consider = (time: number): void => {
    if (time > now.getTime() && time <= horizon.getTime() && (next === null || time < next))
      next = time;
  };
  for (const job of jobs) consider(job.runAt.getTime());
  for (const registration of registrations) {
    for (const timer of versionTimers(registration)) {
      // A schedule: its next tick (whether it reaches an instance is the sweep's to find).
      if (timer.selection !== undefined) {
        if (timer.timer.kind === 'cron') {
          const tick = timer.timer.cron.nextRun(now);
          if (tick !== null) consider(tick.getTime());
        }
        continue;
      }
      const dueBy = candidateBound(timer, horizon);
      if (dueBy === null) continue;
      let after: { stateEnteredAt: string; rootEventId: string } | undefined;
      for (;;) {
        const page = await store.timerCandidates({
          machineId: registration.machine.id,
          stateId: timer.stateId,
          timerKey: timer.key,
          dueBy,
          limit: PAGE,
          ...(after === undefined ? {} : { after }),
        });
        for (const candidate of page) {
          const at = nextFireAt(timer, candidate.stateEnteredAt, candidate.fire);
          if (at !== null) consider(at.getTime());
        }
        const last = page.at(-1);
        if (last === undefined || page.length < PAGE) break;
        after = { stateEnteredAt: last.stateEnteredAt, rootEventId: last.rootEventId };
      }
    }
  }
  return next === null ? null : new Date(next);
}
