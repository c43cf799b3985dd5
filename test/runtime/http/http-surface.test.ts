/**
 * The instance's HTTP surface (docs/http.md "OPTIONS, Allow and Machine-Events", "Conditional
 * requests"): OPTIONS answers with Allow and Machine-Events, Allow on 405 and on 409 refusals,
 * ETag on reads and event answers, If-None-Match 304, If-Match 412 written to nothing (also
 * under a burst of concurrent sends naming one version). Real listening servers of both
 * adapters, on a SQLite file and on PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  InMemoryJobQueue,
  MachineRouter,
  MachineRuntime,
  defineMachine,
  type Middleware,
  type Store,
} from '../../../src/runtime/index.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';
import { send, startServer, type AdapterName, type TestServer } from './support/servers.js';

type OrderContext = { total: number; notes: number };

const order = defineMachine<OrderContext>({
  config: {
    id: 'order',
    initial: 'draft',
    context: { total: 0, notes: 0 },
    on: { NOTE: { actions: 'note' } },
    states: {
      draft: {
        on: { SUBMIT: { target: 'submitted', actions: 'storeTotal' }, CANCEL: 'cancelled' },
      },
      submitted: { on: { APPROVE: 'approved', CANCEL: 'cancelled' } },
      approved: { type: 'final' },
      cancelled: { type: 'final' },
    },
  },
  behavior: {
    actions: {
      storeTotal: ({ context, event }) => {
        context.total = Number(event.payload?.['amount'] ?? 0);
      },
      note: ({ context }) => {
        context.notes += 1;
      },
    },
  },
  endpoints: ['SUBMIT', 'APPROVE', { CANCEL: { method: 'DELETE' } }, 'NOTE'],
});

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('http_surface');
if (postgres) backends.push(postgres);

type Envelope = { data: { id: string; state: string[]; isProcessing: boolean } };

/** Middleware `auth`: a request without `authorization: Bearer ok` is 401. */
const auth: Middleware = (request) =>
  request.headers['authorization'] === 'Bearer ok'
    ? undefined
    : { status: 401, body: { message: 'Unauthenticated.' } };

describe.each(backends)('the HTTP surface of an instance on $name', (backend) => {
  let store: Store;
  let runtime: MachineRuntime;
  const logged: unknown[] = [];

  beforeAll(async () => {
    await backend.setUp();
    store = await backend.open();
    runtime = new MachineRuntime({ store, jobs: new InMemoryJobQueue() });
  });
  afterAll(async () => {
    await runtime.close();
    await backend.tearDown();
  });

  describe.each<AdapterName>(['fastify', 'express'])('over %s', (adapter) => {
    let server: TestServer;
    const call = (
      method: string,
      path: string,
      options: { body?: unknown; headers?: Record<string, string> } = {},
    ) => send(server.url, method, path, options);
    const create = async (): Promise<string> => {
      const response = await call('POST', '/orders/create');
      expect(response.status).toBe(201);
      return (response.body as Envelope).data.id;
    };
    const sequenceOf = async (id: string): Promise<number> =>
      (await runtime.read(order, id)).snapshot.sequence;

    beforeAll(async () => {
      const router = new MachineRouter({
        runtime,
        middleware: { auth },
        logger: { error: (_message, meta) => logged.push(meta.error) },
      });
      router.register(order, {
        prefix: 'orders',
        create: true,
        machineIdFor: ['SUBMIT', 'APPROVE', 'CANCEL', 'NOTE'],
        reads: { status: null },
      });
      router.register(order, {
        prefix: 'private/orders',
        name: 'private_order',
        middleware: ['auth'],
        only: ['SUBMIT'],
        machineIdFor: ['SUBMIT'],
      });
      server = await startServer(adapter, [router], {
        error: (_message, meta) => logged.push(meta.error),
      });
    });
    afterAll(async () => {
      await server.close();
      expect(logged).toEqual([]);
    });

    it('should answer OPTIONS on the instance path with its events of now', async () => {
      const id = await create();
      const draft = await call('OPTIONS', `/orders/${id}`);
      expect(draft.status).toBe(204);
      expect(draft.body).toBeUndefined();
      expect(draft.headers.get('allow')).toBe('OPTIONS');
      expect(draft.headers.get('machine-events')).toBe('CANCEL, NOTE, SUBMIT');

      await call('POST', `/orders/${id}/submit`, { body: { payload: { amount: 5 } } });
      const submitted = await call('OPTIONS', `/orders/${id}/approve`);
      expect(submitted.status).toBe(204);
      expect(submitted.headers.get('allow')).toBe('POST, OPTIONS');
      expect(submitted.headers.get('machine-events')).toBe('APPROVE, CANCEL, NOTE');

      await call('POST', `/orders/${id}/approve`);
      const final = await call('OPTIONS', `/orders/${id}/status`);
      expect(final.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
      expect(final.headers.get('machine-events')).toBe('');
    });

    it('should answer OPTIONS on paths without an instance with Allow only', async () => {
      const response = await call('OPTIONS', '/orders/create');
      expect(response.status).toBe(204);
      expect(response.headers.get('allow')).toBe('POST, OPTIONS');
      expect(response.headers.has('machine-events')).toBe(false);
    });

    it('should answer OPTIONS of an unknown instance 404, and run the routes middleware first', async () => {
      const unknown = await call('OPTIONS', '/orders/01ARZ3NDEKTSV4RRFFQ69G5FAV');
      expect(unknown.status).toBe(404);
      expect(unknown.body).toEqual({ message: 'Machine not found.' });
      const id = await create();
      const anonymous = await call('OPTIONS', `/private/orders/${id}/submit`);
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.has('machine-events')).toBe(false);
      const known = await call('OPTIONS', `/private/orders/${id}/submit`, {
        headers: { authorization: 'Bearer ok' },
      });
      expect(known.status).toBe(204);
      expect(known.headers.get('machine-events')).toBe('CANCEL, NOTE, SUBMIT');
    });

    it('should list OPTIONS in the Allow of 405 answers', async () => {
      const id = await create();
      const wrong = await call('GET', `/orders/${id}/submit`);
      expect(wrong.status).toBe(405);
      expect(wrong.headers.get('allow')).toBe('POST, OPTIONS');
      const bare = await call('GET', `/orders/${id}`);
      expect(bare.status).toBe(405);
      expect(bare.headers.get('allow')).toBe('OPTIONS');
    });

    it('should add Allow and Machine-Events to a 409 of the state, its body unchanged', async () => {
      const id = await create();
      const refused = await call('POST', `/orders/${id}/approve`);
      expect(refused.status).toBe(409);
      expect(refused.body).toEqual({ message: expect.any(String) });
      expect(Object.keys(refused.body as object)).toEqual(['message']);
      expect(refused.headers.get('allow')).toBe('POST, OPTIONS');
      expect(refused.headers.get('machine-events')).toBe('CANCEL, NOTE, SUBMIT');
    });

    it('should tag reads with the version and answer 304 while it holds', async () => {
      const id = await create();
      const first = await call('GET', `/orders/${id}/status`);
      expect(first.status).toBe(200);
      const etag = first.headers.get('etag');
      expect(etag).toBe(`"${id}:${await sequenceOf(id)}"`);

      const same = await call('GET', `/orders/${id}/status`, {
        headers: { 'if-none-match': etag! },
      });
      expect(same.status).toBe(304);
      expect(same.body).toBeUndefined();
      expect(same.headers.get('etag')).toBe(etag);
      // Weak comparison (RFC 9110 §13.1.2): a W/ form and a list match too.
      for (const header of [`W/${etag!}`, `"other", ${etag!}`, '*']) {
        const matched = await call('GET', `/orders/${id}/status`, {
          headers: { 'if-none-match': header },
        });
        expect(matched.status).toBe(304);
      }

      const sent = await call('POST', `/orders/${id}/note`);
      expect(sent.status).toBe(200);
      const after = sent.headers.get('etag');
      expect(after).toBe(`"${id}:${await sequenceOf(id)}"`);
      expect(after).not.toBe(etag);
      const changed = await call('GET', `/orders/${id}/status`, {
        headers: { 'if-none-match': etag! },
      });
      expect(changed.status).toBe(200);
      expect(changed.headers.get('etag')).toBe(after);
    });

    it('should give no tag and no 304 while the instance is processing', async () => {
      const id = await create();
      const etag = (await call('GET', `/orders/${id}/status`)).headers.get('etag')!;
      const busy = await runtime.withLock(id, () =>
        call('GET', `/orders/${id}/status`, { headers: { 'if-none-match': etag } }),
      );
      expect(busy.status).toBe(200);
      expect((busy.body as Envelope).data.isProcessing).toBe(true);
      expect(busy.headers.has('etag')).toBe(false);
    });

    it('should send with a current If-Match and refuse a stale one with 412, writing nothing', async () => {
      const id = await create();
      const etag = (await call('GET', `/orders/${id}/status`)).headers.get('etag')!;
      const sent = await call('POST', `/orders/${id}/submit`, {
        body: { payload: { amount: 7 } },
        headers: { 'if-match': etag },
      });
      expect(sent.status).toBe(200);
      const current = sent.headers.get('etag')!;
      const before = await sequenceOf(id);
      expect(current).toBe(`"${id}:${before}"`);

      for (const stale of [etag, `W/${current}`, '"garbage"', 'not a tag']) {
        const refused = await call('POST', `/orders/${id}/note`, {
          headers: { 'if-match': stale },
        });
        expect(refused.status).toBe(412);
        expect(refused.body).toEqual({ message: expect.any(String), etag: current });
        expect(refused.headers.get('etag')).toBe(current);
      }
      expect(await sequenceOf(id)).toBe(before);
      expect((await runtime.read(order, id)).snapshot.context).toEqual({ total: 7, notes: 0 });

      const any = await call('POST', `/orders/${id}/note`, { headers: { 'if-match': '*' } });
      expect(any.status).toBe(200);
      const listed = await call('POST', `/orders/${id}/note`, {
        headers: { 'if-match': `"other", ${any.headers.get('etag')!}` },
      });
      expect(listed.status).toBe(200);
      // A precondition is checked after the instance is found: an unknown one stays 404.
      const unknown = await call('POST', '/orders/01ARZ3NDEKTSV4RRFFQ69G5FAV/note', {
        headers: { 'if-match': current },
      });
      expect(unknown.status).toBe(404);
    });

    it('should let exactly one of a burst naming one version through', async () => {
      const id = await create();
      const etag = (await call('GET', `/orders/${id}/status`)).headers.get('etag')!;
      const before = await sequenceOf(id);
      const answers = await Promise.all(
        Array.from({ length: 20 }, () =>
          call('POST', `/orders/${id}/note`, { headers: { 'if-match': etag } }),
        ),
      );
      const statuses = answers.map((answer) => answer.status);
      expect(statuses.filter((status) => status === 200)).toHaveLength(1);
      // The others saw the new version (412) or met the lock of the one that went through (423).
      expect(statuses.every((status) => [200, 412, 423].includes(status))).toBe(true);
      const after = await runtime.read(order, id);
      expect(after.snapshot.context['notes']).toBe(1);
      const winner = answers.find((answer) => answer.status === 200)!;
      expect(winner.headers.get('etag')).toBe(`"${id}:${after.snapshot.sequence}"`);
      expect(after.snapshot.sequence).toBeGreaterThan(before);
    });
  });
});
