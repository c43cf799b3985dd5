/**
 * `InstanceQueries` over the memory store's instances: the SQL stores' orders and filters
 * (persistence/instance-queries.ts), computed by scanning, which is what a test-sized store needs.
 */
import type { HistoryRecord, MachineSnapshot } from '../interpreter/types.js';
import type {
  HistoryPageQuery,
  InstanceListQuery,
  InstanceQueries,
  InstanceSummary,
  ListPosition,
} from './instance-queries.js';
import type { CurrentStateRow } from './store.js';

/** What the memory store keeps of an instance that the queries read. */
export interface MemoryInstanceView {
  snapshot: MachineSnapshot;
  history: HistoryRecord[];
  states: Map<string, CurrentStateRow>;
}

/** `InstanceQueries` over `instances` (read at each call). */
export class MemoryInstanceQueries implements InstanceQueries {
  readonly #instances: ReadonlyMap<string, MemoryInstanceView>;
  readonly #keys = new Map<string, string>();

  constructor(instances: ReadonlyMap<string, MemoryInstanceView>) {
    this.#instances = instances;
  }

  async listInstances(query: InstanceListQuery): Promise<InstanceSummary[]> {
    const rows: { summary: InstanceSummary; key: ListPosition }[] = [];
    for (const entry of this.#instances.values()) {
      if (entry.snapshot.machineId !== query.machineId) continue;
      const summary = this.#summary(entry);
      if (!matches(summary, query)) continue;
      if (query.stateIds === undefined) {
        rows.push({ summary, key: { time: summary.createdAt, rootEventId: summary.id } });
        continue;
      }
      for (const stateId of query.stateIds) {
        const state = entry.states.get(stateId);
        if (state === undefined) continue;
        rows.push({
          summary: { ...summary, state: { id: stateId, enteredAt: state.stateEnteredAt } },
          key: { time: state.stateEnteredAt, rootEventId: summary.id },
        });
      }
    }
    // By state: oldest entry first; otherwise newest creation first (as the SQL stores).
    const direction = query.stateIds === undefined ? -1 : 1;
    const after = query.after;
    return rows
      .filter((row) => after === undefined || compare(row.key, after) * direction > 0)
      .sort((a, b) => compare(a.key, b.key) * direction)
      .slice(0, query.limit)
      .map((row) => row.summary);
  }

  async instanceSummary(rootEventId: string): Promise<InstanceSummary | null> {
    const entry = this.#instances.get(rootEventId);
    return entry === undefined ? null : this.#summary(entry);
  }

  async historyPage(rootEventId: string, query: HistoryPageQuery): Promise<HistoryRecord[]> {
    const descending = query.order === 'desc';
    const records = (this.#instances.get(rootEventId)?.history ?? []).filter(
      (record) =>
        (query.source === undefined || record.source === query.source) &&
        (query.afterSequence === undefined ||
          (descending
            ? record.sequence < query.afterSequence
            : record.sequence > query.afterSequence)),
    );
    if (descending) records.reverse();
    return structuredClone(records.slice(0, query.limit));
  }

  async bindBusinessKey(rootEventId: string, businessKey: string): Promise<boolean> {
    const entry = this.#instances.get(rootEventId);
    if (entry === undefined) return false;
    const current = this.#keys.get(rootEventId);
    if (current !== undefined) return current === businessKey;
    if (this.holderOf(entry.snapshot.machineId, businessKey) !== null) return false;
    this.#keys.set(rootEventId, businessKey);
    return true;
  }

  async instanceByBusinessKey(machineId: string, businessKey: string): Promise<string | null> {
    return this.holderOf(machineId, businessKey);
  }

  /** The instance of `machineId` holding `businessKey` (the SQL stores' unique index). */
  holderOf(machineId: string, businessKey: string): string | null {
    for (const [rootEventId, key] of this.#keys) {
      if (key !== businessKey) continue;
      if (this.#instances.get(rootEventId)?.snapshot.machineId === machineId) return rootEventId;
    }
    return null;
  }

  /** Binds a new instance to its key within the memory store's commit (checked by `holderOf`). */
  keep(rootEventId: string, businessKey: string): void {
    this.#keys.set(rootEventId, businessKey);
  }

  // Created at the first record, updated at the last: each commit writes at least one.
  #summary(entry: MemoryInstanceView): InstanceSummary {
    const { snapshot, history } = entry;
    return {
      id: snapshot.id,
      machineId: snapshot.machineId,
      value: [...snapshot.value],
      status: snapshot.status,
      sequence: snapshot.sequence,
      createdAt: history[0]!.createdAt,
      updatedAt: history[history.length - 1]!.createdAt,
      businessKey: this.#keys.get(snapshot.id) ?? null,
      parent: snapshot.parent === undefined ? null : { ...snapshot.parent },
      pausedAt: snapshot.pausedAt ?? null,
    };
  }

  // The memory store keeps the snapshot as committed, `pausedAt` included: nothing else to write.
  pauseWrite(): null {
    return null;
  }
}

function matches(summary: InstanceSummary, query: InstanceListQuery): boolean {
  return (
    (query.businessKey === undefined || summary.businessKey === query.businessKey) &&
    (query.status === undefined || summary.status === query.status) &&
    (query.createdFrom === undefined || summary.createdAt >= query.createdFrom) &&
    (query.createdBefore === undefined || summary.createdAt < query.createdBefore) &&
    (query.updatedFrom === undefined || summary.updatedAt >= query.updatedFrom) &&
    (query.updatedBefore === undefined || summary.updatedAt < query.updatedBefore)
  );
}

function compare(a: ListPosition, b: ListPosition): number {
  if (a.time !== b.time) return a.time < b.time ? -1 : 1;
  if (a.rootEventId === b.rootEventId) return 0;
  return a.rootEventId < b.rootEventId ? -1 : 1;
}
