/**
 * The PostgreSQL commit: the common commit as one statement of data-modifying CTEs, and a
 * commit of more than one statement in a transaction (instance writes, business key, child
 * rows, timer fire claim, idempotency key, the caller's hook).
 */
import type pg from 'pg';
import type { ChildRowChange } from '../interpreter/child-rows.js';
import type { InstanceWrite } from '../interpreter/plan-commit.js';
import { childChangeSql } from './child-row-sql.js';
import { IdempotencyClaimLostError } from './idempotency.js';
import type { PostgresIdempotencyKeys } from './idempotency-sql.js';
import {
  EVENT_CHUNK,
  commitStatement,
  eventValues,
  insertEventsSql,
  numbered,
  runNamed,
  type CommitShape,
} from './postgres-statements.js';
import { timerClaimValues, traceContextColumn } from './rows.js';
import {
  BusinessKeyTakenError,
  InstanceLockedError,
  SequenceConflictError,
  TimerFireConflictError,
  currentStateChanges,
  finishes,
  flattenCommit,
  type CommitOutcome,
  type CommitRequest,
  type TimerFireClaim,
} from './store.js';

// PostgreSQL's unique_violation SQLSTATE.
const UNIQUE_VIOLATION = '23505';

const UNWATCHED: CommitOutcome = Object.freeze({ unwatched: true });

/**
 * The common commit (one instance, no delegation rows or hooks) as one statement: the
 * instance write, then, each only when it wrote a row (the fence), the history rows, the
 * current-state diff, the lock release and, when it finishes the instance, its timer rows, as
 * data-modifying CTEs. One statement is atomic on
 * its own: one round trip instead of BEGIN, three to five statements and COMMIT. Resolves with
 * `unwatched` when no process holds the instance's watch lease (its notice is not sent).
 */
export async function commitOneStatement(
  pool: pg.Pool,
  request: CommitRequest,
): Promise<CommitOutcome | undefined> {
  const { snapshot, history, expectedSequence } = request;
  const { entered, left } = currentStateChanges(request);
  const values: unknown[] = [
    snapshot.id,
    snapshot.machineId,
    JSON.stringify(snapshot.value),
    JSON.stringify(snapshot.context),
    snapshot.status,
    snapshot.sequence,
    request.now,
  ];
  if (expectedSequence === null)
    values.push(snapshot.parent?.machineId ?? null, snapshot.parent?.id ?? null);
  else values.push(expectedSequence);
  values.push(snapshot.version ?? null);
  const shape: CommitShape = {
    create: expectedSequence === null,
    events: history.length,
    entered: entered.length > 0,
    left: left.length > 0,
    release: request.releaseLockOwner !== undefined,
    lockFree: request.lockFree === true && expectedSequence !== null,
    finish: finishes(request),
  };
  if (shape.entered) values.push(entered);
  if (shape.left) values.push(left);
  if (shape.release) values.push(request.releaseLockOwner);
  if (history.length > 0) values.push(...eventValues(history));
  const { name, text } = commitStatement(shape);
  const result = await pool.query<{ written: number; watched: boolean | null; locked?: boolean }>({
    name,
    text,
    values,
  });
  const row = result.rows[0];
  if (row?.written !== 1) {
    if (row?.locked === true) throw new InstanceLockedError(snapshot.id);
    throw new SequenceConflictError(snapshot.id, expectedSequence);
  }
  return row.watched === true ? undefined : UNWATCHED;
}

/** One instance's writes inside the commit's transaction: the fenced row, history, states. */
export async function writeInstance(
  client: pg.PoolClient,
  request: InstanceWrite,
  releaseLockOwner: string | undefined,
  traceContext: string | null,
): Promise<void> {
  const { snapshot, history, expectedSequence } = request;
  const instance = [
    snapshot.id,
    snapshot.machineId,
    JSON.stringify(snapshot.value),
    JSON.stringify(snapshot.context),
    snapshot.status,
    snapshot.sequence,
    request.now,
  ];
  const written =
    expectedSequence === null
      ? await runNamed(client, 'insertInstance', [
          ...instance,
          snapshot.parent?.machineId ?? null,
          snapshot.parent?.id ?? null,
          snapshot.version ?? null,
        ])
      : await runNamed(client, 'updateInstance', [
          ...instance,
          expectedSequence,
          snapshot.version ?? null,
        ]);
  if (written.rowCount !== 1) throw new SequenceConflictError(snapshot.id, expectedSequence);
  for (let start = 0; start < history.length; start += EVENT_CHUNK) {
    const chunk = history.slice(start, start + EVENT_CHUNK);
    await client.query({
      name: `mr_insertEvents_${chunk.length}`,
      text: insertEventsSql(chunk.length),
      values: eventValues(chunk),
    });
  }
  const { entered, left } = currentStateChanges(request);
  if (left.length > 0) await runNamed(client, 'deleteStates', [snapshot.id, left]);
  if (entered.length > 0) {
    await runNamed(client, 'insertStates', [
      snapshot.id,
      snapshot.machineId,
      entered,
      request.now,
      traceContext,
    ]);
  }
  if (request.scenario !== undefined) {
    const { scenario } = request;
    await runNamed(client, 'setScenario', [
      snapshot.id,
      scenario?.slug ?? null,
      scenario === null ? null : JSON.stringify(scenario.params),
    ]);
  }
  if (releaseLockOwner !== undefined) {
    await runNamed(client, 'releaseLock', [snapshot.id, releaseLockOwner]);
  }
}

/**
 * A commit of more than one statement (children, hooks, scenario, timer fire, keys, `also`), in
 * one transaction on a connection of its own.
 */
export async function commitInTransaction(
  pool: pg.Pool,
  request: CommitRequest,
  idempotencyKeys: PostgresIdempotencyKeys,
): Promise<CommitOutcome | undefined> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    // Before any write: a lock taken while a lock-free step was computed wins.
    if (request.lockFree === true) {
      const live = await runNamed(client, 'liveLock', [request.snapshot.id]);
      if (live.rowCount !== 0) throw new InstanceLockedError(request.snapshot.id);
    }
    // The instance writes of the request and its `also` requests, then their child rows.
    const requests = flattenCommit(request);
    const traceContext = traceContextColumn(request);
    for (const part of requests) {
      const release = part === request ? request.releaseLockOwner : undefined;
      await writeInstance(client, part, release, traceContext);
    }
    if (request.businessKey !== undefined)
      await bindBusinessKey(request, request.businessKey, client);
    for (const part of requests) if (part.children) await writeChildren(part.children, client);
    if (request.timerFire !== undefined) await claimTimerFire(request.timerFire, client);
    // After the claim: a fire that finishes its instance leaves no row either.
    for (const part of requests)
      if (finishes(part)) await runNamed(client, 'deleteTimerRows', [part.snapshot.id]);
    if (
      request.idempotency !== undefined &&
      !(await idempotencyKeys.completeOn(client, request.idempotency))
    )
      throw new IdempotencyClaimLostError(request.idempotency);
    await request.inTransaction?.({ kind: 'postgres', client });
    await client.query('COMMIT');
    return undefined;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      broken = rollbackError as Error;
    }
    throw error;
  } finally {
    // A connection whose ROLLBACK failed is in an unknown state: destroy it, not reuse it.
    client.release(broken);
  }
}

/** Writes child-row changes on `client` (inside the caller's transaction). */
export async function writeChildren(
  changes: readonly ChildRowChange[],
  client: pg.Pool | pg.PoolClient,
): Promise<void> {
  for (const change of changes) {
    const { sql, params } = childChangeSql(change);
    await client.query(numbered(sql), params);
  }
}

// A concurrent commit holding the key makes this one wait for it, then fail (23505).
async function bindBusinessKey(
  request: CommitRequest,
  key: string,
  client: pg.PoolClient,
): Promise<void> {
  try {
    await runNamed(client, 'bindBusinessKey', [key, request.snapshot.id]);
  } catch (error) {
    if ((error as { code?: unknown }).code === UNIQUE_VIOLATION)
      throw new BusinessKeyTakenError(request.snapshot.machineId, key);
    throw error;
  }
}

async function claimTimerFire(claim: TimerFireClaim, client: pg.PoolClient): Promise<void> {
  const result = await runNamed(client, 'claimTimerFire', timerClaimValues(claim));
  if (result.rowCount !== 1) throw new TimerFireConflictError(claim);
}
