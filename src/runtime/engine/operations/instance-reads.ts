/**
 * The operator's reads (docs/operations.md "Reading"): pages of instances, one instance's full
 * record, pages of its history. Zero-write like the HTTP reads: no lock is taken or waited for,
 * and a lock row is shown as it is, expired or not.
 */
import { InvalidOperationQueryException, MachineNotFoundException } from '../../errors.js';
import type { MachineDefinition } from '../../definition/machine-definition.js';
import { isLeaf, type StateNode } from '../../definition/state-node.js';
import { timedTransitions } from '../../definition/timed-transitions.js';
import { registrationTimers, type TimerRegistration } from '../../definition/timer-registration.js';
import type { ChildRow } from '../../interpreter/child-rows.js';
import { pendingTimers, type PendingTimer } from '../../interpreter/pending-timers.js';
import { runningDefinition } from '../versioning/instance-versions.js';
import type { Context } from '../../definition/types.js';
import type { HistoryRecord, HistorySource, StoredScenario } from '../../interpreter/types.js';
import type { FailedJob } from '../../jobs/types.js';
import type { InstanceListQuery, InstanceSummary } from '../../persistence/instance-queries.js';
import { keptScenario } from '../../persistence/kept-scenarios.js';
import type { Store } from '../../persistence/store.js';
import { decodeCursor, encodeCursor, type CursorList } from './cursors.js';

/** Most rows a page holds; a larger `limit` is refused. */
export const MAX_PAGE_SIZE = 500;
/** Rows of a page without `limit`. */
export const DEFAULT_PAGE_SIZE = 50;

/** Filters of `MachineOperations.list`. */
export interface InstanceListOptions {
  /**
   * A state (full id `order.processing`, or relative `processing`): instances where it, or a
   * state inside it, is active, oldest entry first. Without it: every instance, newest first.
   */
  state?: string;
  /** The business key the instance was bound to (a model record's key). */
  businessKey?: string;
  status?: 'active' | 'done';
  /** Time bounds (ISO-8601 or a `Date`): `From` inclusive, `Before` exclusive. */
  createdFrom?: string | Date;
  createdBefore?: string | Date;
  updatedFrom?: string | Date;
  updatedBefore?: string | Date;
  /** The previous page's `nextCursor`. */
  cursor?: string;
  /** Rows per page (default 50, at most 500). */
  limit?: number;
}

/** One page of a list. */
export interface Page<T> {
  items: T[];
  /** Pass as `cursor` for the next page; `null` on the last page. */
  nextCursor: string | null;
}

/** The lock row of an instance, as an operator reads it. */
export interface LockView {
  ownerId: string;
  /** What took it (`send`, a job name, `operator:<who>`). */
  context: string | null;
  acquiredAt: string;
  expiresAt: string;
  /** The expiry has passed: any writer may take the lock over. */
  expired: boolean;
}

/** Everything an operator needs about one instance (`MachineOperations.show`). */
export interface InstanceRecord {
  instance: InstanceSummary;
  context: Context;
  /** Active leaf states and when each stay began. */
  states: { id: string; enteredAt: string }[];
  lock: LockView | null;
  /** Child machines it started, oldest first, with their status. */
  children: ChildRow[];
  /**
   * Timers of its active states and their next fire. `registered: false`: the machine is not
   * in the runtime's timer registrations, so they do not fire.
   */
  timers: (PendingTimer & { registered: boolean })[];
  /** The scenario kept on it (scenarios enabled), `null` when none. */
  scenario: StoredScenario | null;
  /** Jobs about it that used up their attempts, with their last error. */
  failedJobs: FailedJob[];
}

/** Options of `MachineOperations.history`. */
export interface HistoryPageOptions {
  /** `asc` (default) from the first record, `desc` from the last. */
  order?: 'asc' | 'desc';
  /** `external`: only what callers sent; `internal`: only the steps. Default: both. */
  source?: HistorySource;
  cursor?: string;
  limit?: number;
}

/** What the reads are given. */
export interface InstanceReadContext {
  store: Store;
  machine(machineId: string): MachineDefinition;
  timers: readonly TimerRegistration[];
  failedJobs(): Promise<FailedJob[]>;
  now(): Date;
}

/** One page of the instances of `machineId`. */
export async function listInstances(
  context: InstanceReadContext,
  machineId: string,
  options: InstanceListOptions,
): Promise<Page<InstanceSummary>> {
  const definition = context.machine(machineId);
  const limit = pageSize(options.limit);
  const stateIds = options.state === undefined ? undefined : leavesOf(definition, options.state);
  const list: CursorList = {
    kind: 'instances',
    machineId,
    order: stateIds === undefined ? 'created' : 'state',
  };
  const query: InstanceListQuery = { machineId, limit: limit + 1 };
  if (stateIds !== undefined) query.stateIds = stateIds;
  if (options.businessKey !== undefined) query.businessKey = options.businessKey;
  if (options.status !== undefined) query.status = options.status;
  for (const field of ['createdFrom', 'createdBefore', 'updatedFrom', 'updatedBefore'] as const) {
    const value = options[field];
    if (value !== undefined) query[field] = isoTime(value, field);
  }
  if (options.cursor !== undefined) query.after = decodeCursor(list, options.cursor);
  const rows = await context.store.queries.listInstances(query);
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  const nextCursor =
    rows.length > limit && last !== undefined
      ? encodeCursor(list, {
          time: last.state?.enteredAt ?? last.createdAt,
          rootEventId: last.id,
        })
      : null;
  return { items, nextCursor };
}

/** The full record of instance `id` of `machineId`; `MachineNotFoundException` when unknown. */
export async function instanceRecord(
  context: InstanceReadContext,
  machineId: string,
  id: string,
): Promise<InstanceRecord> {
  const definition = context.machine(machineId);
  const { store } = context;
  const instance = await store.queries.instanceSummary(id);
  if (instance === null || instance.machineId !== machineId) throw notFound(machineId, id);
  const [snapshot, states, lock, children, fires, failed] = await Promise.all([
    store.load(id),
    store.currentStates(id),
    store.readLock(id),
    store.findChildren({ parentRootEventId: id }),
    store.timerFires(id),
    context.failedJobs(),
  ]);
  const registration = context.timers.find((entry) => entry.machine.id === machineId);
  // An instance pinned to an older version (docs/versioning.md) waits on that version's timers.
  const own = snapshot === null ? definition : runningDefinition(definition, snapshot);
  const timers = pendingTimers(
    registration === undefined ? timedTransitions(own) : registrationTimers(registration, own),
    states.map((row) => ({ stateId: row.stateId, enteredAt: row.stateEnteredAt })),
    new Map(fires.map((row) => [row.timerKey, row])),
  ).map((timer) => ({ ...timer, registered: registration !== undefined }));
  const now = context.now().getTime();
  // A job names its instance in its payload (instanceId, parent, childId, ...): a ULID is
  // unique, so its quoted form found in the payload's JSON is this instance.
  const quoted = JSON.stringify(id);
  return {
    instance,
    context: snapshot?.context ?? {},
    states: states.map((row) => ({ id: row.stateId, enteredAt: row.stateEnteredAt })),
    lock:
      lock === null
        ? null
        : {
            ownerId: lock.ownerId,
            context: lock.context,
            acquiredAt: lock.acquiredAt,
            expiresAt: lock.expiresAt,
            expired: Date.parse(lock.expiresAt) < now,
          },
    children,
    timers,
    scenario: keptScenario(states),
    failedJobs: failed.filter((job) => JSON.stringify(job.payload).includes(quoted)),
  };
}

/** One page of the history of instance `id` of `machineId`. */
export async function historyPage(
  context: InstanceReadContext,
  machineId: string,
  id: string,
  options: HistoryPageOptions,
): Promise<Page<HistoryRecord>> {
  context.machine(machineId);
  const instance = await context.store.queries.instanceSummary(id);
  if (instance === null || instance.machineId !== machineId) throw notFound(machineId, id);
  const limit = pageSize(options.limit);
  const order = options.order ?? 'asc';
  const list: CursorList = { kind: 'history', instanceId: id, order };
  const rows = await context.store.queries.historyPage(id, {
    order,
    limit: limit + 1,
    ...(options.source === undefined ? {} : { source: options.source }),
    ...(options.cursor === undefined ? {} : { afterSequence: decodeCursor(list, options.cursor) }),
  });
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return {
    items,
    nextCursor:
      rows.length > limit && last !== undefined ? encodeCursor(list, last.sequence) : null,
  };
}

/**
 * The leaf states of `stateId` (full or relative to the machine): the state itself when it is a
 * leaf, else every leaf inside it (`machine_current_states` holds leaves only).
 */
export function leavesOf(definition: MachineDefinition, stateId: string): string[] {
  const fullId = stateId.startsWith(`${definition.id}.`) ? stateId : `${definition.id}.${stateId}`;
  const node = definition.idMap.get(fullId);
  if (node === undefined || node.parent === null) {
    const known = [...definition.idMap.values()]
      .filter((candidate) => candidate.parent !== null)
      .map((candidate) => candidate.route);
    throw new InvalidOperationQueryException(
      `Machine '${definition.id}' has no state '${stateId}': filter by one of ${known.join(', ')}.`,
      { machine: definition.id, key: 'state' },
    );
  }
  const leaves: string[] = [];
  const visit = (current: StateNode): void => {
    if (isLeaf(current)) leaves.push(current.id);
    for (const child of current.children) visit(child);
  };
  visit(node);
  return leaves;
}

function pageSize(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_PAGE_SIZE;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
    throw new InvalidOperationQueryException(
      `A page holds 1 to ${MAX_PAGE_SIZE} rows, got limit ${limit}: pass an integer in that range, or none for ${DEFAULT_PAGE_SIZE}.`,
      { key: 'limit' },
    );
  }
  return limit;
}

function isoTime(value: string | Date, field: string): string {
  const time = value instanceof Date ? value.getTime() : Date.parse(value);
  if (Number.isNaN(time)) {
    throw new InvalidOperationQueryException(
      `'${field}' must be a date and time (ISO-8601, e.g. 2026-01-31T12:00:00Z), got '${String(value)}'.`,
      { key: field },
    );
  }
  return new Date(time).toISOString();
}

function notFound(machineId: string, id: string): MachineNotFoundException {
  return new MachineNotFoundException(
    `Machine '${machineId}' has no instance '${id}': list its instances to find one.`,
    { machine: machineId, key: id },
  );
}
