/**
 * The generated Fastify app's logging: by default it gives Fastify no logger, since Fastify's
 * logger is pino, which every start would load (about 25 modules), and unexpected errors of the
 * runtime and the routes are still logged, as JSON lines on stderr. `logger` brings pino back.
 * The module checks read Node's own `require.cache` (Fastify and pino are CommonJS); this file
 * runs in a process of its own, and its first test runs before anything here passes a logger.
 */
import { createRequire } from 'node:module';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { buildApp, type App } from '../../generated-example/app.gen.js';
import { operatorAuth } from '../../fixtures/example/admin-auth.js';

const loadedPino = (): string[] =>
  Object.keys(createRequire(import.meta.url).cache).filter((file) =>
    file.includes('/node_modules/pino/'),
  );

let app: App | undefined;

afterEach(async () => {
  vi.restoreAllMocks();
  await app?.close();
  app = undefined;
});

/** A staff route whose `auth` middleware throws: an unexpected error, answered 500. */
async function failingStaffRoute(built: App): Promise<Response> {
  const baseUrl = await built.listen(0);
  return fetch(`${baseUrl}/staff/tickets/01J00000000000000000000000/assign`, {
    method: 'POST',
    headers: {
      authorization: 'Bearer staff-token',
      'content-type': 'application/json',
      traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01`,
    },
    body: '{}',
  });
}

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

// The example's admin group needs its `operator` check: an app missing it refuses to start.
const throwingAuth = {
  auth: () => {
    throw new Error('auth backend down');
  },
  operator: operatorAuth(),
};

describe('the generated Fastify app', () => {
  it('should start without loading pino, and log an unexpected route error on stderr with its request and trace ids', async () => {
    const written: string[] = [];
    app = await buildApp({ databaseUrl: 'sqlite::memory:', middleware: throwingAuth });
    expect(loadedPino()).toEqual([]);
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    const response = await failingStaffRoute(app);
    expect(response.status).toBe(500);
    const lines = written.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 50,
        route: 'ticket_staff.assign',
        reqId: expect.any(String),
        trace_id: TRACE_ID,
        err: expect.objectContaining({ message: 'auth backend down' }),
      }),
    );
    expect(loadedPino()).toEqual([]);
  });

  it('should log through Fastify (pino) when given a logger', async () => {
    const stream = { lines: [] as string[], write: (line: string) => void stream.lines.push(line) };
    app = await buildApp({
      databaseUrl: 'sqlite::memory:',
      middleware: throwingAuth,
      logger: { level: 'warn', stream },
    });
    expect(loadedPino()).not.toEqual([]);
    const response = await failingStaffRoute(app);
    expect(response.status).toBe(500);
    const lines = stream.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    // request.log: the request's id is bound.
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 50,
        reqId: expect.any(String),
        trace_id: TRACE_ID,
        err: expect.objectContaining({ message: 'auth backend down' }),
      }),
    );
  });
});
