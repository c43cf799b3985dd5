/**
 * SQL of child-row changes and queries (`machine_children`), shared by both SQL stores: `?`
 * placeholders, which the PostgreSQL store numbers.
 */
import type { ChildRowChange } from '../interpreter/child-rows.js';
import type { ChildQuery } from './child-rows.js';

/**
 * SQL of one child-row change (`?` placeholders; PostgreSQL numbers them), for both dialects.
 * Status lists are spelled out as literals: they come from the fixed ChildStatus set.
 */
export function childChangeSql(change: ChildRowChange): { sql: string; params: unknown[] } {
  if (change.kind === 'insert') {
    const row = change.row;
    return {
      sql: `INSERT INTO machine_children (id, parent_root_event_id, parent_state_id, parent_machine_id,
        child_machine_id, child_root_event_id, status, created_at, completed_at, parent_scenario)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
      params: [
        row.id,
        row.parentRootEventId,
        row.parentStateId,
        row.parentMachineId,
        row.childMachineId,
        row.childRootEventId,
        row.status,
        row.createdAt,
        row.completedAt,
        row.parentScenario === undefined ? null : JSON.stringify(row.parentScenario),
      ],
    };
  }
  const terminal = (status: string) => status !== 'pending' && status !== 'running';
  if (change.kind === 'moveState') {
    return {
      sql: `UPDATE machine_children SET parent_state_id = ?
        WHERE id = ? AND parent_state_id = ? AND status IN ('pending', 'running')`,
      params: [change.to, change.childId, change.from],
    };
  }
  if (change.kind === 'setStatus') {
    const from = change.from.map((status) => `'${status.replace(/'/g, '')}'`).join(', ');
    return {
      sql: `UPDATE machine_children SET status = ?, completed_at = ? WHERE id = ? AND status IN (${from})`,
      params: [change.status, terminal(change.status) ? change.at : null, change.childId],
    };
  }
  return {
    sql: `UPDATE machine_children SET status = 'cancelled', completed_at = ?
      WHERE parent_root_event_id = ? AND parent_state_id = ? AND status IN ('pending', 'running')`,
    params: [change.at, change.parentRootEventId, change.parentStateId],
  };
}

/** SQL of a `findChildren` query (`?` placeholders), oldest row first. */
export function childQuerySql(query: ChildQuery): { sql: string; params: unknown[] } {
  const where: string[] = [];
  const params: unknown[] = [];
  const columns: [keyof ChildQuery, string][] = [
    ['id', 'id'],
    ['parentRootEventId', 'parent_root_event_id'],
    ['parentStateId', 'parent_state_id'],
    ['childMachineId', 'child_machine_id'],
    ['childRootEventId', 'child_root_event_id'],
  ];
  for (const [key, column] of columns) {
    const value = query[key];
    if (value === undefined) continue;
    where.push(`${column} = ?`);
    params.push(value);
  }
  if (query.statuses !== undefined) {
    where.push(
      query.statuses.length === 0
        ? 'FALSE'
        : `status IN (${query.statuses.map((status) => `'${status.replace(/'/g, '')}'`).join(', ')})`,
    );
  }
  return {
    sql: `SELECT * FROM machine_children${where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at, id`,
    params,
  };
}
