/**
 * The SQLite commit, inside the store's write transaction: the lock-free check, each instance's
 * writes, business key, child rows, timer fire claim, idempotency key and the caller's hook.
 */
import type Database from 'better-sqlite3';
import type { ChildRowChange } from '../interpreter/child-rows.js';
import type { InstanceWrite } from '../interpreter/plan-commit.js';
import { childChangeSql } from './child-row-sql.js';
import { IdempotencyClaimLostError } from './idempotency.js';
import type { SqliteIdempotencyKeys } from './idempotency-sql.js';
import { timerClaimValues, traceContextColumn } from './rows.js';
import {
  EVENT_CHUNK,
  eventValues,
  isUniqueViolation,
  type SqliteStatements,
} from './sqlite-statements.js';
import {
  BusinessKeyTakenError,
  InstanceLockedError,
  SequenceConflictError,
  TimerFireConflictError,
  currentStateChanges,
  finishes,
  flattenCommit,
  type CommitRequest,
  type TimerFireClaim,
} from './store.js';

/** The instance writes of the request and its `also` requests, then their child-row changes. */
export function applyCommit(
  db: Database.Database,
  statements: SqliteStatements,
  idempotencyKeys: SqliteIdempotencyKeys,
  request: CommitRequest,
): void {
  const sql = statements.sql;
  // Before any write: a lock taken while a lock-free step was computed wins.
  if (
    request.lockFree === true &&
    sql.liveLock.get(request.snapshot.id, new Date().toISOString()) !== undefined
  )
    throw new InstanceLockedError(request.snapshot.id);
  const requests = flattenCommit(request);
  const traceContext = traceContextColumn(request);
  for (const part of requests)
    applyInstance(
      statements,
      part,
      part === request ? request.releaseLockOwner : undefined,
      traceContext,
    );
  if (request.businessKey !== undefined) bindBusinessKey(statements, request, request.businessKey);
  for (const part of requests) if (part.children) applyChildChanges(db, part.children);
  if (request.timerFire !== undefined) claimTimerFire(statements, request.timerFire);
  // After the claim: a fire that finishes its instance leaves no row either.
  for (const part of requests) {
    if (!finishes(part)) continue;
    sql.deleteTimerFires.run(part.snapshot.id);
    sql.deleteTimerFailures.run(part.snapshot.id);
  }
  if (request.idempotency !== undefined && !idempotencyKeys.completeSync(request.idempotency))
    throw new IdempotencyClaimLostError(request.idempotency);
  if (request.inTransaction !== undefined) {
    const pending = request.inTransaction({ kind: 'sqlite', database: db });
    // better-sqlite3 commits when the function returns: an awaited write would land outside.
    if (pending instanceof Promise)
      throw new Error('A SQLite transaction hook must be synchronous.');
  }
}

/** Writes child-row changes (inside the caller's transaction). */
export function applyChildChanges(db: Database.Database, changes: readonly ChildRowChange[]): void {
  for (const change of changes) {
    const { sql, params } = childChangeSql(change);
    db.prepare(sql).run(...params);
  }
}

// Inside the commit's savepoint: a refused key rolls back this commit only.
function bindBusinessKey(statements: SqliteStatements, request: CommitRequest, key: string): void {
  try {
    statements.sql.bindBusinessKey.run(key, request.snapshot.id);
  } catch (error) {
    if (isUniqueViolation(error)) throw new BusinessKeyTakenError(request.snapshot.machineId, key);
    throw error;
  }
}

function claimTimerFire(statements: SqliteStatements, claim: TimerFireClaim): void {
  const result = statements.sql.claimTimerFire.run(...timerClaimValues(claim));
  if (result.changes !== 1) throw new TimerFireConflictError(claim);
}

/** One instance's writes inside a commit's transaction: the fenced row, history, states. */
export function applyInstance(
  statements: SqliteStatements,
  request: InstanceWrite,
  releaseLockOwner: string | undefined,
  traceContext: string | null,
): void {
  const { snapshot, history, expectedSequence } = request;
  const sql = statements.sql;
  const now = request.now.toISOString();
  const value = JSON.stringify(snapshot.value);
  const context = JSON.stringify(snapshot.context);
  const result =
    expectedSequence === null
      ? sql.insertInstance.run(
          snapshot.id,
          snapshot.machineId,
          value,
          context,
          snapshot.status,
          snapshot.sequence,
          now,
          now,
          snapshot.parent?.machineId ?? null,
          snapshot.parent?.id ?? null,
          snapshot.version ?? null,
        )
      : sql.updateInstance.run(
          value,
          context,
          snapshot.status,
          snapshot.sequence,
          now,
          snapshot.version ?? null,
          snapshot.id,
          snapshot.machineId,
          expectedSequence,
        );
  if (result.changes !== 1) throw new SequenceConflictError(snapshot.id, expectedSequence);
  // Several rows per statement (one step and reset instead of one per row).
  for (let start = 0; start < history.length; start += EVENT_CHUNK) {
    const rows = Math.min(EVENT_CHUNK, history.length - start);
    statements.insertEvents(rows).run(eventValues(history, start, rows));
  }
  const { entered, left } = currentStateChanges(request);
  for (const stateId of left) sql.deleteState.run(snapshot.id, stateId);
  for (const stateId of entered)
    sql.insertState.run(snapshot.id, snapshot.machineId, stateId, now, traceContext);
  if (request.scenario !== undefined) {
    const { scenario } = request;
    sql.setScenario.run(
      scenario?.slug ?? null,
      scenario === null ? null : JSON.stringify(scenario.params),
      snapshot.id,
    );
  }
  if (releaseLockOwner !== undefined) sql.releaseLock.run(snapshot.id, releaseLockOwner);
}
