/**
 * Dead-holder detection (docs/persistence.md "Dead holders"): `npx tsx bench/locks/dead-holders.ts`.
 *
 * 1. How soon PostgreSQL forgets a SIGKILLed client's backend (`pg_stat_get_activity` empty),
 *    5 kills, and how soon `holderGone` sees a SIGKILLed process on this host.
 * 2. What the check costs where it runs: one lock statement on a row held by a live holder,
 *    with the check (this store's statement) and without (the TTL-only statement before
 *    migration 8), interleaved rounds, medians; on PostgreSQL and on a SQLite file.
 * 3. The common path: `loadForRead` (a lock-free send's read) of an instance without a lock
 *    row, this store's statement against the one before migration 8.
 * 4. The alternative on PostgreSQL: a session advisory lock per instance on the process's one
 *    connection (`pg_try_advisory_lock` + `pg_advisory_unlock`), two more round trips per
 *    locked event on a connection every locked event of the process shares.
 *
 * PostgreSQL: MACHINE_ROUTES_BENCH_PG_URL (default the test database), in a schema of its own.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { defineMachine } from '../../src/runtime/definition/index.js';
import { MachineRuntime } from '../../src/runtime/engine/machine-runtime.js';
import { holderGone, holderGoneSql, processHolder } from '../../src/runtime/persistence/holders.js';
import { PostgresStore } from '../../src/runtime/persistence/postgres-store.js';
import { SqliteStore } from '../../src/runtime/persistence/sqlite-store.js';

const URL =
  process.env.MACHINE_ROUTES_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const SCHEMA = `bench_dead_holders_${process.pid}`;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

async function backendGoneAfterKill(): Promise<number> {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const pg = require('pg'); const c = new pg.Client(${JSON.stringify(URL)});
       c.connect().then(() => c.query('SELECT pg_backend_pid() AS pid'))
        .then((r) => { process.stdout.write(r.rows[0].pid + '\\n'); setInterval(() => {}, 1e6); });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const pid = await new Promise<number>((resolve) =>
    child.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString()))),
  );
  const client = new pg.Client(URL);
  await client.connect();
  child.kill('SIGKILL');
  const killed = performance.now();
  while ((await client.query('SELECT 1 FROM pg_stat_get_activity($1)', [pid])).rowCount! > 0);
  const ms = performance.now() - killed;
  await client.end();
  return ms;
}

async function processGoneAfterKill(): Promise<number> {
  const child = spawn('sleep', ['60']);
  await new Promise((resolve) => child.once('spawn', resolve));
  const stat = readFileSync(`/proc/${child.pid}/stat`, 'utf8');
  const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  const [boot, namespace] = processHolder()!.split('/');
  const holder = `${boot}/${namespace}/${child.pid}/${start}`;
  child.kill('SIGKILL');
  const killed = performance.now();
  while (!holderGone(holder)) await new Promise((resolve) => setImmediate(resolve));
  return performance.now() - killed;
}

/** Median microseconds per call of each variant, `rounds` interleaved rounds of `calls`. */
async function compare(
  variants: Record<string, () => Promise<unknown> | unknown>,
  rounds: number,
  calls: number,
): Promise<Record<string, number>> {
  const samples: Record<string, number[]> = {};
  for (let round = 0; round < rounds; round += 1) {
    for (const [name, run] of Object.entries(variants)) {
      const started = performance.now();
      for (let call = 0; call < calls; call += 1) await run();
      (samples[name] ??= []).push(((performance.now() - started) * 1000) / calls);
    }
  }
  return Object.fromEntries(Object.entries(samples).map(([name, us]) => [name, median(us)]));
}

const TTL_ONLY_PG = `INSERT INTO machine_locks (root_event_id, owner_id, acquired_at, expires_at, context)
  VALUES ($1, $2, clock_timestamp(), clock_timestamp() + interval '60 seconds', NULL)
  ON CONFLICT (root_event_id) DO UPDATE SET owner_id = excluded.owner_id
  WHERE machine_locks.expires_at < excluded.acquired_at RETURNING owner_id`;
const TTL_ONLY_SQLITE = `INSERT INTO machine_locks (root_event_id, owner_id, acquired_at, expires_at, context)
  VALUES (?, ?, ?, ?, NULL) ON CONFLICT (root_event_id) DO UPDATE SET owner_id = excluded.owner_id
  WHERE machine_locks.expires_at < excluded.acquired_at`;

const READ_COLUMNS = `SELECT i.root_event_id, i.machine_id, i.machine_value, i.context, i.status,
  i.sequence_number, i.parent_machine_id, i.parent_root_event_id, l.expires_at AS lock_expires_at
  FROM machine_instances i LEFT JOIN machine_locks l ON l.root_event_id = i.root_event_id
  WHERE i.root_event_id = `;

const kills = { pg: [] as number[], proc: [] as number[] };
for (let kill = 0; kill < 5; kill += 1) {
  kills.pg.push(await backendGoneAfterKill());
  kills.proc.push(await processGoneAfterKill());
}
console.log(
  `PostgreSQL backend gone after a client SIGKILL: ${kills.pg.map((ms) => ms.toFixed(2)).join(', ')} ms (median ${median(kills.pg).toFixed(2)})`,
);
console.log(
  `holderGone true after a SIGKILL (this host): ${kills.proc.map((ms) => ms.toFixed(2)).join(', ')} ms (median ${median(kills.proc).toFixed(2)})`,
);

const pgStore = new PostgresStore({ connectionString: URL, schema: SCHEMA });
await pgStore.migrate();
const dir = mkdtempSync(join(tmpdir(), 'mr-bench-holders-'));
const sqliteStore = new SqliteStore({ filename: join(dir, 'bench.db') });
try {
  // A live holder (this process) on one row: every attempt below finds it held and refused.
  const held = { rootEventId: 'held', ownerId: 'holder', ttlMs: 60_000 };
  await pgStore.tryAcquireLock(held);
  await sqliteStore.tryAcquireLock(held);
  const taker = { rootEventId: 'held', ownerId: 'taker', ttlMs: 60_000 };
  const oldSqlite = sqliteStore.database.prepare(TTL_ONLY_SQLITE);
  const advisory = new pg.Client(URL);
  await advisory.connect();
  const contended = await compare(
    {
      'PostgreSQL, with the check': () => pgStore.tryAcquireLock(taker),
      'PostgreSQL, TTL only': () =>
        pgStore.pool.query({
          name: 'bench_ttl_only',
          text: TTL_ONLY_PG,
          values: ['held', 'taker'],
        }),
      'SQLite, with the check': () => sqliteStore.tryAcquireLock(taker),
      'SQLite, TTL only': () => {
        const now = Date.now();
        oldSqlite.run(
          'held',
          'taker',
          new Date(now).toISOString(),
          new Date(now + 60_000).toISOString(),
        );
      },
    },
    9,
    500,
  );
  console.log(
    "A refused lock attempt on a live holder's row, us per call (median of 9 rounds x 500):",
  );
  for (const [name, us] of Object.entries(contended)) console.log(`  ${name}: ${us.toFixed(1)}`);
  const machine = defineMachine({ config: { id: 'bench', initial: 'idle', states: { idle: {} } } });
  const ids: string[] = [];
  for (const store of [pgStore, sqliteStore])
    ids.push((await new MachineRuntime({ store }).create(machine)).snapshot.id);
  const [pgId, sqliteId] = ids as [string, string];
  const oldRead = sqliteStore.database.prepare(`${READ_COLUMNS}?`).raw(true);
  const reads = await compare(
    {
      'SQLite, this statement': () => sqliteStore.loadForRead(sqliteId),
      'SQLite, before': () => oldRead.get(sqliteId),
    },
    9,
    2000,
  );
  console.log('loadForRead without a lock row, us per call (median of 9 rounds x 2,000):');
  for (const [name, us] of Object.entries(reads)) console.log(`  ${name}: ${us.toFixed(1)}`);
  // PostgreSQL: the server's execution time (EXPLAIN ANALYZE of prepared statements), which the
  // round trip's noise on a loaded machine would hide; the inline subquery for comparison.
  const explain = await pgStore.pool.connect();
  await explain.query(`SET search_path = "${SCHEMA}"`);
  const lockColumn = {
    before: 'l.expires_at',
    'this statement (function call)':
      'CASE WHEN l.holder_pid IS NOT NULL AND machine_holder_gone(l.holder_pid, l.holder_start) THEN l.acquired_at ELSE l.expires_at END',
    'inline subquery': `CASE WHEN ${holderGoneSql('l.holder_pid', 'l.holder_start')} THEN l.acquired_at ELSE l.expires_at END`,
  };
  const serverUs: Record<string, number[]> = {};
  for (const [index, column] of Object.values(lockColumn).entries())
    await explain.query(
      `PREPARE read${index}(text) AS ${READ_COLUMNS.replace('l.expires_at', column)}$1`,
    );
  for (let round = 0; round < 400; round += 1) {
    for (const [index, name] of Object.keys(lockColumn).entries()) {
      const plan = await explain.query(
        `EXPLAIN (ANALYZE, TIMING OFF) EXECUTE read${index}('${pgId}')`,
      );
      const last = String(plan.rows.at(-1)!['QUERY PLAN']);
      (serverUs[name] ??= []).push(Number(/([\d.]+) ms/.exec(last)![1]) * 1000);
    }
  }
  explain.release();
  console.log('PostgreSQL loadForRead without a lock row, server execution us (median of 400):');
  for (const [name, us] of Object.entries(serverUs))
    console.log(`  ${name}: ${median(us).toFixed(0)}`);
  const free = await compare(
    {
      'lock row (acquire + release), the chosen design': async () => {
        await pgStore.tryAcquireLock({ rootEventId: 'free', ownerId: 'o', ttlMs: 60_000 });
        await pgStore.releaseLock('free', 'o');
      },
      'the same plus a session advisory lock and unlock': async () => {
        await advisory.query("SELECT pg_try_advisory_lock(hashtext('free'))");
        await pgStore.tryAcquireLock({ rootEventId: 'free', ownerId: 'o', ttlMs: 60_000 });
        await pgStore.releaseLock('free', 'o');
        await advisory.query("SELECT pg_advisory_unlock(hashtext('free'))");
      },
    },
    9,
    300,
  );
  console.log('An uncontended lock on PostgreSQL, us per lock (median of 9 rounds x 300):');
  for (const [name, us] of Object.entries(free)) console.log(`  ${name}: ${us.toFixed(1)}`);
  await advisory.end();
} finally {
  await pgStore.pool.query(`DROP SCHEMA "${SCHEMA}" CASCADE`);
  await pgStore.close();
  await sqliteStore.close();
  rmSync(dir, { recursive: true, force: true });
}
