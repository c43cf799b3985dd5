/**
 * What the retention and archive tests set up and read in the store: documents finished long
 * ago, and per-instance row counts on either store (SQLite placeholders, PostgreSQL arrays).
 */
import type { MachineRuntime, Store } from '../../../../src/runtime/index.js';
import { SqliteStore } from '../../../../src/runtime/index.js';
import type { PostgresStore } from '../../../../src/postgres.js';
import { documentMachine } from './machines.js';

/** `sql` (ending in a column to match) counted for the instances `ids`. */
export async function countOf(store: Store, sql: string, ids: readonly string[]): Promise<number> {
  if (store instanceof SqliteStore) {
    const marks = ids.map(() => '?').join(', ');
    return (store.database.prepare(`${sql} IN (${marks})`).get(...ids) as { n: number }).n;
  }
  const result = await (store as PostgresStore).pool.query<{ n: string }>(
    `${sql} = ANY($1::text[])`,
    [ids],
  );
  return Number(result.rows[0]!.n);
}

/** Instances of `ids` whose history the retention sweep has taken (marked). */
export const markedOf = (store: Store, ids: readonly string[]) =>
  countOf(
    store,
    'SELECT count(*) AS n FROM machine_instances WHERE history_deleted_at IS NOT NULL AND root_event_id',
    ids,
  );

/** `count` documents drafted, edited and published (finished) at the runtime's clock: their ids. */
export async function finishedDocuments(runtime: MachineRuntime, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 0; index < count; index += 1) {
    const { snapshot } = await runtime.create(documentMachine);
    await runtime.send(documentMachine, snapshot.id, { type: 'EDIT' });
    await runtime.send(documentMachine, snapshot.id, { type: 'PUBLISH' });
    ids.push(snapshot.id);
  }
  return ids;
}
