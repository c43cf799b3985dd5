/**
 * The store's internal refusals: thrown by every backend, caught and turned into the named
 * errors of the specification by `MachineRuntime` and the timer sweep.
 */
import type { TimerFireClaim } from './store.js';

/**
 * A commit was fenced out: the instance moved past `expectedSequence` (or already exists on
 * create). Internal to persistence: `MachineRuntime` turns it into
 * `MachineAlreadyRunningException`.
 */
export class SequenceConflictError extends Error {
  readonly rootEventId: string;
  readonly expectedSequence: number | null;

  constructor(rootEventId: string, expectedSequence: number | null) {
    super(
      expectedSequence === null
        ? `Machine '${rootEventId}' already exists.`
        : `Machine '${rootEventId}' is no longer at sequence ${expectedSequence}: another writer committed first.`,
    );
    this.name = 'SequenceConflictError';
    this.rootEventId = rootEventId;
    this.expectedSequence = expectedSequence;
  }
}

/**
 * A lock-free commit (`CommitRequest.lockFree`) found a live lock on its instance: someone took
 * it while the step was computed; nothing was written. Internal to persistence:
 * `MachineRuntime` turns it into `MachineAlreadyRunningException` with the last committed state.
 */
export class InstanceLockedError extends Error {
  readonly rootEventId: string;

  constructor(rootEventId: string) {
    super(`Machine '${rootEventId}' is locked by another writer.`);
    this.name = 'InstanceLockedError';
    this.rootEventId = rootEventId;
  }
}

/**
 * The database stayed locked by another connection (SQLite `SQLITE_BUSY` / `SQLITE_LOCKED`)
 * past the busy timeout: nothing of the transaction was applied. Internal to persistence:
 * `MachineRuntime` turns it into `MachineAlreadyRunningException` (contention, not failure).
 */
export class StoreBusyError extends Error {
  constructor(cause: unknown) {
    super(
      `The database is locked by another connection: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
    this.name = 'StoreBusyError';
  }
}

/**
 * A timer fire's claim found its row changed: another process delivered the fire (or the stay
 * ended) first. Internal to persistence: the timer sweep counts it as already delivered.
 */
export class TimerFireConflictError extends Error {
  readonly rootEventId: string;
  readonly timerKey: string;

  constructor(claim: TimerFireClaim) {
    super(
      `Timer '${claim.next.timerKey}' of machine '${claim.next.rootEventId}' was already fired by another writer.`,
    );
    this.name = 'TimerFireConflictError';
    this.rootEventId = claim.next.rootEventId;
    this.timerKey = claim.next.timerKey;
  }
}

/**
 * A commit creating an instance bound to a business key (`CommitRequest.businessKey`) found the
 * key held by another instance of the machine (the unique index on `(machine_id,
 * business_key)`): nothing was written. Internal to persistence: a create-or-send sends to the
 * instance that holds the key instead.
 */
export class BusinessKeyTakenError extends Error {
  readonly machineId: string;
  readonly businessKey: string;

  constructor(machineId: string, businessKey: string) {
    super(`Business key '${businessKey}' of machine '${machineId}' is held by another instance.`);
    this.name = 'BusinessKeyTakenError';
    this.machineId = machineId;
    this.businessKey = businessKey;
  }
}
