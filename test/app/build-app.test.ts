/**
 * The app library the generated `app.gen.ts` calls (`buildFastifyApp`, `buildExpressApp`),
 * tested directly on a config of its own: a real listening server on a real SQLite file. Start-up
 * (store, setup, limits, routes), the opt-in health routes (readiness failing for missing
 * migrations and during shutdown) and the graceful close: a request in flight at `close()` gets
 * its 200 and its event is stored, a new request during the drain gets 503 with Retry-After,
 * a connection after the drain is refused, no lock row is left, a running job finishes within
 * the bound, a request slower than the bound is cut.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { AppConfig, BuiltApp, GeneratedApp } from '../../src/app/app-parts.js';
import { buildExpressApp } from '../../src/app/express-app.js';
import { buildFastifyApp } from '../../src/app/fastify-app.js';
import { defineMachine } from '../../src/runtime/definition/define-machine.js';
import { defineJob } from '../../src/runtime/definition/job.js';
import { ledgerMachine } from '../../fixtures/http/ledger-machine.js';

/** A job actor that takes `ms` milliseconds (an outside call). */
const slowJob = defineJob({
  name: 'slowWork',
  input: z.object({ ms: z.number() }),
  run: async ({ ms }) => {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return { took: ms };
  },
});

/** Starts `slowWork` on WORK and ends in `done` when it completes. */
const workMachine = defineMachine<{ ms: number }>({
  config: {
    id: 'work',
    initial: 'idle',
    context: { ms: 0 },
    states: {
      idle: { on: { WORK: { target: 'working', actions: 'take' } } },
      working: { job: slowJob, input: ['ms'], on: { '@done': 'done', '@fail': 'failed' } },
      done: { type: 'final' },
      failed: { type: 'final' },
    },
  },
  behavior: {
    actions: {
      take: ({ context, event }) => {
        context.ms = Number(event.payload?.['ms'] ?? 0);
      },
    },
  },
  endpoints: ['WORK'],
});

function partsOf(config: AppConfig): GeneratedApp {
  return {
    config,
    machines: () => [ledgerMachine, workMachine],
    mount: (router) => {
      router.register(ledgerMachine, {
        prefix: 'ledgers',
        create: true,
        machineIdFor: ['NOTE', 'ADD', 'CLOSE', 'ARCHIVE', 'REOPEN'],
      });
      router.register(workMachine, { prefix: 'work', create: true, machineIdFor: ['WORK'] });
    },
  };
}

const CONFIG: AppConfig = {
  health: { enabled: true },
  server: { bodyLimit: 2048 },
  setup: (store) => {
    (store as unknown as { database: Database.Database }).database.exec(
      'CREATE TABLE IF NOT EXISTS setup_ran (id INTEGER)',
    );
  },
};

let dir: string;
let file: string;
let built: BuiltApp<unknown> | null = null;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'mr-build-app-'));
  file = path.join(dir, 'app.db');
});
afterEach(async () => {
  await built?.close({ timeoutMs: 1000 });
  built = null;
  rmSync(dir, { recursive: true, force: true });
});

async function json(
  url: string,
  init: RequestInit = {},
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const response = await fetch(url, {
    ...init,
    headers: { 'content-type': 'application/json', ...(init.headers ?? {}) },
  });
  return {
    status: response.status,
    headers: response.headers,
    body: (await response.json()) as Record<string, unknown>,
  };
}

/** Rows of the file, read by a connection of the test's own. */
function query<T>(sql: string, ...params: unknown[]): T[] {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

describe.each([
  ['fastify', buildFastifyApp],
  ['express', buildExpressApp],
] as const)('%s app library', (_name, build) => {
  async function start(config: AppConfig = CONFIG, shutdownTimeout?: number) {
    built = await build(partsOf(config), {
      databaseUrl: `sqlite:${file}`,
      ...(shutdownTimeout === undefined ? {} : { shutdownTimeout }),
    });
    return built.listen(0);
  }

  it('should open the store of the options, run setup, mount the routes with the config limits', async () => {
    const url = await start();
    const created = await json(`${url}/ledgers/create`, { method: 'POST' });
    expect(created.status).toBe(201);
    const id = (created.body['data'] as { id: string }).id;
    const noted = await json(`${url}/ledgers/${id}/note`, {
      method: 'POST',
      body: JSON.stringify({ payload: { n: 1 } }),
    });
    expect(noted.status).toBe(200);
    const tooLarge = await json(`${url}/ledgers/${id}/note`, {
      method: 'POST',
      body: JSON.stringify({ payload: { n: 2, text: 'x'.repeat(4096) } }),
    });
    expect(tooLarge.status).toBe(413);
    expect(query('SELECT count(*) AS n FROM setup_ran')).toEqual([{ n: 0 }]);
    expect(query('SELECT count(*) AS n FROM machine_events WHERE root_event_id = ?', id)).toEqual([
      { n: expect.any(Number) },
    ]);
    expect((await json(`${url}/nowhere`)).status).toBe(404);
  });

  it('should take MACHINE_DATABASE_URL over the config store, and the option over both', async () => {
    const other = `${file}.config.db`;
    const fromEnv = `${file}.env.db`;
    built = await build(partsOf({ ...CONFIG, store: `sqlite:${other}` }), {
      env: { MACHINE_DATABASE_URL: `sqlite:${fromEnv}` },
    });
    expect(built.runtime.settings?.runtime.databaseUrl).toBe(`sqlite:${fromEnv}`);
    await built.close();
    built = await build(partsOf({ ...CONFIG, store: `sqlite:${other}` }), {
      databaseUrl: `sqlite:${file}`,
      env: { MACHINE_DATABASE_URL: `sqlite:${fromEnv}` },
    });
    expect(built.runtime.settings?.runtime.databaseUrl).toBe(`sqlite:${file}`);
    await built.close();
    built = await build(partsOf({ ...CONFIG, store: `sqlite:${other}` }), {});
    expect(built.runtime.settings?.runtime.databaseUrl).toBe(`sqlite:${other}`);
  });

  it('should serve no health route unless the config enables it', async () => {
    const url = await start({ ...CONFIG, health: undefined });
    expect((await fetch(`${url}/health/ready`)).status).toBe(404);
    expect((await fetch(`${url}/health/live`)).status).toBe(404);
  });

  it('should answer liveness and readiness, and fail readiness naming missing migrations', async () => {
    const url = await start({ ...CONFIG, health: { enabled: true, path: '/_probe' } });
    expect(await json(`${url}/_probe/live`)).toMatchObject({
      status: 200,
      body: { status: 'pass' },
    });
    const ready = await json(`${url}/_probe/ready`);
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({
      status: 'pass',
      checks: {
        store: { status: 'pass' },
        migrations: { status: 'pass' },
        shutdown: { status: 'pass' },
      },
    });
    expect(ready.headers.get('cache-control')).toBe('no-store');
    // A store another release rolled back (or restored from an older backup): a version missing.
    const db = new Database(file);
    db.prepare(
      'DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)',
    ).run();
    db.close();
    const unready = await json(`${url}/_probe/ready`);
    expect(unready.status).toBe(503);
    expect(unready.body).toMatchObject({
      status: 'fail',
      checks: {
        store: { status: 'pass' },
        migrations: { status: 'fail' },
        shutdown: { status: 'pass' },
      },
    });
    expect(String(unready.body['message'])).toMatch(
      /^Not ready: migrations: 1 migration\(s\) missing/,
    );
    // The table gone altogether.
    const wiped = new Database(file);
    wiped.exec('DROP TABLE schema_migrations');
    wiped.close();
    expect((await json(`${url}/_probe/ready`)).body).toMatchObject({
      checks: {
        migrations: {
          status: 'fail',
          message: expect.stringMatching(/no schema_migrations table/),
        },
      },
    });
  });

  it('should let a request in flight finish, answer 503 with Retry-After meanwhile, then refuse connections, leaving no lock', async () => {
    const url = await start(CONFIG, 5);
    const created = await json(`${url}/ledgers/create`, { method: 'POST' });
    const id = (created.body['data'] as { id: string }).id;
    // Held 800 ms in the endpoint action, before the send: its step runs during the drain.
    const inFlight = json(`${url}/ledgers/${id}/note`, {
      method: 'POST',
      headers: { 'x-delay-ms': '800' },
      body: JSON.stringify({ payload: { n: 7 } }),
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const closing = built!.shutdown();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(built!.closing).toBe(true);
    const refused = await json(`${url}/ledgers/${id}/note`, {
      method: 'POST',
      body: JSON.stringify({ payload: { n: 8 } }),
    });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.headers.get('connection')).toBe('close');
    expect(refused.body['message']).toMatch(/shutting down/);
    // Readiness says why; liveness still answers.
    const ready = await json(`${url}/health/ready`);
    expect(ready.status).toBe(503);
    expect(ready.body).toMatchObject({ checks: { shutdown: { status: 'fail' } } });
    expect((await json(`${url}/health/live`)).status).toBe(200);
    const answered = await inFlight;
    expect(answered.status).toBe(200);
    expect((answered.body['data'] as { output: { seen: number[] } }).output.seen).toEqual([7]);
    const report = await closing;
    expect(report.cutRequests).toBe(0);
    expect(report.elapsedMs).toBeLessThan(5000);
    await expect(fetch(`${url}/health/live`)).rejects.toThrow();
    // The acknowledged event is stored, the 503'd one is not; no lock row is left.
    const notes = query<{ event_type: string }>(
      "SELECT type AS event_type FROM machine_events WHERE root_event_id = ? AND type = 'NOTE'",
      id,
    );
    expect(notes).toHaveLength(1);
    expect(query('SELECT count(*) AS n FROM machine_locks')).toEqual([{ n: 0 }]);
  });

  it('should let a running job finish within the bound before closing the store', async () => {
    const url = await start(CONFIG, 5);
    const created = await json(`${url}/work/create`, { method: 'POST' });
    const id = (created.body['data'] as { id: string }).id;
    const sent = await json(`${url}/work/${id}/work`, {
      method: 'POST',
      body: JSON.stringify({ payload: { ms: 1000 } }),
    });
    expect(sent.status).toBe(200);
    // The queue polls every second: wait until the job runs.
    const deadline = Date.now() + 5000;
    while (
      query<{ n: number }>('SELECT count(*) AS n FROM machine_jobs WHERE attempts > 0')[0]!.n ===
        0 &&
      Date.now() < deadline
    )
      await new Promise((resolve) => setTimeout(resolve, 50));
    const report = await built!.shutdown();
    expect(report.cutRequests).toBe(0);
    const state = query<{ state: string }>(
      'SELECT state_id AS state FROM machine_current_states WHERE root_event_id = ?',
      id,
    );
    expect(state.map((row) => row.state)).toEqual(['work.done']);
    expect(query('SELECT count(*) AS n FROM machine_locks')).toEqual([{ n: 0 }]);
  });

  it('should cut a request still in flight at the bound, and close within it', async () => {
    const url = await start(CONFIG, 0.5);
    const created = await json(`${url}/ledgers/create`, { method: 'POST' });
    const id = (created.body['data'] as { id: string }).id;
    const inFlight = fetch(`${url}/ledgers/${id}/note`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-delay-ms': '3000' },
      body: JSON.stringify({ payload: { n: 9 } }),
    }).then(
      (response) => response.status,
      () => 'cut',
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    const started = Date.now();
    const report = await built!.shutdown();
    expect(report.cutRequests).toBe(1);
    expect(Date.now() - started).toBeLessThan(1500);
    expect(await inFlight).toBe('cut');
  });
});
