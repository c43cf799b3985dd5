/**
 * One timer sweep: for each registered machine and each of its timed transitions and schedules
 * (one per selected state), page through
 * the instances that may have a fire due (`Store.timerCandidates`, an index range on
 * `machine_current_states (machine, state, entered time)`), and deliver the due fires of each
 * (timer-delivery.ts). An instance someone holds is left for the next sweep: its fires stay due,
 * they are retried, never dropped.
 */
import type { Clock } from '../../clock.js';
import { sweptTimers, type TimerRegistration } from '../../definition/timer-registration.js';
import { candidateBound, dueFire } from '../../interpreter/due-timers.js';
import type { EngineContext } from '../context.js';
import { deliverDueFires } from './timer-delivery.js';

/** Options of {@link sweepTimers}. */
export interface SweepOptions {
  /** The runtime's context (`MachineRuntime.context`). */
  context: EngineContext;
  registrations: readonly TimerRegistration[];
  clock: Clock;
  /** Candidates read per query (default 500). */
  batchSize?: number;
  /** Instances delivered at the same time (default 4). */
  concurrency?: number;
  /** A delivery that failed (a behavior threw, the store failed): the fire stays due. */
  onError?: (error: unknown, where: { machine: string; id: string }) => void;
}

/** What one sweep did. */
export interface SweepReport {
  /** Candidate rows read. */
  candidates: number;
  /** Candidate queries made. */
  queries: number;
  /** Fires committed. */
  delivered: number;
  /** Instances skipped because another holder had their lock (retried next sweep). */
  locked: number;
  /** Fires another process delivered first. */
  conflicts: number;
  /** Deliveries that failed (reported to `onError`; retried next sweep). */
  failed: number;
}

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
  const concurrency = options.concurrency ?? 4;
  // An instance is delivered once per sweep, whichever of its timers found it.
  const visited = new Set<string>();
  for (const timer of sweptTimers(registration)) {
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
      for (let start = 0; start < due.length; start += concurrency) {
        await Promise.all(
          due.slice(start, start + concurrency).map(async ({ rootEventId }) => {
            visited.add(rootEventId);
            try {
              const result = await deliverDueFires(context, registration, rootEventId, () =>
                clock.now(),
              );
              report.delivered += result.delivered;
              report.conflicts += result.conflicts;
              if (result.locked) report.locked += 1;
            } catch (error) {
              report.failed += 1;
              options.onError?.(error, { machine: definition.id, id: rootEventId });
            }
          }),
        );
      }
      const last = page.at(-1);
      if (last === undefined || page.length < batchSize) break;
      after = { stateEnteredAt: last.stateEnteredAt, rootEventId: last.rootEventId };
    }
  }
}
