/**
 * The generated client's interceptors and typed errors against the example server listening on
 * 127.0.0.1 (SQLite file): a tracing header and a log of every try, a bearer token refreshed on
 * 401 with one retry (and no second one when the refreshed token is refused too), and a
 * `catch` narrowing the thrown error by status without a cast.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../../generated-example/app.gen.js';
import {
  createClient,
  isResponseError,
  type ClientInterceptor,
} from '../../generated-example/client.gen.js';

describe('generated client interceptors against the example server', () => {
  let dir: string;
  let app: App;
  let baseUrl: string;
  /** `traceparent` of each request put on the wire, in order. */
  const traced: (string | undefined)[] = [];
  const tracingFetch: typeof fetch = (url, init) => {
    traced.push((init?.headers as Record<string, string> | undefined)?.['traceparent']);
    return fetch(url, init);
  };

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'client-interceptors-'));
    app = await buildApp({ databaseUrl: `sqlite:${path.join(dir, 'store.db')}` });
    baseUrl = await app.listen(0);
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A ticket created on the public registration, assigned on the staff one (auth:api). */
  async function ticket(): Promise<string> {
    const created = await createClient({ baseUrl }).ticket.create({ throwOnError: true });
    return created.body.data.id;
  }

  it('should refresh the token on 401 and send the request once more', async () => {
    const machineId = await ticket();
    let token = 'expired-token';
    let refreshed = 0;
    const log: string[] = [];
    const refresher: ClientInterceptor = {
      request: (request) => {
        request.headers['authorization'] = `Bearer ${token}`;
      },
      response: (response) => {
        if (response.status !== 401) return undefined;
        refreshed += 1;
        token = 'staff-token';
        return 'retry';
      },
    };
    const logger: ClientInterceptor = {
      request: (request) => {
        request.headers['traceparent'] =
          `00-${'a'.repeat(31)}${request.attempt}-${'b'.repeat(16)}-01`;
      },
      response: (response, request) => {
        log.push(`${request.route} #${request.attempt} ${response.status}`);
      },
    };
    const client = createClient({
      baseUrl,
      fetch: tracingFetch,
      interceptors: [refresher, logger],
    });
    const before = traced.length;

    const assigned = await client.ticketStaff.assign({ machineId, payload: { agent: 'ada' } });

    expect(assigned.status).toBe(200);
    expect(refreshed).toBe(1);
    // The logger after the refresher saw the 401 too, and the retry went through both again.
    expect(log).toEqual([
      'POST /staff/tickets/{machineId}/assign #0 401',
      'POST /staff/tickets/{machineId}/assign #1 200',
    ]);
    expect(traced.slice(before)).toEqual([
      `00-${'a'.repeat(31)}0-${'b'.repeat(16)}-01`,
      `00-${'a'.repeat(31)}1-${'b'.repeat(16)}-01`,
    ]);
  });

  it('should retry once only: a refreshed token refused again is the answer', async () => {
    const machineId = await ticket();
    let tries = 0;
    const client = createClient({
      baseUrl,
      auth: () => 'nobody',
      interceptors: [
        {
          request: () => void (tries += 1),
          response: (r) => (r.status === 401 ? 'retry' : undefined),
        },
      ],
    });

    const refused = await client.ticketStaff.resolve({ machineId });

    expect([refused.status, tries]).toEqual([401, 2]);
  });

  it('should let a catch narrow the thrown error by status, body typed, without a cast', async () => {
    const client = createClient({ baseUrl, throwOnError: true });
    const created = await client.order.create();
    const machineId = created.body.data.id;

    const outcome = async (send: () => Promise<unknown>): Promise<string> => {
      try {
        await send();
        return 'ok';
      } catch (error) {
        if (!isResponseError(error)) throw error;
        if (error.status === 422) return `422 ${Object.keys(error.body.errors ?? {}).join(',')}`;
        if (error.status === 423) return `423 ${error.body.data.state.join(',')}`;
        return `${error.status} ${error.body.message}`;
      }
    };

    expect(await outcome(() => client.order.submit({ machineId, payload: { amount: 0 } }))).toBe(
      '422 payload.amount',
    );
    expect(await outcome(() => client.order.approve({ machineId }))).toMatch(/^409 /);
    expect(
      await outcome(() => client.order.approve({ machineId: '01J0000000000000000000000Z' })),
    ).toMatch(/^404 /);
  });
});
