/** The SQLite commit's instance writes (inside the store's write transaction). */
import type { InstanceWrite } from '../interpreter/plan-commit.js';
import { EVENT_CHUNK, eventValues, type SqliteStatements } from './sqlite-statements.js';
import { SequenceConflictError, currentStateChanges } from './store.js';

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
