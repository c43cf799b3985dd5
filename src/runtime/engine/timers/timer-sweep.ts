/**
 * One timer sweep: for each registered machine and each of its timed transitions, page through
 * the instances that may have a fire due (`Store.timerCandidates`, an index range on
 * `machine_current_states (machine, state, entered time)`), and deliver the due fires of each
 * (timer-delivery.ts); then its schedules (schedule-sweep.ts). An instance someone holds is left
 * for the next sweep: its fires stay due, they are retried, never dropped.
 */
import { sweptTimers, type TimerRegistration } from '../../definition/timer-registration.js';
import { candidateBound, dueFire } from '../../interpreter/due-timers.js';
import { deliverInstances, type SweepOptions, type SweepReport } from './deliver-instances.js';
import { sweepSchedule } from './schedule-sweep.js';

export type { SweepOptions, SweepReport } from './deliver-instances.js';

/** Runs one sweep over every registered machine. */
export async function sweepTimers(options: SweepOptions): Promise<SweepReport> {
  const report: SweepReport = {
    candidates: 0,
    queries: 0,
    delivered: 0,
    locked: 0,
    conflicts: 0,
    failed: 0,
  };
  for (const registration of options.registrations) {
    await sweepMachine(options, registration, report);
  }
  return report;
}

async function sweepMachine(
  options: SweepOptions,
  registration: TimerRegistration,
  report: SweepReport,
): Promise<void> {
  const { context, clock } = options;
  const definition = registration.machine;
  const missed = registration.missed ?? 'once';
  const batchSize = options.batchSize ?? 500;
  // An instance is delivered once per sweep, whichever of its timers found it.
  const visited = new Set<string>();
  for (const timer of sweptTimers(registration)) {
    if (timer.selection !== undefined) {
      await sweepSchedule(options, registration, timer, report, visited);
      continue;
    }
    const now = clock.now();
    const dueBy = candidateBound(timer, now);
    if (dueBy === null) continue;
    let after: { stateEnteredAt: string; rootEventId: string } | undefined;
    for (;;) {
      const page = await context.store.timerCandidates({
        machineId: definition.id,
        stateId: timer.stateId,
        timerKey: timer.key,
        dueBy,
        limit: batchSize,
        ...(after === undefined ? {} : { after }),
      });
      report.queries += 1;
      report.candidates += page.length;
      const due = page.filter(
        (candidate) =>
          !visited.has(candidate.rootEventId) &&
          dueFire(timer, candidate.stateEnteredAt, candidate.fire, now, missed) !== null,
      );
      await deliverInstances(
        options,
        registration,
        due.map((candidate) => candidate.rootEventId),
        report,
        visited,
      );
      const last = page.at(-1);
      if (last === undefined || page.length < batchSize) break;
      after = { stateEnteredAt: last.stateEnteredAt, rootEventId: last.rootEventId };
    }
  }
}
