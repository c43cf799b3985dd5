/**
 * What a timer sweep is given and reports, and its delivery of instances' due fires, shared by
 * the timers' pass (timer-sweep.ts) and the schedules' (schedule-sweep.ts).
 */
import type { Clock } from '../../clock.js';
import type { TimerRegistration } from '../../definition/timer-registration.js';
import type { EngineContext } from '../context.js';
import { deliverDueFires } from './timer-delivery.js';

/**
 * What a process knows of each schedule's latest tick (schedule-sweep.ts), by the schedule (its
 * key, and its states): a pass that left nothing due, and a resolver's answer.
 */
export type ScheduleMemo = Map<
  string,
  { tick: string; clean: boolean; ids?: Promise<readonly string[]> }
>;

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
  /**
   * What earlier sweeps of this process know of schedules' ticks (a `TimerWorker` keeps one):
   * a tick whose pass left nothing due is not queried again, and a resolver is called once per
   * tick. Without it, every sweep queries every schedule.
   */
  schedules?: ScheduleMemo;
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

/**
 * Delivers the due fires of instances `ids`, `concurrency` at a time, each at most once per
 * sweep (`visited`); `resolved` names the ticks resolvers named them for. `true` when every
 * delivery ran to its end (none locked by someone else, none failed).
 */
export async function deliverInstances(
  options: SweepOptions,
  registration: TimerRegistration,
  ids: readonly string[],
  report: SweepReport,
  visited: Set<string>,
  resolved?: ReadonlyMap<string, string>,
): Promise<boolean> {
  const concurrency = options.concurrency ?? 4;
  const machine = registration.machine.id;
  let clean = true;
  for (let start = 0; start < ids.length; start += concurrency) {
    await Promise.all(
      ids.slice(start, start + concurrency).map(async (rootEventId) => {
        visited.add(rootEventId);
        try {
          const result = await deliverDueFires(
            options.context,
            registration,
            rootEventId,
            () => options.clock.now(),
            resolved,
          );
          report.delivered += result.delivered;
          report.conflicts += result.conflicts;
          if (result.locked) {
            report.locked += 1;
            clean = false;
          }
        } catch (error) {
          report.failed += 1;
          clean = false;
          options.onError?.(error, { machine, id: rootEventId });
        }
      }),
    );
  }
  return clean;
}
