/**
 * Two server processes and two `machine-routes worker` processes on one PostgreSQL database
 * (a schema of its own, plus pg-boss's beside it, both dropped afterwards) drive 100 parents
 * through their asynchronous children: parents are created over HTTP on both servers, and the
 * children are completed through the parents' forwarded endpoints. Every parent must end in its
 * final state with exactly one child and one completion record.
 */
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultJobSchema, openJobQueue, openStore } from '../../../src/runtime/index.js';
import { listeningUrl, startFixture, type FixtureProcess } from '../../support/child-process.js';
import {
  PG_TEST_URL,
  createTestSchema,
  dropSchema,
  shouldRunPostgresTests,
  type TestSchema,
} from '../../support/postgres.js';

const SERVER = fileURLToPath(new URL('./fixtures/server.ts', import.meta.url));
const CLI = fileURLToPath(new URL('./fixtures/cli.ts', import.meta.url));
const CONFIG = fileURLToPath(new URL('./fixtures/machine-routes.config.ts', import.meta.url));
const PARENTS = 100;
// Generous for a loaded 2-core machine; the assertions never depend on timing.
const DEADLINE_MS = 45_000;
const JOB_ENV = { MACHINE_JOB_POLL_INTERVAL: '0.05', MACHINE_JOB_TIMEOUT: '20' };

const run = await shouldRunPostgresTests('delegation/multi-process');

interface Envelope {
  data: { id: string; state: string[]; child?: { state: string[] } };
}

async function call(base: string, path: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  });
  return { status: response.status, body: await response.json().catch(() => null) };
}

/** Retries `attempt` (short pauses) until it returns a value, or fails at the deadline. */
async function eventually<T>(
  what: string,
  deadline: number,
  attempt: () => Promise<T | undefined>,
): Promise<T> {
  for (;;) {
    const value = await attempt();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.runIf(run)('two servers and two workers on one PostgreSQL database', () => {
  let schema: TestSchema;
  let pool: pg.Pool;
  const processes: FixtureProcess[] = [];
  const servers: string[] = [];

  beforeAll(async () => {
    schema = await createTestSchema('multi_process');
    await (await openStore(schema.url, { migrate: true })).close();
    // pg-boss installs its schema once, before four processes race for it.
    await (await openJobQueue(schema.url)).close();
    pool = new pg.Pool({
      connectionString: PG_TEST_URL,
      max: 2,
      options: `-c search_path=${schema.schema}`,
    });
    const serverProcesses = [0, 1].map(() => startFixture(SERVER, [schema.url], JOB_ENV));
    const workers = [0, 1].map(() =>
      startFixture(
        CLI,
        ['worker', '--config', CONFIG, '--database', schema.url, '--concurrency', '4'],
        JOB_ENV,
      ),
    );
    processes.push(...serverProcesses, ...workers);
    for (const server of serverProcesses) servers.push(await listeningUrl(server));
    for (const worker of workers)
      await worker.waitForLine((line) => line.startsWith('Worker running'), 45_000);
  }, 60_000);

  afterAll(async () => {
    for (const started of processes) started.child.kill('SIGTERM');
    const exits = await Promise.all(processes.map((started) => started.exited));
    await pool?.end();
    if (schema !== undefined) {
      await dropSchema(defaultJobSchema(schema.schema));
      await schema.drop();
    }
    // Graceful: every process stopped on SIGTERM by itself.
    expect(exits).toEqual([0, 0, 0, 0]);
  }, 30_000);

  it(`should drive ${PARENTS} parents through their children, each exactly once`, async () => {
    const deadline = Date.now() + DEADLINE_MS;
    const ids = await Promise.all(
      Array.from({ length: PARENTS }, async (_, index) => {
        const response = await call(servers[index % 2]!, '/claims/create');
        expect(response.status).toBe(201);
        return (response.body as Envelope).data.id;
      }),
    );

    // Each child through its parent's forwarded endpoint, on the other server; 409 while the
    // child is still starting (a worker has not run its start job yet).
    const forwarded = await Promise.all(
      ids.map((id, index) =>
        eventually(`APPROVE of ${id}`, deadline, async () => {
          const response = await call(servers[(index + 1) % 2]!, `/claims/${id}/approve`);
          if (response.status === 409 || response.status === 423) return undefined;
          return response;
        }),
      ),
    );
    expect(forwarded.map((response) => response.status)).toEqual(ids.map(() => 200));
    expect((forwarded[0]!.body as Envelope).data.child?.state).toEqual(['approval.approved']);

    // The workers route every completion.
    await eventually('every parent approved', deadline, async () => {
      const result = await pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM machine_current_states WHERE machine_id = 'claim' AND state_id = 'claim.approved'`,
      );
      return result.rows[0]!.n === PARENTS ? true : undefined;
    });

    const perParent = await pool.query<{
      id: string;
      children: number;
      instances: number;
      starts: number;
      dones: number;
    }>(
      `SELECT p.root_event_id AS id,
         (SELECT count(*)::int FROM machine_children c WHERE c.parent_root_event_id = p.root_event_id) AS children,
         (SELECT count(*)::int FROM machine_instances i WHERE i.parent_root_event_id = p.root_event_id) AS instances,
         (SELECT count(*)::int FROM machine_events e WHERE e.root_event_id = p.root_event_id AND e.type = 'claim.child.approval.start') AS starts,
         (SELECT count(*)::int FROM machine_events e WHERE e.root_event_id = p.root_event_id AND e.type = 'claim.child.approval.done') AS dones
       FROM machine_instances p WHERE p.machine_id = 'claim' ORDER BY p.root_event_id`,
    );
    expect(perParent.rows).toEqual(
      [...ids].sort().map((id) => ({ id, children: 1, instances: 1, starts: 1, dones: 1 })),
    );
    const states = await pool.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM machine_children GROUP BY status`,
    );
    expect(states.rows).toEqual([{ status: 'completed', n: PARENTS }]);
    const queue = await openJobQueue(schema.url);
    try {
      expect(await queue.failedJobs()).toEqual([]);
    } finally {
      await queue.close();
    }
  }, 60_000);
});

if (!run)
  describe.skip('delegation/multi-process (postgres)', () =>
    it('needs a reachable PostgreSQL', () => {}));
