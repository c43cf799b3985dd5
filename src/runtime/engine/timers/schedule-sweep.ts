/**
 * The sweep of one schedule (a scheduled cron event, definition/schedules.ts): find the instances
 * its latest tick may be due for, by its selection, and deliver their due fires
 * (timer-delivery.ts), each under its instance's lock with the fire row's conditional claim in
 * the event's commit. So a tick reaches an instance at most once, whichever of its states
 * matched, however many workers sweep and however often a resolver is asked.
 *
 * - `states`: an index range per selected state (`Store.scheduleCandidates.inState`);
 * - `all`: the machine's instances by creation (`ofMachine`);
 * - `resolver`: the application's function, called here (in the worker, outside any lock or
 *   transaction, awaited) once per tick and process; its ids are read by primary key (`byIds`).
 *
 * A process remembers (`ScheduleMemo`) the last tick of each schedule whose pass left nothing
 * due (every candidate delivered, none locked or failed): it does not query for that tick again,
 * so the cost of a schedule is one pass over its candidates per tick, not per sweep.
 */
import type { TimedTransition } from '../../definition/timed-transitions.js';
import type { TimerRegistration } from '../../definition/timer-registration.js';
import { dueScheduledTick, latestTick } from '../../interpreter/due-ticks.js';
import type {
  CandidatePosition,
  ScheduleCandidate,
} from '../../persistence/schedule-candidates.js';
import { deliverInstances, type SweepOptions, type SweepReport } from './deliver-instances.js';

export type { ScheduleMemo } from './deliver-instances.js';

const PAGE = 500;

/** Sweeps `timer` (a schedule of `registration`): delivers its latest tick where it is due. */
export async function sweepSchedule(
  options: SweepOptions,
  registration: TimerRegistration,
  timer: TimedTransition,
  report: SweepReport,
  visited: Set<string>,
): Promise<void> {
  const { selection } = timer;
  if (selection === undefined || timer.timer.kind !== 'cron') return;
  const now = options.clock.now();
  const latest = latestTick(timer.timer, now);
  if (latest === null) return;
  const tick = latest.toISOString();
  // Pinned versions' schedules share a key and select each version's states.
  const memoKey =
    selection.kind === 'states' ? `${timer.key} ${selection.stateIds.join(' ')}` : timer.key;
  const memo = options.schedules?.get(memoKey);
  if (memo?.tick === tick && memo.clean) return;
  const store = options.context.store.scheduleCandidates;
  const machineId = registration.machine.id;
  const missed = registration.missed ?? 'once';
  const base = { machineId, timerKey: timer.key, dueBy: new Date(latest.getTime() - 1) };
  let clean = true;

  // Delivers the candidates a tick is due for (the pure rule on what the query returned; the
  // delivery decides again under the lock).
  const deliver = async (
    page: readonly ScheduleCandidate[],
    stateId: string | null,
    resolved?: ReadonlyMap<string, string>,
  ): Promise<void> => {
    report.queries += 1;
    report.candidates += page.length;
    const due = page.filter((candidate) => {
      const stays =
        stateId === null || candidate.stateEnteredAt === undefined
          ? []
          : [{ stateId, enteredAt: candidate.stateEnteredAt }];
      const instance = { createdAt: candidate.createdAt, stays, ...(resolved ? { resolved } : {}) };
      return dueScheduledTick(timer, instance, candidate.fire, now, missed) !== null;
    });
    const fresh = due.filter((candidate) => !visited.has(candidate.rootEventId));
    // Delivered earlier in this sweep by another timer's pass: perhaps not this tick (a resolver's
    // is only known here), so the tick is looked at again next sweep.
    if (fresh.length < due.length) clean = false;
    const ids = fresh.map((candidate) => candidate.rootEventId);
    if (!(await deliverInstances(options, registration, ids, report, visited, resolved)))
      clean = false;
  };

  // Pages of a keyset query until a short one.
  const pages = async (
    read: (after: CandidatePosition | undefined) => Promise<ScheduleCandidate[]>,
    time: (candidate: ScheduleCandidate) => string,
    stateId: string | null,
  ): Promise<void> => {
    let after: CandidatePosition | undefined;
    for (;;) {
      const page = await read(after);
      await deliver(page, stateId);
      const last = page.at(-1);
      if (last === undefined || page.length < PAGE) return;
      after = { time: time(last), rootEventId: last.rootEventId };
    }
  };

  if (selection.kind === 'states') {
    for (const stateId of selection.stateIds) {
      await pages(
        (after) =>
          store.inState({
            ...base,
            stateId,
            limit: PAGE,
            ...(after === undefined ? {} : { after }),
          }),
        (candidate) => candidate.stateEnteredAt!,
        stateId,
      );
    }
  } else if (selection.kind === 'all') {
    await pages(
      (after) =>
        store.ofMachine({ ...base, limit: PAGE, ...(after === undefined ? {} : { after }) }),
      (candidate) => candidate.createdAt,
      null,
    );
  } else {
    // One call per tick and process, shared by a sweep running beside it (`sweepOnce`).
    let asked = memo?.tick === tick ? memo.ids : undefined;
    if (asked === undefined) {
      asked = resolve(timer, selection.resolver, selection.name, machineId, latest);
      options.schedules?.set(memoKey, { tick, clean: false, ids: asked });
    }
    let ids: readonly string[];
    try {
      ids = await asked;
    } catch (error) {
      // The resolver is asked again at the next sweep.
      if (options.schedules?.get(memoKey)?.ids === asked) options.schedules.delete(memoKey);
      report.failed += 1;
      options.onError?.(error, { machine: machineId, id: `schedule '${selection.name}' resolver` });
      return;
    }
    const resolved = new Map([[timer.key, tick]]);
    for (let start = 0; start < ids.length; start += PAGE) {
      const page = await store.byIds({ ...base, ids: ids.slice(start, start + PAGE) });
      await deliver(page, null, resolved);
    }
    options.schedules?.set(memoKey, { tick, clean, ids: asked });
    return;
  }
  options.schedules?.set(memoKey, { tick, clean });
}

// The resolver's answer for `at`, as distinct strings.
async function resolve(
  timer: TimedTransition,
  resolver: NonNullable<Extract<TimedTransition['selection'], { kind: 'resolver' }>>['resolver'],
  name: string,
  machineId: string,
  at: Date,
): Promise<readonly string[]> {
  const answer = await resolver({ machineId, schedule: name, event: timer.eventType, at });
  const ids = new Set<string>();
  for await (const id of answer) if (typeof id === 'string') ids.add(id);
  return [...ids];
}
