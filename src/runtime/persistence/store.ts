/**
 * The storage contract every backend (memory, SQLite, PostgreSQL) fulfils, and the plain rows
 * it reads and writes. `MachineRuntime` is the only writer; it owns the ordering rules
 * (lock, load, compute, commit) and the store only guarantees atomicity and fencing.
 */
import type { InstanceWrite } from '../interpreter/plan-commit.js';
import type { TraceCarrier } from '../telemetry/trace-carrier.js';
import type { TimerFireStatus } from '../interpreter/due-timers.js';
import type { ChildStore } from './child-rows.js';
import type { HistoryRecord, MachineSnapshot } from '../interpreter/types.js';
import type { TransactionHook } from './transaction.js';
import type { HistoryRetentionStore } from './history-retention.js';
import type { InstanceQueries } from './instance-queries.js';
import type { ScheduleCandidates } from './schedule-candidates.js';
import type { FlowControlStore } from './flow-control.js';
import type { IdempotencyCompletion, IdempotencyKeyStore } from './idempotency.js';
import type { TimerFailureStore } from './timer-failures.js';

export {
  BusinessKeyTakenError,
  InstanceLockedError,
  SequenceConflictError,
  StoreBusyError,
  TimerFireConflictError,
} from './store-errors.js';

/** Which backend a store is. */
export type StoreKind = 'memory' | 'sqlite' | 'postgres';

/**
 * One commit to apply atomically: the instance writes planned by the interpreter's
 * `planCommit` (history rows, snapshot, `machine_current_states` diff, child rows, other
 * instances of the same step), plus what only the transaction knows. All of it commits
 * together or not at all. Each instance write is fenced on `expectedSequence`: a commit fails
 * with `SequenceConflictError` when the stored instance has moved on (or, on create, already
 * exists), which keeps history gap-free even if a lock expired while its holder was computing.
 */
export interface CommitRequest extends InstanceWrite {
  /**
   * Owner whose lock on the (top-level) instance is deleted in the same transaction: `send`
   * releases its lock with the commit, saving a write transaction per event. A failed commit
   * rolls the release back with everything else.
   */
  releaseLockOwner?: string;
  /**
   * A lock-free send's commit (stores with `lockFreeSends`; docs/persistence.md "Locks"): no
   * lock row was taken, so the commit checks, in its transaction, that nobody holds a live lock
   * on the (top-level) instance, and fails with `InstanceLockedError` when someone does (a
   * lock taken while the step was computed). The sequence fence applies as on every commit.
   */
  lockFree?: boolean;
  /**
   * Extra writes in the same transaction, after the store's own (the job queue's outbox: jobs
   * of this step committed with it). The memory store has no transaction to share and rejects it.
   */
  inTransaction?: TransactionHook;
  /**
   * A timer fire this step delivers: its `machine_timer_fires` row is claimed in the same
   * transaction, so the event and the fire's record commit together or not at all. The commit
   * fails with `TimerFireConflictError` when the row is no longer what the sweep read (another
   * process delivered this fire first).
   */
  timerFire?: TimerFireClaim;
  /**
   * The Idempotency-Key record this step answers: set `done` with its response in the same
   * transaction, so the event and the response a retry replays commit together or not at all.
   * Fails with `IdempotencyClaimLostError` when the request no longer holds the key.
   */
  idempotency?: IdempotencyCompletion;
  /**
   * The W3C trace context of the step (`undefined` without a recording span), stored on the
   * `machine_current_states` rows the commit enters, so a timer fire of those states later links
   * to the trace that armed it.
   */
  traceContext?: TraceCarrier;
  /**
   * Create-or-send (docs/http.md "Create-or-send"): the business key the instance this commit
   * creates (`expectedSequence: null`) is bound to, written in the same transaction. Unique per
   * machine: the commit fails with `BusinessKeyTakenError`, writing nothing, when another
   * instance of the machine holds the key.
   */
  businessKey?: string;
}

export type { TimerFireStatus };

/**
 * A row of `machine_timer_fires`: the fires of one timer during one stay in its state
 * (`stateEnteredAt` names the stay; a row of an earlier stay counts as no row).
 */
export interface TimerFireRow {
  rootEventId: string;
  timerKey: string;
  /** ISO-8601 UTC entry time of the stay the counts belong to. */
  stateEnteredAt: string | null;
  /** ISO-8601 UTC: the period boundary of the last fire (recurring) or the due time (one-shot). */
  lastFiredAt: string;
  fireCount: number;
  status: TimerFireStatus;
}

/** What a commit reports besides having been applied. */
export interface CommitOutcome {
  /**
   * No process watched the request's instance when it was written (PostgreSQL's watch lease,
   * docs/http.md "Live state"): its commit notice reaches nobody and is not sent.
   */
  unwatched?: boolean;
}

/** The conditional write of one timer fire (see {@link CommitRequest.timerFire}). */
export interface TimerFireClaim {
  /** The row after the fire. */
  next: TimerFireRow;
  /**
   * The row the fire was computed from: `null` when the stay had no fire yet (no row, or a row
   * of an earlier stay). Any other row (same stay) fails the claim.
   */
  expected: { fireCount: number; status: TimerFireStatus } | null;
}

/** Options of `timerCandidates`. */
export interface TimerCandidateQuery {
  machineId: string;
  stateId: string;
  timerKey: string;
  /** Instances whose stay began at or before this time (now minus the timer's period). */
  dueBy: Date;
  /** Keyset cursor: only instances after this (entry time, id), in that order. */
  after?: { stateEnteredAt: string; rootEventId: string };
  limit: number;
}

/**
 * An instance in a timed state that may have a fire due: no fire yet in this stay, or an active
 * recurring timer whose last period boundary is at or before `dueBy`.
 */
export interface TimerCandidate {
  rootEventId: string;
  /** ISO-8601 UTC. */
  stateEnteredAt: string;
  /** The timer's row, `null` when none or of an earlier stay. */
  fire: TimerFireRow | null;
}

/** A row of `machine_current_states`. */
export interface CurrentStateRow {
  rootEventId: string;
  machineId: string;
  stateId: string;
  /** ISO-8601 UTC. Unchanged while the state stays active (self-loops keep it). */
  stateEnteredAt: string;
  scenarioClass: string | null;
  scenarioParams: Record<string, unknown> | null;
  /** The trace context of the step that entered the state (`null` when none was recorded). */
  traceContext: TraceCarrier | null;
}

/** Options of `findInstancesInState`. */
export interface FindInStateOptions {
  /** Maximum number of instances returned. */
  limit: number;
  /** Only instances that entered the state strictly before this time. */
  enteredBefore?: Date;
}

/** An instance found by `findInstancesInState`, oldest entry first. */
export interface InstanceInState {
  rootEventId: string;
  machineId: string;
  stateId: string;
  stateEnteredAt: string;
}

/** Options of `history`. */
export interface HistoryQuery {
  /** Only records with a greater sequence number. */
  afterSequence?: number;
  /** At most this many records. */
  limit?: number;
}

/** Arguments of one lock attempt. */
export interface LockRequest {
  rootEventId: string;
  /** ULID naming the holder; release only deletes a row that still carries it. */
  ownerId: string;
  /**
   * Lifetime: a row older than this may be taken over (its holder is presumed hung). A row
   * whose holder process is known dead is taken over at once (docs/persistence.md "Dead
   * holders"); the store records this process as the holder.
   */
  ttlMs: number;
  /** Free text recorded for diagnostics (`send`, a job name, ...). */
  context?: string | null;
}

/** Outcome of `Store.lockAndLoad`. */
export interface LockedLoad {
  /** True when the caller now holds the lock. */
  acquired: boolean;
  /** The last committed snapshot, `null` when the instance does not exist. */
  snapshot: MachineSnapshot | null;
}

/** What a read finds in one statement (`Store.loadForRead`). */
export interface ReadLoad {
  /** The last committed snapshot. */
  snapshot: MachineSnapshot;
  /**
   * When the instance's lock row expires (epoch ms), expired or not; `null` without one. The
   * row of a holder known dead reads as expired (its acquisition time).
   */
  lockExpiresAt: number | null;
}

/** A row of `machine_locks`. */
export interface LockRow {
  rootEventId: string;
  ownerId: string;
  /** ISO-8601 UTC. */
  acquiredAt: string;
  /** ISO-8601 UTC. */
  expiresAt: string;
  context: string | null;
}

/**
 * Persistence of machine instances. All methods are async so one suite covers every backend;
 * implementations must make `commit` atomic and `tryAcquireLock` a single atomic statement.
 */
export interface Store extends ChildStore {
  readonly kind: StoreKind;
  /** Brings the schema to the latest version (idempotent; safe to run concurrently). */
  migrate(): Promise<void>;
  /** The last committed snapshot of an instance, or `null` when it does not exist. */
  load(rootEventId: string): Promise<MachineSnapshot | null>;
  /**
   * Applies one step atomically. Throws `SequenceConflictError` when fenced out. May resolve
   * with a {@link CommitOutcome} (PostgreSQL's one-statement commit does).
   */
  commit(request: CommitRequest): Promise<CommitOutcome | void>;
  /** History records of an instance in sequence order. */
  history(rootEventId: string, query?: HistoryQuery): Promise<HistoryRecord[]>;
  /** `machine_current_states` rows of an instance, ordered by state id. */
  currentStates(rootEventId: string): Promise<CurrentStateRow[]>;
  /** Instances of `machineId` whose active states include `stateId`, oldest entry first. */
  findInstancesInState(
    machineId: string,
    stateId: string,
    options: FindInStateOptions,
  ): Promise<InstanceInState[]>;
  /**
   * Instances that may have a fire of one timer due, oldest entry first (the sweep's query: the
   * `(machine, state, entered time)` index bounds it to instances past one period).
   */
  timerCandidates(query: TimerCandidateQuery): Promise<TimerCandidate[]>;
  /** `machine_timer_fires` rows of an instance, by timer key. */
  timerFires(rootEventId: string): Promise<TimerFireRow[]>;
  /**
   * Takes the lock when it is free, expired or held by a process known dead; `false` when
   * someone else holds it. Never waits.
   */
  tryAcquireLock(request: LockRequest): Promise<boolean>;
  /**
   * A send's first step, in one short write transaction (one statement on PostgreSQL): reads the
   * instance and, when it exists, takes its lock as `tryAcquireLock` does. `snapshot` is the
   * last committed state either way (the one a refusal answers with); no lock is taken for an
   * unknown id.
   */
  lockAndLoad(request: LockRequest): Promise<LockedLoad>;
  /** Deletes the lock when `ownerId` still holds it; `false` when it was lost or never held. */
  releaseLock(rootEventId: string, ownerId: string): Promise<boolean>;
  /** The lock row of an instance, expired or not. */
  readLock(rootEventId: string): Promise<LockRow | null>;
  /**
   * `load` and the expiry of the instance's lock row in one statement (reads: the lock is
   * looked at, never taken or waited for); `null` when the instance does not exist. One
   * statement is one read transaction on SQLite and one round trip on PostgreSQL, where
   * `load` then `readLock` took two of each.
   */
  loadForRead(rootEventId: string): Promise<ReadLoad | null>;
  /** Deletes every expired lock and every lock of a holder known dead; returns how many. */
  sweepExpiredLocks(): Promise<number>;
  /** `machine_idempotency_keys`: Idempotency-Key records of command endpoints. */
  readonly idempotencyKeys: IdempotencyKeyStore;
  /** Flow-control counters of event routes (docs/http.md "Flow control"). */
  readonly flowControl: FlowControlStore;
  /** `machine_timer_failures`: failed attempts at timer fires whose behavior threw. */
  readonly timerFailures: TimerFailureStore;
  /** The operator's reads: instances by state, time or key, history pages (docs/operations.md). */
  readonly queries: InstanceQueries;
  /** The timer sweep's candidate queries of scheduled (cron) events. */
  readonly scheduleCandidates: ScheduleCandidates;
  /** Deletes the history of instances finished long ago (`MACHINE_HISTORY_RETENTION_DAYS`). */
  readonly historyRetention: HistoryRetentionStore;
  /** Releases connections / file handles. */
  close(): Promise<void>;
  /**
   * True when `commit` honours `CommitRequest.lockFree` and `loadForRead` costs no more than
   * `lockAndLoad`: `send` may then skip the lock row for quick transitions (docs/persistence.md
   * "Lock-free sends"). SQLite: a lock transaction costs about as much as a commit there;
   * PostgreSQL: the read replaces `lockAndLoad`'s round trip, and the lock row's insert and
   * delete are database work per event. The memory store does not.
   */
  readonly lockFreeSends?: boolean;
}

/** Checks the invariants of a commit request shared by every backend (cheap, no I/O). */
export function assertCommitRequest(request: InstanceWrite): void {
  for (const other of request.also ?? []) assertCommitRequest(other);
  const { snapshot, history, expectedSequence } = request;
  let expected = (expectedSequence ?? 0) + 1;
  for (const record of history) {
    if (record.rootEventId !== snapshot.id || record.sequence !== expected) {
      throw new Error(
        `History record ${record.id} (sequence ${record.sequence}, instance ${record.rootEventId}) ` +
          `does not continue instance ${snapshot.id} at sequence ${expected}.`,
      );
    }
    expected += 1;
  }
  if (snapshot.sequence !== expected - 1) {
    throw new Error(
      `Snapshot sequence ${snapshot.sequence} of ${snapshot.id} does not match its last history record (${expected - 1}).`,
    );
  }
}

/** States entered and left between two values, in value order (the current-state diff). */
export function diffStates(
  previous: readonly string[],
  next: readonly string[],
): { entered: string[]; left: string[] } {
  const before = new Set(previous);
  const after = new Set(next);
  return {
    entered: [...after].filter((state) => !before.has(state)),
    left: [...before].filter((state) => !after.has(state)),
  };
}

/**
 * The `machine_current_states` writes of one instance commit: states left (deleted) and states
 * (re)entered, whose entry time becomes the commit's `now`. A state exited and entered again in
 * the step (a self-transition) is in both values, but its history has an `enter` record: its
 * entry time restarts, and with it the deadlines of its timers. A targetless transition enters
 * nothing and keeps it.
 */
export function currentStateChanges(request: InstanceWrite): { entered: string[]; left: string[] } {
  const { snapshot } = request;
  const { entered, left } = diffStates(request.previousValue, snapshot.value);
  if (request.expectedSequence === null) return { entered, left };
  const prefix = `${snapshot.machineId}.state.`;
  for (const record of request.history) {
    if (!record.type.endsWith('.enter') || !record.type.startsWith(prefix)) continue;
    const stateId = `${snapshot.machineId}.${record.type.slice(prefix.length, -'.enter'.length)}`;
    if (snapshot.value.includes(stateId) && !entered.includes(stateId)) entered.push(stateId);
  }
  return { entered, left };
}

/** The request and its `also` writes, depth first: every instance write of one transaction. */
/**
 * The write finishes an existing instance: no timer of it fires again, so the commit deletes
 * its `machine_timer_fires` and `machine_timer_failures` rows (they would stay forever).
 */
export function finishes(write: InstanceWrite): boolean {
  return write.snapshot.status === 'done' && write.expectedSequence !== null;
}

export function flattenCommit(request: InstanceWrite): InstanceWrite[] {
  const all: InstanceWrite[] = [request];
  for (const other of request.also ?? []) all.push(...flattenCommit(other));
  return all;
}
