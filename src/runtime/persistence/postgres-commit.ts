/**
 * The PostgreSQL commit's instance writes: the common commit as one statement of
 * data-modifying CTEs, and one instance's writes inside a transaction.
 */
import type pg from 'pg';
import type { InstanceWrite } from '../interpreter/plan-commit.js';
import {
  EVENT_CHUNK,
  commitStatement,
  eventValues,
  insertEventsSql,
  runNamed,
  type CommitShape,
} from './postgres-statements.js';
import {
  InstanceLockedError,
  SequenceConflictError,
  currentStateChanges,
  finishes,
  type CommitOutcome,
  type CommitRequest,
} from './store.js';

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
