/**
 * Mapping between domain objects and the column values of the SQL stores. Both dialects store
 * the same columns; only the driver types differ (SQLite returns JSON as text and times as ISO
 * text, pg returns parsed JSON and `Date`s), so readers accept either.
 */
import type { Context } from '../definition/types.js';
import type { HistoryRecord, HistorySource, MachineSnapshot } from '../interpreter/types.js';
import type { CurrentStateRow, InstanceInState, LockRow } from './store.js';

/** A JSON column as a driver returns it: text (SQLite) or parsed (pg). */
type JsonColumn = string | null | object;
/** A time column as a driver returns it: ISO text (SQLite) or `Date` (pg). */
type TimeColumn = string | Date;

export interface EventRow {
  id: string;
  sequence_number: number;
  created_at: TimeColumn;
  machine_id: string;
  root_event_id: string;
  source: string;
  type: string;
  payload: JsonColumn;
  machine_value: JsonColumn;
  context: JsonColumn;
  version: number;
  actor: string | null;
}

export interface InstanceRow {
  root_event_id: string;
  machine_id: string;
  machine_value: JsonColumn;
  context: JsonColumn;
  status: string;
  sequence_number: number;
}

export interface CurrentStateDbRow {
  root_event_id: string;
  machine_id: string;
  state_id: string;
  state_entered_at: TimeColumn;
  scenario_class: string | null;
  scenario_params: JsonColumn;
}

export interface LockDbRow {
  root_event_id: string;
  owner_id: string;
  acquired_at: TimeColumn;
  expires_at: TimeColumn;
  context: string | null;
}

/** JSON text of a value, `null` kept as SQL NULL. */
export function toJson(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}

function fromJson<T>(value: JsonColumn): T | null {
  if (value === null) return null;
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

function toIso(value: TimeColumn): string {
  return typeof value === 'string' ? value : value.toISOString();
}

export function snapshotFromRow(row: InstanceRow): MachineSnapshot {
  return {
    machineId: row.machine_id,
    id: row.root_event_id,
    value: fromJson<string[]>(row.machine_value) ?? [],
    context: fromJson<Context>(row.context) ?? {},
    status: row.status === 'done' ? 'done' : 'active',
    sequence: Number(row.sequence_number),
  };
}

export function historyFromRow(row: EventRow): HistoryRecord {
  return {
    id: row.id,
    sequence: Number(row.sequence_number),
    createdAt: toIso(row.created_at),
    machineId: row.machine_id,
    rootEventId: row.root_event_id,
    source: row.source as HistorySource,
    type: row.type,
    payload: fromJson<Record<string, unknown>>(row.payload),
    value: fromJson<string[]>(row.machine_value) ?? [],
    context: fromJson<Context>(row.context),
    version: Number(row.version),
    actor: row.actor,
  };
}

export function currentStateFromRow(row: CurrentStateDbRow): CurrentStateRow {
  return {
    rootEventId: row.root_event_id,
    machineId: row.machine_id,
    stateId: row.state_id,
    stateEnteredAt: toIso(row.state_entered_at),
    scenarioClass: row.scenario_class,
    scenarioParams: fromJson<Record<string, unknown>>(row.scenario_params),
  };
}

export function instanceInStateFromRow(
  row: Pick<CurrentStateDbRow, 'root_event_id' | 'machine_id' | 'state_id' | 'state_entered_at'>,
): InstanceInState {
  return {
    rootEventId: row.root_event_id,
    machineId: row.machine_id,
    stateId: row.state_id,
    stateEnteredAt: toIso(row.state_entered_at),
  };
}

export function lockFromRow(row: LockDbRow): LockRow {
  return {
    rootEventId: row.root_event_id,
    ownerId: row.owner_id,
    acquiredAt: toIso(row.acquired_at),
    expiresAt: toIso(row.expires_at),
    context: row.context,
  };
}
