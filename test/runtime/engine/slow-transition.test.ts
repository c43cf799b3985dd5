/**
 * Two server processes on one store (a SQLite file, PostgreSQL): while process A runs a slow
 * transition on instance X, process B answers everything else normally and at once: its event
 * loop is not frozen (a route touching no store), creates succeed, another instance Y takes
 * events, and X itself answers 423 (GET: 200) with its last committed state. Contention is per
 * instance; no process waits on another's transition (docs/persistence.md "Locks").
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFixture, type FixtureProcess } from '../../support/child-process.js';
import { allBackends } from '../../support/stores.js';

const SERVER = fileURLToPath(new URL('./fixtures/slow-server.ts', import.meta.url));
const backends = (await allBackends('slow-transition')).filter(
  (b) => b.name === 'sqlite file' || b.name === 'postgres',
);

/** How long A's transition runs, and the most any answer of B may take meanwhile. */
const SLOW_MS = 4000;
const PROMPT_MS = 1000;

interface Envelope {
  data: { id: string; state: string[]; output: { count: number }; isProcessing: boolean };
}

async function startServer(url: string): Promise<{ process: FixtureProcess; base: string }> {
  const server = startFixture(SERVER, ['--url', url]);
  const ready = await server.waitForLine((line) => line.startsWith('READY '), 30_000);
  return { process: server, base: `http://127.0.0.1:${ready.slice('READY '.length)}` };
}

async function call(
  base: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Envelope; ms: number }> {
  const started = performance.now();
  const response = await fetch(`${base}${path}`, {
    method,
    ...(body === undefined
      ? {}
      : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  const json = (await response.json()) as Envelope;
  return { status: response.status, body: json, ms: performance.now() - started };
}

describe.each(backends)('a slow transition in another process ($name)', (backend) => {
  const servers: FixtureProcess[] = [];
  beforeAll(() => backend.setUp());
  afterAll(async () => {
    for (const server of servers) server.child.kill('SIGTERM');
    await Promise.all(servers.map((server) => server.exited));
    await backend.tearDown();
  });

  it('should hold only its instance: B answers other instances, creates and store-free routes at once, X with 423 / 200 and its last committed state', async () => {
    const a = await startServer(backend.url());
    servers.push(a.process);
    const b = await startServer(backend.url());
    servers.push(b.process);

    const x = (await call(a.base, 'POST', '/slow/create')).body.data.id;
    const y = (await call(a.base, 'POST', '/slow/create')).body.data.id;
    expect((await call(a.base, 'POST', `/slow/${x}/inc`)).body.data.output).toEqual({ count: 1 });
    // B warmed up: connections, statements, JIT.
    for (let round = 0; round < 3; round += 1) {
      await call(b.base, 'GET', '/ping');
      await call(b.base, 'GET', `/slow/${y}/peek`);
    }

    const slow = call(a.base, 'POST', `/slow/${x}/slow`, { payload: { ms: SLOW_MS } });
    await a.process.waitForLine((line) => line === 'SLOW');
    const started = performance.now();

    const ping = await call(b.base, 'GET', '/ping');
    const created = await call(b.base, 'POST', '/slow/create');
    const other = await call(b.base, 'POST', `/slow/${y}/inc`);
    const refused = await call(b.base, 'POST', `/slow/${x}/inc`);
    const read = await call(b.base, 'GET', `/slow/${x}/peek`);
    const during = performance.now() - started;

    const done = await slow;
    // Everything above happened while A was still inside its transition.
    expect(during).toBeLessThan(SLOW_MS - 500);
    expect(done.status).toBe(200);
    expect(done.body.data.output).toEqual({ count: 2 });

    expect(ping.status).toBe(200);
    expect(ping.ms).toBeLessThan(PROMPT_MS);
    expect(created.status).toBe(201);
    expect(created.ms).toBeLessThan(PROMPT_MS);
    expect(other.status).toBe(200);
    expect(other.body.data.output).toEqual({ count: 1 });
    expect(other.ms).toBeLessThan(PROMPT_MS);
    // X: refused before processing, with the state committed before A's transition began.
    expect(refused.status).toBe(423);
    expect(refused.body.data).toMatchObject({ id: x, output: { count: 1 }, isProcessing: true });
    expect(refused.ms).toBeLessThan(PROMPT_MS);
    expect(read.status).toBe(200);
    expect(read.body.data).toMatchObject({ id: x, output: { count: 1 }, isProcessing: true });
    expect(read.ms).toBeLessThan(PROMPT_MS);

    // X takes events again once A committed, from either process.
    expect((await call(b.base, 'POST', `/slow/${x}/inc`)).body.data.output).toEqual({ count: 3 });
  }, 60_000);
});
