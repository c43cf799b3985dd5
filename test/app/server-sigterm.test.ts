/**
 * SIGTERM on the generated example server (generated-example/server.gen.ts, a real OS process on
 * a SQLite file, and on PostgreSQL with its jobs on pg-boss): a request in flight when the signal arrives gets its 200 and its event is
 * stored (an acknowledged event is not lost), a new request during the drain gets 503 with
 * Retry-After and readiness fails, a connection after the drain is refused, a job running at
 * the signal finishes before the process exits, no lock row is left, and the exit code is 0.
 * The example's middleware and payment provider are made slow by EXAMPLE_AUTH_DELAY_MS and
 * EXAMPLE_PROVIDER_DELAY_MS (fixtures/example/auth.ts, payment-provider.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { defaultJobSchema } from '../../src/runtime/jobs/open-job-queue.js';
import { migrate } from '../../src/runtime/persistence/open-store.js';
import { startFixture, type FixtureProcess } from '../support/child-process.js';
import {
  createTestSchema,
  dropSchema,
  PG_TEST_URL,
  shouldRunPostgresTests,
  type TestSchema,
} from '../support/postgres.js';

const SERVER = 'generated-example/server.gen.ts';

/** Where the server stores, and the few reads the test makes of it after the process is gone. */
interface Backend {
  name: string;
  setUp(): Promise<string>;
  tearDown(): Promise<void>;
  /** Event types of an instance's history, in order. */
  events(id: string): Promise<string[]>;
  states(id: string): Promise<string[]>;
  count(table: 'machine_instances' | 'machine_locks'): Promise<number>;
  /** Runs of the example's job actors claimed and not finished. */
  runningJobs(): Promise<number>;
}

function sqliteBackend(): Backend {
  let dir = '';
  const file = () => path.join(dir, 'example.db');
  const query = <T>(sql: string, ...params: unknown[]): T[] => {
    const db = new Database(file(), { readonly: true });
    try {
      return db.prepare(sql).all(...params) as T[];
    } finally {
      db.close();
    }
  };
  return {
    name: 'sqlite file',
    async setUp() {
      dir = mkdtempSync(path.join(tmpdir(), 'mr-sigterm-'));
      return `sqlite:${file()}`;
    },
    async tearDown() {
      rmSync(dir, { recursive: true, force: true });
    },
    events: async (id) =>
      query<{ type: string }>(
        'SELECT type FROM machine_events WHERE root_event_id = ? ORDER BY sequence_number',
        id,
      ).map((row) => row.type),
    states: async (id) =>
      query<{ state_id: string }>(
        'SELECT state_id FROM machine_current_states WHERE root_event_id = ?',
        id,
      ).map((row) => row.state_id),
    count: async (table) => query<{ n: number }>(`SELECT count(*) AS n FROM ${table}`)[0]!.n,
    runningJobs: async () =>
      query<{ n: number }>(
        "SELECT count(*) AS n FROM machine_jobs WHERE name = 'machine-routes.job.run' AND status = 'running'",
      )[0]!.n,
  };
}

function postgresBackend(): Backend {
  let schema: TestSchema | undefined;
  const query = async <T>(sql: string, params: unknown[] = []): Promise<T[]> => {
    const client = new pg.Client({ connectionString: PG_TEST_URL });
    await client.connect();
    try {
      return (await client.query(sql, params)).rows as T[];
    } finally {
      await client.end();
    }
  };
  const table = (name: string) => `"${schema!.schema}".${name}`;
  return {
    name: 'postgres',
    async setUp() {
      schema = await createTestSchema('sigterm');
      await migrate(schema.url);
      return schema.url;
    },
    async tearDown() {
      if (schema === undefined) return;
      await dropSchema(defaultJobSchema(schema.schema));
      await schema.drop();
    },
    events: async (id) =>
      (
        await query<{ type: string }>(
          `SELECT type FROM ${table('machine_events')} WHERE root_event_id = $1 ORDER BY sequence_number`,
          [id],
        )
      ).map((row) => row.type),
    states: async (id) =>
      (
        await query<{ state_id: string }>(
          `SELECT state_id FROM ${table('machine_current_states')} WHERE root_event_id = $1`,
          [id],
        )
      ).map((row) => row.state_id),
    count: async (name) =>
      (await query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table(name)}`))[0]!.n,
    runningJobs: async () =>
      (
        await query<{ n: number }>(
          `SELECT count(*)::int AS n FROM "${defaultJobSchema(schema!.schema)}".job
            WHERE name = 'machine-routes.job.run' AND state = 'active'`,
        )
      )[0]!.n,
  };
}

const backends: Backend[] = [sqliteBackend()];
if (await shouldRunPostgresTests('test/app/server-sigterm.test.ts'))
  backends.push(postgresBackend());

let server: FixtureProcess | null = null;

async function start(databaseUrl: string, env: Record<string, string>): Promise<string> {
  server = startFixture(SERVER, [], {
    PORT: '0',
    MACHINE_DATABASE_URL: databaseUrl,
    MACHINE_SHUTDOWN_TIMEOUT: '10',
    ...env,
  });
  const line = await server.waitForLine((text) => text.includes('listening on '), 45_000);
  return line.slice(line.indexOf('http://'));
}

async function call(
  url: string,
  init: RequestInit & { token?: string } = {},
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const response = await fetch(url, {
    ...init,
    headers: {
      'content-type': 'application/json',
      ...(init.token === undefined ? {} : { authorization: `Bearer ${init.token}` }),
    },
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>),
  };
}

/**
 * A request on a connection of its own (fetch would reuse a kept-alive one, which the drain
 * closes: sending on it races its close, as with any server closing idle connections).
 */
function fresh(
  url: string,
  method = 'GET',
): Promise<{ status: number; headers: Record<string, unknown>; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(url, { method, agent: false }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          headers: response.headers,
          body: JSON.parse(text) as Record<string, unknown>,
        }),
      );
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(backends)('SIGTERM on the generated example server on $name', (backend) => {
  let databaseUrl: string;
  beforeEach(async () => {
    databaseUrl = await backend.setUp();
  });
  afterEach(async () => {
    if (server !== null && server.child.exitCode === null) server.child.kill('SIGKILL');
    await server?.exited;
    server = null;
    await backend.tearDown();
  });

  it('should finish the request in flight, answer 503 meanwhile, leave no lock and exit 0', async () => {
    const url = await start(databaseUrl, { EXAMPLE_AUTH_DELAY_MS: '1500' });
    const created = await call(`${url}/tickets/create`, { method: 'POST' });
    expect(created.status).toBe(201);
    const id = (created.body['data'] as { id: string }).id;
    // Held 1.5 s by the (slow) bearer-token check before its step: in flight at SIGTERM.
    const inFlight = call(`${url}/staff/tickets/${id}/assign`, {
      method: 'POST',
      token: 'staff-token',
      body: JSON.stringify({ payload: { agent: 'ada' } }),
    });
    await sleep(300);
    const signalled = Date.now();
    server!.child.kill('SIGTERM');
    // The drain starts with the signal (the server logs it); at most half a second for the
    // signal to be handled, so a server that logs nothing is tested all the same.
    await Promise.race([
      server!.waitForLine((line) => line.includes('SIGTERM, shutting down')).catch(() => undefined),
      sleep(500),
    ]);
    const refused = await fresh(`${url}/tickets/create`, 'POST');
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.headers['connection']).toBe('close');
    expect(refused.body['message']).toMatch(/shutting down/);
    const ready = await fresh(`${url}/health/ready`);
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({ checks: { shutdown: { status: 'fail' } } });
    expect((await fresh(`${url}/health/live`)).status).toBe(200);
    const answered = await inFlight;
    expect(answered.status).toBe(200);
    expect((answered.body['data'] as { state: string[] }).state).toEqual(['ticket.assigned']);
    expect(await server!.exited).toBe(0);
    const took = Date.now() - signalled;
    console.log(
      `${backend.name}: shutdown with one request in flight: ${took} ms from SIGTERM to exit`,
    );
    expect(took).toBeLessThan(10_000);
    await expect(fetch(`${url}/health/live`)).rejects.toThrow();
    expect(await backend.events(id)).toContain('ASSIGN');
    expect(await backend.count('machine_instances')).toBe(1);
    expect(await backend.count('machine_locks')).toBe(0);
  }, 60_000);

  it('should let a job running at SIGTERM finish before it exits 0', async () => {
    const url = await start(databaseUrl, { EXAMPLE_PROVIDER_DELAY_MS: '2000' });
    const created = await call(`${url}/checkouts/create`, { method: 'POST' });
    const id = (created.body['data'] as { id: string }).id;
    // The payment child is started by a job: wait for it, then pay.
    let card = { status: 0 } as { status: number };
    for (let tries = 0; tries < 100 && card.status !== 200; tries++) {
      await sleep(100);
      card = await call(`${url}/checkouts/${id}/provide-card`, {
        method: 'POST',
        body: JSON.stringify({ payload: { card: '4242424242424242' } }),
      });
    }
    expect(card.status).toBe(200);
    const confirmed = await call(`${url}/checkouts/${id}/confirm-payment`, { method: 'POST' });
    expect(confirmed.status).toBe(200);
    // The capture job (2 s at the provider) claimed: SIGTERM while it runs.
    const deadline = Date.now() + 10_000;
    while ((await backend.runningJobs()) === 0 && Date.now() < deadline) await sleep(50);
    expect(await backend.runningJobs()).toBe(1);
    const signalled = Date.now();
    server!.child.kill('SIGTERM');
    expect(await server!.exited).toBe(0);
    const took = Date.now() - signalled;
    console.log(`${backend.name}: shutdown with one job running: ${took} ms from SIGTERM to exit`);
    expect(await backend.states(id)).toEqual(['checkout.paid']);
    expect(await backend.count('machine_locks')).toBe(0);
  }, 60_000);
});
