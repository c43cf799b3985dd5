/**
 * Mapping between domain objects and the column values of the SQL stores. Both dialects store
 * the same columns; only the driver types differ (SQLite returns JSON as text and times as ISO
 * text, pg returns parsed JSON and `Date`s), so readers accept either.
 */
import type { Context } from '../definition/types.js';
import type { ChildRow, ChildStatus } from '../interpreter/child-rows.js';
import type {
  CarriedScenario,
  HistoryRecord,
  HistorySource,
  MachineSnapshot,
} from '../interpreter/types.js';
import type { TraceCarrier } from '../telemetry/trace-carrier.js';
import type {
  CommitRequest,
  CurrentStateRow,
  InstanceInState,
  LockRow,
  ReadLoad,
  TimerCandidate,
  TimerFireClaim,
  TimerFireRow,
  TimerFireStatus,
} from './store.js';

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
  parent_machine_id?: string | null;
  parent_root_event_id?: string | null;
  /** The definition version that last wrote the instance (migration 11); NULL before. */
  definition_version?: string | null;
  paused_at?: TimeColumn | null;
}

export interface ChildDbRow {
  id: string;
  parent_root_event_id: string;
  parent_state_id: string;
  parent_machine_id: string;
  child_machine_id: string;
  child_root_event_id: string | null;
  status: string;
  created_at: TimeColumn;
  completed_at: TimeColumn | null;
  /** JSON: text on SQLite, parsed by the driver on PostgreSQL. */
  parent_scenario?: string | CarriedScenario | null;
}

export interface CurrentStateDbRow {
  root_event_id: string;
  machine_id: string;
  state_id: string;
  state_entered_at: TimeColumn;
  scenario_class: string | null;
  scenario_params: JsonColumn;
  trace_context: JsonColumn;
}

export interface TimerFireDbRow {
  root_event_id: string;
  timer_key: string;
  state_entered_at: TimeColumn | null;
  last_fired_at: TimeColumn;
  fire_count: number;
  status: TimerFireStatus;
}

/** A `timerCandidates` row: the current state and its timer row (`f_` columns) of one stay. */
export interface TimerCandidateDbRow {
  root_event_id: string;
  state_entered_at: TimeColumn;
  f_state_entered_at: TimeColumn | null;
  f_last_fired_at: TimeColumn | null;
  f_fire_count: number | null;
  f_status: TimerFireStatus | null;
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

/**
 * Appends a history record's twelve `machine_events` columns, in the order of both SQL stores'
 * multi-row INSERTs, to `values`.
 */
export function pushEventColumns(values: unknown[], record: HistoryRecord): void {
  values.push(
    record.id,
    record.sequence,
    record.createdAt,
    record.machineId,
    record.rootEventId,
    record.source,
    record.type,
    toJson(record.payload),
    JSON.stringify(record.value),
    toJson(record.context),
    record.version,
    record.actor,
  );
}

function fromJson<T>(value: JsonColumn): T | null {
  if (value === null) return null;
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

function toIso(value: TimeColumn): string {
  return typeof value === 'string' ? value : value.toISOString();
}

/** A row of `loadForRead`'s statement: the instance row and its lock's expiry (`null`: none). */
export interface ReadLoadRow extends InstanceRow {
  lock_expires_at: TimeColumn | null;
}

export function readLoadFromRow(row: ReadLoadRow): ReadLoad {
  const expires = row.lock_expires_at;
  return {
    snapshot: snapshotFromRow(row),
    lockExpiresAt:
      expires === null
        ? null
        : typeof expires === 'string'
          ? Date.parse(expires)
          : expires.getTime(),
  };
}

/**
 * `loadForRead`'s columns in the statement's order, as SQLite's raw mode returns them: an array
 * instead of an object with nine keys per read (better-sqlite3 looks each key up in V8's string
 * table for every row; about 1.5 us of a read's 9).
 */
export type ReadLoadValues = [
  rootEventId: string,
  machineId: string,
  machineValue: string | null,
  context: string | null,
  status: string,
  sequenceNumber: number,
  parentMachineId: string | null,
  parentRootEventId: string | null,
  lockExpiresAt: string | null,
  definitionVersion: string | null,
  pausedAt: string | null,
];

/**
 * {@link readLoadFromRow} of a raw-mode SQLite row (same fields, see {@link ReadLoadValues}). A
 * JavaScript literal of one fixed shape is cheap; the cost was the driver making the object.
 */
export function readLoadFromValues(values: ReadLoadValues): ReadLoad {
  return readLoadFromRow({
    root_event_id: values[0],
    machine_id: values[1],
    machine_value: values[2],
    context: values[3],
    status: values[4],
    sequence_number: values[5],
    parent_machine_id: values[6],
    parent_root_event_id: values[7],
    lock_expires_at: values[8],
    definition_version: values[9],
    paused_at: values[10],
  });
}

export function snapshotFromRow(row: InstanceRow): MachineSnapshot {
  const snapshot: MachineSnapshot = {
    machineId: row.machine_id,
    id: row.root_event_id,
    value: fromJson<string[]>(row.machine_value) ?? [],
    context: fromJson<Context>(row.context) ?? {},
    status: row.status === 'done' ? 'done' : 'active',
    sequence: Number(row.sequence_number),
  };
  if (row.parent_root_event_id && row.parent_machine_id)
    snapshot.parent = { machineId: row.parent_machine_id, id: row.parent_root_event_id };
  if (typeof row.definition_version === 'string') snapshot.version = row.definition_version;
  if (row.paused_at !== undefined && row.paused_at !== null)
    snapshot.pausedAt = toIso(row.paused_at);
  return snapshot;
}

export function childFromRow(row: ChildDbRow): ChildRow {
  return {
    id: row.id,
    parentRootEventId: row.parent_root_event_id,
    parentStateId: row.parent_state_id,
    parentMachineId: row.parent_machine_id,
    childMachineId: row.child_machine_id,
    childRootEventId: row.child_root_event_id,
    status: row.status as ChildStatus,
    createdAt: toIso(row.created_at),
    completedAt: row.completed_at === null ? null : toIso(row.completed_at),
    ...(row.parent_scenario === null || row.parent_scenario === undefined
      ? {}
      : {
          parentScenario:
            typeof row.parent_scenario === 'string'
              ? (JSON.parse(row.parent_scenario) as CarriedScenario)
              : row.parent_scenario,
        }),
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
    traceContext: fromJson<TraceCarrier>(row.trace_context ?? null),
  };
}

/** The `trace_context` column of the states a commit enters: JSON, or null without a trace. */
export function traceContextColumn(request: Pick<CommitRequest, 'traceContext'>): string | null {
  return request.traceContext === undefined ? null : JSON.stringify(request.traceContext);
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

export function timerFireFromRow(row: TimerFireDbRow): TimerFireRow {
  return {
    rootEventId: row.root_event_id,
    timerKey: row.timer_key,
    stateEnteredAt: row.state_entered_at === null ? null : toIso(row.state_entered_at),
    lastFiredAt: toIso(row.last_fired_at),
    fireCount: row.fire_count,
    status: row.status,
  };
}

/** A candidate row; its timer row counts only when it belongs to the same stay. */
export function timerCandidateFromRow(row: TimerCandidateDbRow, timerKey: string): TimerCandidate {
  const stateEnteredAt = toIso(row.state_entered_at);
  const sameStay =
    row.f_state_entered_at !== null && toIso(row.f_state_entered_at) === stateEnteredAt;
  return {
    rootEventId: row.root_event_id,
    stateEnteredAt,
    fire:
      sameStay && row.f_last_fired_at !== null && row.f_status !== null
        ? {
            rootEventId: row.root_event_id,
            timerKey,
            stateEnteredAt,
            lastFiredAt: toIso(row.f_last_fired_at),
            fireCount: row.f_fire_count ?? 0,
            status: row.f_status,
          }
        : null,
  };
}

/**
 * Parameters of the `claimTimerFire` statement of both SQL stores: the row after the fire, then
 * the expected count and status (same stay), then 1 when a first fire was expected (no row of
 * this stay), else 0.
 */
export function timerClaimValues(claim: TimerFireClaim): unknown[] {
  const { next, expected } = claim;
  return [
    next.rootEventId,
    next.timerKey,
    next.stateEnteredAt,
    next.lastFiredAt,
    next.fireCount,
    next.status,
    expected?.fireCount ?? -1,
    expected?.status ?? '',
    expected === null ? 1 : 0,
  ];
}
