/**
 * A store in process memory: for tests and machines that opt out of persistence. It keeps the
 * SQL stores' semantics (atomic commits, fencing, lock expiry) so one suite covers all three.
 * Values are cloned on the way in and out, as a database would, so callers cannot mutate what
 * is stored.
 */
import type { TraceCarrier } from '../telemetry/trace-carrier.js';
import type { HistoryRecord, MachineSnapshot } from '../interpreter/types.js';
import type { ChildRow, ChildRowChange } from '../interpreter/child-rows.js';
import type { InstanceWrite } from '../interpreter/plan-commit.js';
import { MemoryFlowControl } from './flow-control.js';
import { IdempotencyClaimLostError, MemoryIdempotencyKeys } from './idempotency.js';
import { memoryHistoryRetention } from './history-retention.js';
import { MemoryInstanceQueries } from './memory-instance-queries.js';
import { memoryScheduleCandidates } from './schedule-candidates.js';
import { MemoryTimerFailures } from './timer-failures.js';
import { applyChildChange, matchesChildQuery, type ChildQuery } from './child-rows.js';
import {
  BusinessKeyTakenError,
  SequenceConflictError,
  TimerFireConflictError,
  assertCommitRequest,
  currentStateChanges,
  finishes,
  flattenCommit,
  type CommitRequest,
  type CurrentStateRow,
  type FindInStateOptions,
  type HistoryQuery,
  type InstanceInState,
  type LockedLoad,
  type LockRequest,
  type LockRow,
  type ReadLoad,
  type Store,
  type TimerCandidate,
  type TimerCandidateQuery,
  type TimerFireClaim,
  type TimerFireRow,
} from './store.js';

function fireKey(row: { rootEventId: string; timerKey: string }): string {
  return `${row.rootEventId}\u0000${row.timerKey}`;
}

interface InstanceEntry {
  snapshot: MachineSnapshot;
  history: HistoryRecord[];
  /** Current states by state id. */
  states: Map<string, CurrentStateRow>;
}

/** `Store` in process memory. Nothing survives the process. */
export class MemoryStore implements Store {
  readonly kind = 'memory' as const;
  readonly #instances = new Map<string, InstanceEntry>();
  readonly #eventIds = new Set<string>();
  readonly #locks = new Map<string, LockRow>();
  /** `machine_children` rows, oldest first. */
  readonly #children: ChildRow[] = [];
  /** `machine_timer_fires` rows by `fireKey`. */
  readonly #timerFires = new Map<string, TimerFireRow>();
  readonly #now: () => number;
  readonly idempotencyKeys: MemoryIdempotencyKeys;
  readonly flowControl: MemoryFlowControl;
  readonly queries = new MemoryInstanceQueries(this.#instances);
  readonly historyRetention = memoryHistoryRetention;
  readonly scheduleCandidates = memoryScheduleCandidates(this.#instances, (rootEventId, timerKey) =>
    this.#timerFires.get(fireKey({ rootEventId, timerKey })),
  );
  readonly timerFailures = new MemoryTimerFailures();

  /** @param options.now clock for lock expiry (tests); default `Date.now`. */
  constructor(options: { now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
    this.idempotencyKeys = new MemoryIdempotencyKeys(this.#now);
    this.flowControl = new MemoryFlowControl(this.#now);
  }

  async migrate(): Promise<void> {}

  async load(rootEventId: string): Promise<MachineSnapshot | null> {
    const entry = this.#instances.get(rootEventId);
    return entry ? structuredClone(entry.snapshot) : null;
  }

  async commit(request: CommitRequest): Promise<void> {
    assertCommitRequest(request);
    // No transaction to write into: dropping the hook's writes silently would lose them.
    if (request.inTransaction !== undefined)
      throw new Error('The memory store cannot run transaction hooks.');
    const requests = flattenCommit(request);
    // Check every instance and row before changing anything: a commit applies whole or not at all.
    const ids = new Set<string>();
    for (const part of requests) this.#check(part, ids);
    this.#checkTimerFire(request.timerFire);
    const key = request.businessKey;
    if (key !== undefined && this.queries.holderOf(request.snapshot.machineId, key) !== null)
      throw new BusinessKeyTakenError(request.snapshot.machineId, key);
    if (request.idempotency !== undefined && !this.idempotencyKeys.holds(request.idempotency))
      throw new IdempotencyClaimLostError(request.idempotency);
    for (const part of requests)
      this.#apply(
        part,
        part === request ? request.releaseLockOwner : undefined,
        request.traceContext,
      );
    if (key !== undefined) this.queries.keep(request.snapshot.id, key);
    if (request.idempotency !== undefined) this.idempotencyKeys.completeSync(request.idempotency);
    if (request.timerFire !== undefined)
      this.#timerFires.set(fireKey(request.timerFire.next), { ...request.timerFire.next });
    // A finished instance fires no timer again: its fire and failure rows go with its finish.
    for (const part of requests) {
      if (!finishes(part)) continue;
      for (const [key, row] of this.#timerFires)
        if (row.rootEventId === part.snapshot.id) this.#timerFires.delete(key);
      this.timerFailures.forget(part.snapshot.id);
    }
    for (const part of requests)
      for (const change of part.children ?? [])
        applyChildChange(this.#children, structuredClone(change));
  }

  /** Fencing and duplicate ids of one instance write. */
  #check(request: InstanceWrite, ids: Set<string>): void {
    const { snapshot, history, expectedSequence } = request;
    const existing = this.#instances.get(snapshot.id);
    const fenced =
      expectedSequence === null
        ? existing !== undefined
        : existing === undefined ||
          existing.snapshot.sequence !== expectedSequence ||
          existing.snapshot.machineId !== snapshot.machineId;
    if (fenced) throw new SequenceConflictError(snapshot.id, expectedSequence);
    for (const record of history) {
      if (this.#eventIds.has(record.id) || ids.has(record.id)) {
        throw new Error(`Duplicate history record id ${record.id}.`);
      }
      ids.add(record.id);
    }
  }

  /** The claim's condition (see sqlite-store.ts `claimTimerFire`). */
  #checkTimerFire(claim: TimerFireClaim | undefined): void {
    if (claim === undefined) return;
    const row = this.#timerFires.get(fireKey(claim.next));
    const sameStay = row !== undefined && row.stateEnteredAt === claim.next.stateEnteredAt;
    const ok = sameStay
      ? claim.expected !== null &&
        row.fireCount === claim.expected.fireCount &&
        row.status === claim.expected.status
      : claim.expected === null;
    if (!ok) throw new TimerFireConflictError(claim);
  }

  async timerCandidates(query: TimerCandidateQuery): Promise<TimerCandidate[]> {
    const dueBy = query.dueBy.toISOString();
    const found: TimerCandidate[] = [];
    for (const entry of this.#instances.values()) {
      const state = entry.states.get(query.stateId);
      if (state === undefined || entry.snapshot.machineId !== query.machineId) continue;
      // A paused instance fires nothing (docs/operations.md).
      if (state.stateEnteredAt > dueBy || entry.snapshot.pausedAt !== undefined) continue;
      const after = query.after;
      if (
        after !== undefined &&
        (compare(state.stateEnteredAt, after.stateEnteredAt) ||
          compare(state.rootEventId, after.rootEventId)) <= 0
      )
        continue;
      const row = this.#timerFires.get(
        fireKey({ rootEventId: state.rootEventId, timerKey: query.timerKey }),
      );
      const fire = row !== undefined && row.stateEnteredAt === state.stateEnteredAt ? row : null;
      if (fire !== null && !(fire.status === 'active' && fire.lastFiredAt <= dueBy)) continue;
      found.push({
        rootEventId: state.rootEventId,
        stateEnteredAt: state.stateEnteredAt,
        fire: fire === null ? null : { ...fire },
      });
    }
    found.sort(
      (a, b) =>
        compare(a.stateEnteredAt, b.stateEnteredAt) || compare(a.rootEventId, b.rootEventId),
    );
    return found.slice(0, query.limit);
  }

  async timerFires(rootEventId: string): Promise<TimerFireRow[]> {
    return [...this.#timerFires.values()]
      .filter((row) => row.rootEventId === rootEventId)
      .sort((a, b) => compare(a.timerKey, b.timerKey))
      .map((row) => ({ ...row }));
  }

  #apply(
    request: InstanceWrite,
    releaseLockOwner: string | undefined,
    traceContext: TraceCarrier | undefined,
  ): void {
    const { snapshot, history } = request;
    const existing = this.#instances.get(snapshot.id);
    const entry: InstanceEntry = existing ?? { snapshot, history: [], states: new Map() };
    entry.snapshot = structuredClone(snapshot);
    for (const record of history) {
      entry.history.push(structuredClone(record));
      this.#eventIds.add(record.id);
    }
    const { entered, left } = currentStateChanges(request);
    for (const stateId of left) entry.states.delete(stateId);
    for (const stateId of entered) {
      entry.states.set(stateId, {
        rootEventId: snapshot.id,
        machineId: snapshot.machineId,
        stateId,
        stateEnteredAt: request.now.toISOString(),
        scenarioClass: null,
        scenarioParams: null,
        traceContext: traceContext ?? null,
      });
    }
    if (request.scenario !== undefined) {
      for (const row of entry.states.values()) {
        row.scenarioClass = request.scenario?.slug ?? null;
        row.scenarioParams =
          request.scenario === null ? null : structuredClone(request.scenario.params);
      }
    }
    this.#instances.set(snapshot.id, entry);
    if (
      releaseLockOwner !== undefined &&
      this.#locks.get(snapshot.id)?.ownerId === releaseLockOwner
    ) {
      this.#locks.delete(snapshot.id);
    }
  }

  async findChildren(query: ChildQuery): Promise<ChildRow[]> {
    // Oldest first, as the SQL stores order them.
    const rows = this.#children.filter((row) => matchesChildQuery(row, query));
    rows.sort((a, b) => compare(a.createdAt, b.createdAt) || compare(a.id, b.id));
    return structuredClone(rows);
  }

  async updateChildren(changes: readonly ChildRowChange[]): Promise<void> {
    for (const change of changes) applyChildChange(this.#children, structuredClone(change));
  }

  async history(rootEventId: string, query: HistoryQuery = {}): Promise<HistoryRecord[]> {
    const records = this.#instances.get(rootEventId)?.history ?? [];
    const after = query.afterSequence ?? 0;
    const selected = records.filter((record) => record.sequence > after);
    return structuredClone(query.limit === undefined ? selected : selected.slice(0, query.limit));
  }

  async currentStates(rootEventId: string): Promise<CurrentStateRow[]> {
    const states = [...(this.#instances.get(rootEventId)?.states.values() ?? [])];
    return structuredClone(states.sort((a, b) => compare(a.stateId, b.stateId)));
  }

  async findInstancesInState(
    machineId: string,
    stateId: string,
    options: FindInStateOptions,
  ): Promise<InstanceInState[]> {
    const before = options.enteredBefore?.toISOString();
    const found: InstanceInState[] = [];
    for (const entry of this.#instances.values()) {
      const row = entry.states.get(stateId);
      if (!row || row.machineId !== machineId) continue;
      if (before !== undefined && !(row.stateEnteredAt < before)) continue;
      found.push({
        rootEventId: row.rootEventId,
        machineId,
        stateId,
        stateEnteredAt: row.stateEnteredAt,
      });
    }
    found.sort(
      (a, b) =>
        compare(a.stateEnteredAt, b.stateEnteredAt) || compare(a.rootEventId, b.rootEventId),
    );
    return found.slice(0, options.limit);
  }

  async tryAcquireLock(request: LockRequest): Promise<boolean> {
    return this.#acquire(request);
  }

  #acquire(request: LockRequest): boolean {
    const now = this.#now();
    const held = this.#locks.get(request.rootEventId);
    if (held && !(Date.parse(held.expiresAt) < now)) return false;
    this.#locks.set(request.rootEventId, {
      rootEventId: request.rootEventId,
      ownerId: request.ownerId,
      acquiredAt: new Date(now).toISOString(),
      expiresAt: new Date(now + request.ttlMs).toISOString(),
      context: request.context ?? null,
    });
    return true;
  }

  async lockAndLoad(request: LockRequest): Promise<LockedLoad> {
    // No await between the read and the lock: nothing commits in between.
    const entry = this.#instances.get(request.rootEventId);
    if (entry === undefined) return { acquired: false, snapshot: null };
    const snapshot = structuredClone(entry.snapshot);
    return { acquired: this.#acquire(request), snapshot };
  }

  async releaseLock(rootEventId: string, ownerId: string): Promise<boolean> {
    if (this.#locks.get(rootEventId)?.ownerId !== ownerId) return false;
    return this.#locks.delete(rootEventId);
  }

  async readLock(rootEventId: string): Promise<LockRow | null> {
    const lock = this.#locks.get(rootEventId);
    return lock ? { ...lock } : null;
  }

  async loadForRead(rootEventId: string): Promise<ReadLoad | null> {
    const entry = this.#instances.get(rootEventId);
    if (!entry) return null;
    const lock = this.#locks.get(rootEventId);
    return {
      snapshot: structuredClone(entry.snapshot),
      lockExpiresAt: lock ? Date.parse(lock.expiresAt) : null,
    };
  }

  async sweepExpiredLocks(): Promise<number> {
    const now = this.#now();
    let swept = 0;
    for (const [id, lock] of this.#locks) {
      if (Date.parse(lock.expiresAt) < now) {
        this.#locks.delete(id);
        swept += 1;
      }
    }
    return swept;
  }

  async close(): Promise<void> {}
}

// Code-unit order, as SQL's binary collation sorts text.
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
