/**
 * The PostgreSQL holder of a process (holders.ts): a connection of this process that stays open
 * as long as the process lives. Rows carry its backend's pid and start time; a taker that finds
 * a row held asks `pg_stat_get_activity` in the same statement whether that backend still
 * runs. When a process dies its kernel closes the socket, the backend, idle on it, reads the
 * end at once and exits: the process's rows are free within milliseconds, whatever their TTL.
 *
 * Pooled connections cannot serve: the pool closes idle ones (10 s), which would free the
 * rows of a live process. So each process keeps one connection per database, shared by the
 * store and the pg-boss queue, idle, opened on first need and opened again (a new holder) when
 * it drops. Its socket does not keep the process alive.
 */
import { Socket } from 'node:net';
import pg from 'pg';
import type { BackendHolder } from './holders.js';

/** One process's holder connection to a database; shared, released by each user once. */
export interface HolderConnection {
  /** The backend holding for this process now (connects on first call, and after a drop). */
  current(): Promise<BackendHolder>;
  /** This user is done with it; the last one closes the connection. */
  release(): Promise<void>;
}

const shared = new Map<string, SharedHolder>();

/** The holder connection of this process to `connectionString`'s database. */
export function holderConnection(connectionString: string): HolderConnection {
  let holder = shared.get(connectionString);
  if (holder === undefined) {
    holder = new SharedHolder(connectionString);
    shared.set(connectionString, holder);
  }
  holder.users += 1;
  let released = false;
  const owner = holder;
  return {
    current: () => owner.current(),
    release: async () => {
      if (released) return;
      released = true;
      owner.users -= 1;
      if (owner.users > 0) return;
      shared.delete(connectionString);
      await owner.close();
    },
  };
}

class SharedHolder {
  users = 0;
  readonly #connectionString: string;
  #client: pg.Client | null = null;
  #holder: Promise<BackendHolder> | null = null;

  constructor(connectionString: string) {
    this.#connectionString = connectionString;
  }

  current(): Promise<BackendHolder> {
    return (this.#holder ??= this.#connect());
  }

  async #connect(): Promise<BackendHolder> {
    let socket: Socket | undefined;
    const client = new pg.Client({
      connectionString: this.#connectionString,
      application_name: 'machine-routes-holder',
      // Notices a dead server (a failover) on this side too, so the next lock reconnects.
      keepAlive: true,
      stream: () => (socket = new Socket()),
    });
    this.#client = client;
    const forget = () => {
      if (this.#client !== client) return;
      this.#client = null;
      this.#holder = null;
    };
    client.on('error', forget);
    client.on('end', forget);
    try {
      await client.connect();
      // An idle_session_timeout (PostgreSQL 14+) would end the connection of a live process.
      const result = await client.query<BackendHolder>(
        `SELECT pid, backend_start::text AS start,
          CASE WHEN current_setting('server_version_num')::int >= 140000
            THEN set_config('idle_session_timeout', '0', false) END AS unset
          FROM pg_stat_get_activity(pg_backend_pid())`,
      );
      const row = result.rows[0];
      if (row === undefined) throw new Error('pg_stat_get_activity does not show this backend.');
      // PostgreSQL's BackendKeyData carries the backend's pid; a pooler sends a key of its own.
      const processId = (client as unknown as { processID: number | null }).processID;
      row.pooled = processId !== null && processId !== row.pid;
      // Idle from now on: an open connection must not keep the process alive.
      socket?.unref();
      return row;
    } catch (error) {
      forget();
      await client.end().catch(() => {});
      throw error;
    }
  }

  async close(): Promise<void> {
    const client = this.#client;
    this.#client = null;
    this.#holder = null;
    await client?.end().catch(() => {});
  }
}
