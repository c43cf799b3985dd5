/**
 * Bounded tries of a timer fire whose behavior throws (docs/timers.md "A behavior that throws").
 *
 * The failed send commits nothing, so the fire stays due. Each failed attempt is counted in
 * `machine_timer_failures` (persistence/timer-failures.ts) for that one fire (its stay and fire
 * count), under the instance lock the delivery holds; the fire is not tried again before
 * `MACHINE_TIMER_BACKOFF` seconds, doubled at each further try. The attempt that makes
 * `MACHINE_TIMER_TRIES` gives the fire up: a TRANSITION_FAIL record
 * (interpreter/timer-failure.ts) committed with the fire's claim through the locked step, so the
 * fire is consumed exactly once, as a delivered one is. Errors of the store (a lost connection,
 * a busy database) are not counted: only an error thrown while computing the step is.
 */
import type { MachineDefinition } from '../../definition/machine-definition.js';
import type { DueFire } from '../../interpreter/due-timers.js';
import { giveUpTimerFire } from '../../interpreter/timer-failure.js';
import type { LockHandle } from '../../persistence/locks.js';
import { TimerFireConflictError, type TimerFireClaim } from '../../persistence/store.js';
import type { TimerFailureRow } from '../../persistence/timer-failures.js';
import type { EngineContext } from '../context.js';
import { runLocked } from '../locked-step.js';

/** Longest wait between two tries, however many were made. */
const MAX_BACKOFF_MS = 60 * 60_000;

/** Whether `row` counts failed attempts at `fire` (not at an earlier fire or stay). */
export function isFailureOf(row: TimerFailureRow | undefined, fire: DueFire): boolean {
  return (
    row !== undefined &&
    row.timerKey === fire.timer.key &&
    Date.parse(row.stateEnteredAt) === Date.parse(fire.stateEnteredAt) &&
    row.fireCount === (fire.expected?.fireCount ?? 0)
  );
}

/** Whether `fire` failed before and its next try is not yet due at `now`. */
export function isBackingOff(row: TimerFailureRow | undefined, fire: DueFire, now: Date): boolean {
  return (
    isFailureOf(row, fire) && row!.retryAt !== null && Date.parse(row!.retryAt) > now.getTime()
  );
}

/** What one failed attempt led to. */
export type FailedAttempt = 'retrying' | 'given-up' | 'conflict';

/** Arguments of {@link recordFailedAttempt}. */
export interface FailedAttemptInput {
  definition: MachineDefinition;
  id: string;
  /** The lock the delivery holds. */
  lock: LockHandle;
  fire: DueFire;
  claim: TimerFireClaim;
  /** The fire's row as read before the attempt (`undefined`: none). */
  previous: TimerFailureRow | undefined;
  error: unknown;
  now: Date;
}

/**
 * Counts one failed attempt at `fire`; on the last allowed one, gives the fire up (the record and
 * the claim in one commit). `conflict`: another process delivered the fire meanwhile.
 */
export async function recordFailedAttempt(
  ctx: EngineContext,
  input: FailedAttemptInput,
): Promise<FailedAttempt> {
  const { fire, now } = input;
  const attempts = (isFailureOf(input.previous, fire) ? input.previous!.attempts : 0) + 1;
  const error = describe(input.error);
  const row: TimerFailureRow = {
    rootEventId: input.id,
    timerKey: fire.timer.key,
    stateEnteredAt: fire.stateEnteredAt,
    fireCount: fire.expected?.fireCount ?? 0,
    attempts,
    lastError: `${error.name}: ${error.message}`,
    failedAt: now.toISOString(),
    retryAt: null,
  };
  if (attempts < ctx.settings.timerTries) {
    const wait = Math.min(ctx.settings.timerBackoffMs * 2 ** (attempts - 1), MAX_BACKOFF_MS);
    await ctx.store.timerFailures.record({
      ...row,
      retryAt: new Date(now.getTime() + wait).toISOString(),
    });
    return 'retrying';
  }
  let committed: boolean;
  try {
    committed = await giveUp(ctx, input, attempts, error);
  } catch (claimError) {
    if (claimError instanceof TimerFireConflictError) return 'conflict';
    throw claimError;
  }
  if (!committed) return 'conflict';
  // The row says the fire was given up (no retry time); it names a consumed fire from now on.
  await ctx.store.timerFailures.record(row);
  return 'given-up';
}

// The TRANSITION_FAIL record and the fire's claim, one commit under the held lock; `false`
// when the instance is gone.
function giveUp(
  ctx: EngineContext,
  input: FailedAttemptInput,
  attempts: number,
  error: { name: string; message: string },
): Promise<boolean> {
  const { fire } = input;
  return runLocked(ctx, {
    id: input.id,
    lock: { held: input.lock },
    context: 'timer',
    machineId: input.definition.id,
    compute: (snapshot) => {
      if (snapshot === null) return { value: false };
      const result = giveUpTimerFire(
        input.definition,
        snapshot,
        {
          stateId: fire.timer.stateId,
          eventType: fire.eventType,
          timerKey: fire.timer.key,
          tries: attempts,
          error,
        },
        ctx.macrostepOptions,
      );
      return {
        value: true,
        commit: { main: { result, from: snapshot }, at: ctx.now() },
        options: { timerFire: input.claim },
      };
    },
  });
}

function describe(error: unknown): { name: string; message: string } {
  return error instanceof Error
    ? { name: error.name, message: error.message }
    : { name: 'Error', message: String(error) };
}
