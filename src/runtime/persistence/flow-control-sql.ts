/**
 * Flow-control counters on PostgreSQL (flow-control.ts): one statement per check, atomic on its
 * row, on the database clock, so every process of a deployment shares the limits.
 *
 * - A token is one upsert of the key's bucket row that computes GCRA in its SET and returns
 *   whether it let the request through (a refusal writes `seen_at` only, and says how long).
 * - A slot is one of `limit` rows per key, taken with `FOR UPDATE SKIP LOCKED` so concurrent
 *   takers pick different rows; a row whose lease ran out, or whose holder's backend is gone
 *   (docs/persistence.md "Dead holders"), is free. The rows of a key are made on its first
 *   refusal-looking take, once per process and key.
 * - The latest of a burst is one row per key, overwritten by each request (which learns how
 *   long ago the burst began), deleted by the one that is still named in it after its wait.
 * - The idle sweep deletes full buckets, the slot rows of keys idle for an hour and nothing held,
 *   and bursts not marked for an hour (their latest request's process died).
 */
import type pg from 'pg';
import { holderGoneCall, type BackendHolder } from './holders.js';
import type { FlowControlStore, FlowRate, FlowSlot, FlowTokenResult } from './flow-control.js';

const NOW_MS = `(extract(epoch FROM clock_timestamp()) * 1000)::float8`;

const SQL = {
  // $3: ms between two tokens (interval / limit); $4: how far ahead of now tat may be.
  token: `INSERT INTO machine_flow_buckets AS b (scope, flow_key, tat, seen_at, granted)
    SELECT $1, $2, t.ms + $3::float8, t.ms, true FROM (SELECT ${NOW_MS} AS ms) t
    ON CONFLICT (scope, flow_key) DO UPDATE SET
      granted = GREATEST(b.tat, excluded.seen_at) - excluded.seen_at <= $4::float8,
      tat = CASE WHEN GREATEST(b.tat, excluded.seen_at) - excluded.seen_at <= $4::float8
        THEN GREATEST(b.tat, excluded.seen_at) + $3::float8 ELSE b.tat END,
      seen_at = excluded.seen_at
    RETURNING granted, tat - seen_at AS ahead`,
  acquire: `UPDATE machine_flow_slots SET owner_id = $4, expires_at = ${NOW_MS} + $5::float8,
      holder_pid = $6, holder_start = $7, used_at = ${NOW_MS}
    WHERE scope = $1 AND flow_key = $2 AND slot = (
      SELECT slot FROM machine_flow_slots
      WHERE scope = $1 AND flow_key = $2 AND slot < $3
        AND (owner_id IS NULL OR expires_at < ${NOW_MS}
          OR ${holderGoneCall('holder_pid', 'holder_start')})
      LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING slot`,
  slots: `INSERT INTO machine_flow_slots (scope, flow_key, slot, used_at)
    SELECT $1, $2, s, ${NOW_MS} FROM generate_series(0, $3::integer - 1) s ON CONFLICT DO NOTHING`,
  release: `UPDATE machine_flow_slots
    SET owner_id = NULL, expires_at = NULL, holder_pid = NULL, holder_start = NULL
    WHERE scope = $1 AND flow_key = $2 AND slot = $3 AND owner_id = $4`,
  mark: `INSERT INTO machine_flow_latest AS l (scope, flow_key, owner_id, first_at, marked_at)
    SELECT $1, $2, $3, t.ms, t.ms FROM (SELECT ${NOW_MS} AS ms) t
    ON CONFLICT (scope, flow_key) DO UPDATE SET owner_id = excluded.owner_id,
      marked_at = excluded.marked_at
    RETURNING marked_at - first_at AS elapsed`,
  take: `DELETE FROM machine_flow_latest WHERE scope = $1 AND flow_key = $2 AND owner_id = $3`,
  // $1: idle ms. A full bucket (tat passed) is what a missing row means.
  sweepBuckets: `DELETE FROM machine_flow_buckets WHERE tat < ${NOW_MS} - $1::float8`,
  // All of a key's rows or none: a key with fewer rows than its limit would refuse early. A row
  // taken while this runs is kept (its conditions are checked again on the row it waited for);
  // no process trusts rows idle an hour to exist (MADE_TRUSTED_MS), so the next refusal of the
  // key makes the others again.
  sweepSlots: `DELETE FROM machine_flow_slots s USING (
      SELECT scope, flow_key FROM machine_flow_slots GROUP BY scope, flow_key
      HAVING max(used_at) < ${NOW_MS} - $1::float8
        AND bool_and(owner_id IS NULL OR expires_at < ${NOW_MS})) idle
    WHERE s.scope = idle.scope AND s.flow_key = idle.flow_key
      AND s.used_at < ${NOW_MS} - $1::float8
      AND (s.owner_id IS NULL OR s.expires_at < ${NOW_MS})`,
  sweepLatest: `DELETE FROM machine_flow_latest WHERE marked_at < ${NOW_MS} - $1::float8`,
} as const;

/** Keys whose slot rows this process made, forgotten past this many (made again on need). */
const MADE_SLOTS_KEPT = 50_000;
/**
 * How long this process trusts that a key's slot rows exist after making them: well under the
 * idle sweep's hour (FLOW_IDLE_MS), so rows it trusts were taken or made too recently to go.
 */
const MADE_TRUSTED_MS = 300_000;

/** Flow-control counters through a PostgreSQL pool. */
export class PostgresFlowControl implements FlowControlStore {
  readonly #pool: pg.Pool;
  readonly #holder: () => Promise<BackendHolder>;
  /** `scope \0 key \0 limit` of keys whose slot rows this process made, and when. */
  readonly #made = new Map<string, number>();

  /** `holder`: the backend slots name (the store's holder connection). */
  constructor(pool: pg.Pool, holder: () => Promise<BackendHolder>) {
    this.#pool = pool;
    this.#holder = holder;
  }

  #query<R extends pg.QueryResultRow>(
    name: keyof typeof SQL,
    values: unknown[],
  ): Promise<pg.QueryResult<R>> {
    return this.#pool.query<R>({ name: `mr_flow_${name}`, text: SQL[name], values });
  }

  async takeToken(scope: string, key: string, rate: FlowRate): Promise<FlowTokenResult> {
    const emission = rate.interval / rate.limit;
    const tolerance = rate.interval - emission;
    const { rows } = await this.#query<{ granted: boolean; ahead: number }>('token', [
      scope,
      key,
      emission,
      tolerance,
    ]);
    const row = rows[0]!;
    return row.granted
      ? { granted: true }
      : { granted: false, retryAfterMs: Math.max(0, row.ahead - tolerance) };
  }

  async acquireSlot(
    scope: string,
    key: string,
    limit: number,
    ownerId: string,
    leaseMs: number,
  ): Promise<FlowSlot | null> {
    const holder = await this.#holder();
    const take = async (): Promise<FlowSlot | null> => {
      const { rows } = await this.#query<{ slot: number }>('acquire', [
        scope,
        key,
        limit,
        ownerId,
        leaseMs,
        holder.pid,
        holder.start,
      ]);
      const row = rows[0];
      return row === undefined ? null : { scope, key, slot: row.slot, ownerId };
    };
    // Read before the take: a concurrent first take of the key may make the rows while this
    // one runs, and this take, having found none, must then try again rather than refuse.
    const made = `${scope}\u0000${key}\u0000${limit}`;
    const madeAt = this.#made.get(made);
    const known = madeAt !== undefined && Date.now() - madeAt < MADE_TRUSTED_MS;
    const taken = await take();
    if (taken !== null || known) return taken;
    // The key's first take in this process (or a larger limit): make its rows, then try again.
    await this.#query('slots', [scope, key, limit]);
    if (this.#made.size >= MADE_SLOTS_KEPT) this.#made.clear();
    this.#made.set(made, Date.now());
    return await take();
  }

  async releaseSlot(slot: FlowSlot): Promise<void> {
    await this.#query('release', [slot.scope, slot.key, slot.slot, slot.ownerId]);
  }

  async markLatest(scope: string, key: string, ownerId: string): Promise<number> {
    const { rows } = await this.#query<{ elapsed: number }>('mark', [scope, key, ownerId]);
    return rows[0]!.elapsed;
  }

  async takeLatest(scope: string, key: string, ownerId: string): Promise<boolean> {
    return ((await this.#query('take', [scope, key, ownerId])).rowCount ?? 0) === 1;
  }

  async sweepIdle(idleMs: number): Promise<number> {
    let deleted = 0;
    for (const name of ['sweepBuckets', 'sweepSlots', 'sweepLatest'] as const)
      deleted += (await this.#query(name, [idleMs])).rowCount ?? 0;
    return deleted;
  }
}
