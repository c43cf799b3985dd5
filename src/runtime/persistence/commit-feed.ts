/**
 * Commit notices: "instance X committed sequence N", for live state (server-sent events and
 * `waitFor` reads) without polling the store.
 *
 * - In one process (memory, SQLite) a notice goes straight to the subscribers of that process.
 *   Another process on the same SQLite file is not told: the embedded store has no channel
 *   between processes (docs/http.md "Live state").
 * - On PostgreSQL notices travel by `NOTIFY` on a channel of the store's schema, batched per
 *   event-loop turn, and every process subscribes with one `LISTEN` connection of its own; the
 *   committing process hears its own notices the same way, so each subscriber gets each once.
 *   A subscriber also takes the instance's watch lease (watch-leases.ts): the commit of an
 *   instance no process watches says so, and its notice is not sent.
 *
 * The runtime publishes from its post-commit hook (`MachineRuntime.onCommit`), so every
 * committed step is announced, whoever made it (sends, creates, jobs).
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { RuntimeClosedException } from '../errors.js';
import type { PostgresStore } from './postgres-store.js';
import type { Store } from './store.js';
import { WatchLeases, type WatchLeaseTiming } from './watch-leases.js';

/** One committed step of one instance. */
export interface CommitNotice {
  /** Definition id. */
  machineId: string;
  /** Instance id. */
  id: string;
  /** Sequence number of the committed snapshot. */
  sequence: number;
}

/**
 * The `sequence` of a notice that announces no commit but a lock released without one (an
 * event nothing accepted, a failed step, the end of a `withLock`): waiting senders of other
 * processes retry at once. Readers following commits skip it (it is never newer than a state).
 */
export const RELEASED = 0;

/** Receives the notices of one instance. Must not throw. */
export type NoticeListener = (notice: CommitNotice) => void;

/** Publishes and delivers commit notices. */
export interface CommitFeed {
  /** Announces commits (after they are durable). Never throws, never waits. */
  publish(notices: readonly CommitNotice[]): void;
  /**
   * Listens to the commits of one instance. Resolves, with the function that stops listening,
   * once every later commit is sure to be delivered (on PostgreSQL: `LISTEN` is in effect).
   */
  subscribe(id: string, listener: NoticeListener): Promise<() => void>;
  close(): Promise<void>;
}

const CLOSED = 'The runtime is closed: no instance can be watched.';

/** Delivers notices to the subscribers of this process. */
class Subscribers {
  readonly #byId = new Map<string, Set<NoticeListener>>();

  get size(): number {
    return this.#byId.size;
  }

  /** The ids watched. */
  ids(): Iterable<string> {
    return this.#byId.keys();
  }

  add(id: string, listener: NoticeListener): () => void {
    const listeners = this.#byId.get(id) ?? new Set<NoticeListener>();
    listeners.add(listener);
    this.#byId.set(id, listeners);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0 && this.#byId.get(id) === listeners) this.#byId.delete(id);
    };
  }

  deliver(notices: readonly CommitNotice[]): void {
    for (const notice of notices) {
      for (const listener of this.#byId.get(notice.id) ?? []) listener(notice);
    }
  }
}

/** The feed of one process: memory and SQLite stores. */
export class LocalCommitFeed implements CommitFeed {
  readonly #subscribers = new Subscribers();

  publish(notices: readonly CommitNotice[]): void {
    if (this.#subscribers.size === 0) return;
    // Delivered after the committing call returns: a listener never runs inside a send.
    queueMicrotask(() => this.#subscribers.deliver(notices));
  }

  #closed = false;

  async subscribe(id: string, listener: NoticeListener): Promise<() => void> {
    if (this.#closed) throw new RuntimeClosedException(CLOSED);
    return this.#subscribers.add(id, listener);
  }

  async close(): Promise<void> {
    this.#closed = true;
  }
}

/** Largest NOTIFY payload sent (PostgreSQL's limit is 8000 bytes). */
const MAX_PAYLOAD = 7000;

/** PostgreSQL's longest identifier, and so its longest channel name (NAMEDATALEN - 1). */
const MAX_CHANNEL = 63;

/**
 * The schema's channel. Identifiers are checked by the store (letters, digits, _). A schema
 * name longer than the channel allows is replaced by its hash: `pg_notify` refuses a long name
 * while `LISTEN` would silently truncate it, so the two would never meet. The name keeps the
 * schema's case (`LISTEN` quotes it): schemas `Tenant` and `tenant` are two schemas.
 */
export function commitChannel(schema: string): string {
  const channel = `machine_routes_commits_${schema}`;
  if (channel.length <= MAX_CHANNEL) return channel;
  return `machine_routes_commits_${createHash('sha256').update(schema).digest('hex').slice(0, 32)}`;
}

/** The feed shared by every process of one PostgreSQL schema. */
export class PostgresCommitFeed implements CommitFeed {
  readonly #pool: pg.Pool;
  readonly #channel: string;
  readonly #onError: (error: unknown) => void;
  readonly #subscribers = new Subscribers();
  #pending: CommitNotice[] = [];
  #flushTimer: NodeJS.Immediate | null = null;
  /**
   * The NOTIFY query not yet answered (at most one at a time): `close` waits for it before the
   * pool may end, and notices published meanwhile go out together once it is answered.
   */
  #sending: Promise<void> | null = null;
  #listener: Promise<pg.PoolClient> | null = null;
  #closing: Promise<void> | null = null;
  readonly #leases: WatchLeases;
  readonly #watched = (): Iterable<string> => this.#subscribers.ids();

  constructor(
    store: PostgresStore,
    onError: (error: unknown) => void = () => {},
    leaseTiming?: Partial<WatchLeaseTiming>,
  ) {
    this.#pool = store.pool;
    this.#channel = commitChannel(store.schema ?? 'public');
    this.#onError = onError;
    this.#leases = new WatchLeases(store.pool, onError, leaseTiming);
  }

  publish(notices: readonly CommitNotice[]): void {
    if (this.#closing !== null || notices.length === 0) return;
    // Batched per event-loop turn, and while a NOTIFY is on its way: under load one NOTIFY
    // carries the commits of several turns (each NOTIFY is a round trip and a transaction, and
    // takes a pooled connection the sends need), idle a notice leaves at the end of its turn.
    if (this.#sending === null) this.#flushTimer ??= setImmediate(() => this.#flush());
    this.#pending.push(...notices);
  }

  #flush(): void {
    if (this.#flushTimer !== null) clearImmediate(this.#flushTimer);
    this.#flushTimer = null;
    if (this.#sending !== null) return;
    const notices = this.#pending;
    this.#pending = [];
    if (notices.length === 0) return;
    const payloads: string[] = [];
    let batch: string[] = [];
    let size = 2;
    for (const notice of notices) {
      const entry = JSON.stringify([notice.machineId, notice.id, notice.sequence]);
      if (size + entry.length + 1 > MAX_PAYLOAD && batch.length > 0) {
        payloads.push(`[${batch.join(',')}]`);
        batch = [];
        size = 2;
      }
      batch.push(entry);
      size += entry.length + 1;
    }
    if (batch.length > 0) payloads.push(`[${batch.join(',')}]`);
    const calls = payloads.map((_, index) => `pg_notify($1, $${index + 2})`).join(', ');
    this.#sending = this.#pool
      .query(`SELECT ${calls}`, [this.#channel, ...payloads])
      .then(() => undefined, this.#onError)
      .finally(() => {
        this.#sending = null;
        // What was published meanwhile, in order after this batch.
        this.#flush();
      });
  }

  async subscribe(id: string, listener: NoticeListener): Promise<() => void> {
    if (this.#closing !== null) throw new RuntimeClosedException(CLOSED);
    const unsubscribe = this.#subscribers.add(id, listener);
    try {
      // LISTEN first: a commit that sees the lease sends a notice this process hears.
      await this.#listen();
      await this.#leases.take(id, this.#watched);
    } catch (error) {
      unsubscribe();
      throw error;
    }
    return unsubscribe;
  }

  /**
   * The LISTEN connection, opened on first use and again after it failed: a client of the
   * store's pool kept for this (so `pg` is loaded by the store alone, and only on PostgreSQL).
   */
  #listen(): Promise<pg.PoolClient> {
    this.#listener ??= (async () => {
      const client = await this.#pool.connect();
      client.on('notification', (message) => {
        if (message.channel === this.#channel && message.payload) this.#receive(message.payload);
      });
      client.on('error', (error) => {
        // A lost connection misses notices: the next subscriber opens a new one.
        this.#listener = null;
        this.#onError(error);
        client.release(true);
      });
      try {
        await client.query(`LISTEN "${this.#channel}"`);
      } catch (error) {
        this.#listener = null;
        client.release(true);
        throw error;
      }
      return client;
    })();
    return this.#listener;
  }

  #receive(payload: string): void {
    let entries: unknown;
    try {
      entries = JSON.parse(payload);
    } catch {
      return;
    }
    if (!Array.isArray(entries)) return;
    const notices: CommitNotice[] = [];
    for (const entry of entries) {
      if (!Array.isArray(entry)) continue;
      const [machineId, id, sequence] = entry as unknown[];
      if (typeof machineId === 'string' && typeof id === 'string' && typeof sequence === 'number')
        notices.push({ machineId, id, sequence });
    }
    this.#subscribers.deliver(notices);
  }

  /**
   * Sends the notices of commits made so far, then gives the LISTEN connection back. Resolves
   * once the store's pool may end (`pool.end()` waits for a checked-out client forever and a
   * NOTIFY sent after it fails), so the runtime closes the feed first. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#leases.close();
      // Other processes still hear the last commits of this one: the NOTIFY on its way, then
      // one with what is still pending (sent as the first is answered).
      this.#flush();
      while (this.#sending !== null) await this.#sending;
      const listener = this.#listener;
      this.#listener = null;
      // Destroyed, not returned to the pool: a pooled connection must not keep listening.
      if (listener) (await listener.catch(() => null))?.release(true);
    })();
    return this.#closing;
  }
}

/** The feed a store's commits travel on: NOTIFY on PostgreSQL, in-process otherwise. */
export function commitFeedFor(store: Store, onError?: (error: unknown) => void): CommitFeed {
  return store.kind === 'postgres'
    ? new PostgresCommitFeed(store as PostgresStore, onError)
    : new LocalCommitFeed();
}
