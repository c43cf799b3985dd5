/**
 * Idempotency-Key on command endpoints, over HTTP on a SQLite file and PostgreSQL, in one
 * process and across two server processes sharing the store: a retry answers the stored first
 * response and sends no second event, a reused key with another body is 422, a key in flight is
 * 409, keys expire, requests that committed nothing free their key, and the stored response
 * commits with the event.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearerAuth } from '../../../fixtures/http/auth.js';
import { ledgerMachine } from '../../../fixtures/http/ledger-machine.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { MachineRouter } from '../../../src/runtime/http/machine-router.js';
import { planRoutes } from '../../../src/runtime/http/plan-routes.js';
import type { RegistrationOptions } from '../../../src/runtime/http/types.js';
import { IdempotencyClaimLostError } from '../../../src/runtime/persistence/idempotency.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';
import { useServerProcesses } from './support/server-processes.js';
import { send, startServer, type TestServer } from './support/servers.js';

const SERVER = fileURLToPath(new URL('./fixtures/ledger-server.ts', import.meta.url));

const LEDGERS: RegistrationOptions = {
  prefix: 'ledgers',
  create: true,
  machineIdFor: ['NOTE', 'ADD', 'CLOSE', 'ARCHIVE', 'REOPEN'],
  reads: true,
  idempotency: true,
};
const SHORT_LIVED: RegistrationOptions = {
  prefix: 'brief',
  name: 'brief',
  machineIdFor: ['NOTE'],
  only: ['NOTE'],
  idempotency: { events: ['NOTE'], ttl: 1 },
};

/** Idempotency-Key behind route middleware: the middleware answers before any key is looked at. */
const SECURED: RegistrationOptions = {
  prefix: 'secure/ledgers',
  name: 'secure_ledger',
  create: true,
  machineIdFor: ['NOTE'],
  only: ['NOTE'],
  idempotency: true,
  middleware: ['auth:api'],
};
const TOKEN = { authorization: 'Bearer api-token' };

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('idempotency-http');
if (postgres) backends.push(postgres);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('idempotency option', () => {
  it('should plan idempotency on command routes only, per event when listed', () => {
    const all = planRoutes(ledgerMachine, LEDGERS);
    expect(all.filter((route) => route.idempotency).map((route) => route.name)).toEqual([
      'ledger.create',
      'ledger.note',
      'ledger.add',
      'ledger.close',
      'ledger.archive',
      'ledger.reopen',
    ]);
    expect(all.find((route) => route.read !== null)?.idempotency).toBeUndefined();
    const listed = planRoutes(ledgerMachine, { ...LEDGERS, idempotency: { events: ['ADD'] } });
    expect(listed.filter((route) => route.idempotency).map((route) => route.name)).toEqual([
      'ledger.add',
    ]);
    expect(planRoutes(ledgerMachine, SHORT_LIVED)[0]?.idempotency).toEqual({ ttl: 1 });
  });

  it('should refuse unknown keys, bad ttl and unknown events naming the fix', () => {
    expect(() =>
      planRoutes(ledgerMachine, { ...LEDGERS, idempotency: { tll: 5 } as never }),
    ).toThrow(/unknown key 'tll' \(did you mean 'ttl'\?\) in 'idempotency'/);
    expect(() => planRoutes(ledgerMachine, { ...LEDGERS, idempotency: { ttl: -1 } })).toThrow(
      /'idempotency.ttl' must be a positive whole number of seconds/,
    );
    expect(() =>
      planRoutes(ledgerMachine, { ...LEDGERS, idempotency: { events: ['NOPE'] } }),
    ).toThrow(/'idempotency.events' names unknown event type 'NOPE'/);
  });
});

describe.each(backends)('Idempotency-Key over HTTP on $name', (backend) => {
  let runtime: MachineRuntime;
  let server: TestServer;
  let authCalls = 0;

  beforeAll(async () => {
    await backend.setUp();
    runtime = await MachineRuntime.open({
      databaseUrl: backend.url(),
      migrate: true,
      worker: false,
    });
    const auth = bearerAuth({ 'api-token': ['api'] });
    const router = new MachineRouter({
      runtime,
      middleware: {
        auth: (request, args) => {
          authCalls++;
          return auth(request, args);
        },
      },
    });
    router.register(ledgerMachine, LEDGERS);
    router.register(ledgerMachine, SHORT_LIVED);
    router.register(ledgerMachine, SECURED);
    server = await startServer('fastify', [router], { error: () => {} });
  });
  afterAll(async () => {
    await server?.close();
    await runtime?.close();
    await backend.tearDown();
  });

  const create = async (): Promise<string> => {
    const created = await send(server.url, 'POST', '/ledgers/create');
    expect(created.status).toBe(201);
    return (created.body as { data: { id: string } }).data.id;
  };
  const note = (id: string, n: number, key?: string, headers: Record<string, string> = {}) =>
    send(server.url, 'POST', `/ledgers/${id}/note`, {
      body: { payload: { n } },
      headers: key === undefined ? headers : { ...headers, 'idempotency-key': key },
    });
  const context = async (id: string) => (await runtime.store.load(id))!.context;
  const noteEvents = async (id: string) =>
    (await runtime.store.history(id)).filter((record) => record.type === 'NOTE').length;

  it('should answer a retry with the stored first response and send no second event', async () => {
    const id = await create();
    const first = await note(id, 1, 'key-1');
    expect(first.status).toBe(200);
    expect(first.headers.get('idempotency-replayed')).toBeNull();
    const retry = await note(id, 1, 'key-1');
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual(first.body);
    expect(retry.headers.get('idempotency-replayed')).toBe('true');
    expect(await context(id)).toMatchObject({ notes: 1, seen: [1] });
    expect(await noteEvents(id)).toBe(1);
    // Without a key, each request is an event (the spec's behaviour, unchanged).
    await note(id, 2);
    await note(id, 2);
    expect(await context(id)).toMatchObject({ notes: 3, seen: [1, 2, 2] });
  });

  it('should replay the first response even after the instance moved on', async () => {
    const id = await create();
    const first = await note(id, 1, 'early');
    await note(id, 2, 'later');
    const replay = await note(id, 1, 'early');
    expect(replay.body).toEqual(first.body);
    expect((replay.body as { data: { output: { notes: number } } }).data.output.notes).toBe(1);
  });

  it('should replay the ETag of the first answer, the version it showed', async () => {
    const id = await create();
    const first = await note(id, 1, 'tagged');
    const etag = first.headers.get('etag');
    expect(etag).toMatch(new RegExp(`^"${id}:\\d+"$`));
    await note(id, 2, 'moved-on');
    const current = await send(server.url, 'GET', `/ledgers/${id}`);
    expect(current.headers.get('etag')).not.toBe(etag);
    const replay = await note(id, 1, 'tagged');
    expect(replay.headers.get('idempotency-replayed')).toBe('true');
    expect(replay.headers.get('etag')).toBe(etag);
    // The tag names that version: sending on it now is refused, as it would be after the first.
    const stale = await send(server.url, 'POST', `/ledgers/${id}/note`, {
      body: { payload: { n: 3 } },
      headers: { 'if-match': etag! },
    });
    expect(stale.status).toBe(412);
    // A chain of guarded sends from a replay: the replayed tag of the latest answer matches.
    const latest = await note(id, 2, 'moved-on');
    expect(latest.headers.get('idempotency-replayed')).toBe('true');
    const chained = await send(server.url, 'POST', `/ledgers/${id}/note`, {
      body: { payload: { n: 4 } },
      headers: { 'if-match': latest.headers.get('etag')! },
    });
    expect(chained.status).toBe(200);
    // An answer without a version (a validation guard's 422) replays without one.
    const add = () =>
      send(server.url, 'POST', `/ledgers/${id}/add`, {
        body: { payload: { amount: 500 } },
        headers: { 'idempotency-key': 'untagged' },
      });
    expect((await add()).headers.get('etag')).toBeNull();
    const refusedAgain = await add();
    expect(refusedAgain.headers.get('idempotency-replayed')).toBe('true');
    expect(refusedAgain.headers.get('etag')).toBeNull();
  });

  it('should answer 422 for the same key with a different body', async () => {
    const id = await create();
    expect((await note(id, 1, 'reused')).status).toBe(200);
    const other = await note(id, 2, 'reused');
    expect(other.status).toBe(422);
    expect((other.body as { message: string }).message).toMatch(
      /Idempotency-Key 'reused' was already used with a different request on route ledger.note/,
    );
    expect(await context(id)).toMatchObject({ notes: 1, seen: [1] });
  });

  it('should scope a key to its route and instance', async () => {
    const [a, b] = [await create(), await create()];
    expect((await note(a, 1, 'shared')).status).toBe(200);
    expect((await note(b, 1, 'shared')).status).toBe(200);
    const archived = await send(server.url, 'POST', `/ledgers/${a}/archive`, {
      headers: { 'idempotency-key': 'shared' },
    });
    expect(archived.status).toBe(200);
    expect(archived.headers.get('idempotency-replayed')).toBeNull();
    expect(await context(a)).toMatchObject({ notes: 1 });
    expect(await context(b)).toMatchObject({ notes: 1 });
  });

  it('should answer 409 while the first request with the key is in flight', async () => {
    const id = await create();
    const slow = note(id, 7, 'flight', { 'x-delay-ms': '600' });
    await sleep(150);
    const during = await note(id, 7, 'flight');
    expect(during.status).toBe(409);
    expect((during.body as { message: string }).message).toMatch(
      /Idempotency-Key 'flight' is still being processed/,
    );
    const first = await slow;
    expect(first.status).toBe(200);
    const after = await note(id, 7, 'flight');
    expect(after.body).toEqual(first.body);
    expect(await context(id)).toMatchObject({ notes: 1, seen: [7] });
  });

  it('should store a validation guard refusal (its history committed) and replay it', async () => {
    const id = await create();
    const add = (amount: number) =>
      send(server.url, 'POST', `/ledgers/${id}/add`, {
        body: { payload: { amount } },
        headers: { 'idempotency-key': `add-${amount}` },
      });
    const refused = await add(500);
    expect(refused.status).toBe(422);
    const historyLength = (await runtime.store.history(id)).length;
    const again = await add(500);
    expect(again.status).toBe(422);
    expect(again.body).toEqual(refused.body);
    expect(again.headers.get('idempotency-replayed')).toBe('true');
    expect((await runtime.store.history(id)).length).toBe(historyLength);
  });

  it('should free the key of a request that committed nothing', async () => {
    const id = await create();
    const invalid = await send(server.url, 'POST', `/ledgers/${id}/note`, {
      body: { payload: { n: 'x' } },
      headers: { 'idempotency-key': 'fix-me' },
    });
    expect(invalid.status).toBe(422);
    // The corrected request may reuse the key: the first one was refused before the send.
    const fixed = await note(id, 3, 'fix-me');
    expect(fixed.status).toBe(200);
    expect(fixed.headers.get('idempotency-replayed')).toBeNull();
    const unknown = await note('01ARZ3NDEKTSV4RRFFQ69G5FAV', 1, 'missing');
    expect(unknown.status).toBe(404);
  });

  it('should create one instance for a retried create', async () => {
    const first = await send(server.url, 'POST', '/ledgers/create', {
      headers: { 'idempotency-key': 'create-1' },
    });
    const retry = await send(server.url, 'POST', '/ledgers/create', {
      headers: { 'idempotency-key': 'create-1' },
    });
    expect(first.status).toBe(201);
    expect(retry.body).toEqual(first.body);
  });

  it('should forget a key after its ttl', async () => {
    const id = await create();
    const brief = () =>
      send(server.url, 'POST', `/brief/${id}/note`, {
        body: { payload: { n: 9 } },
        headers: { 'idempotency-key': 'brief' },
      });
    await brief();
    expect((await brief()).headers.get('idempotency-replayed')).toBe('true');
    await sleep(1_100);
    const later = await brief();
    expect(later.headers.get('idempotency-replayed')).toBeNull();
    expect(await context(id)).toMatchObject({ notes: 2, seen: [9, 9] });
  });

  it('should refuse a malformed key with 400', async () => {
    const id = await create();
    expect((await note(id, 1, 'x'.repeat(256))).status).toBe(400);
    expect((await note(id, 1, '"quoted-key"')).status).toBe(200);
    expect((await note(id, 1, 'quoted-key')).headers.get('idempotency-replayed')).toBe('true');
  });

  // Spec "Request handling order": route middleware first. A key is looked at only for a
  // request the middleware lets through, so a client without credentials gets the middleware's
  // 401, never a stored response (replay), a 422 (reused key) or a 400 (bad key or body).
  it('should run route middleware before claiming, replaying or checking a key', async () => {
    const created = await send(server.url, 'POST', '/secure/ledgers/create', { headers: TOKEN });
    expect(created.status).toBe(201);
    const id = (created.body as { data: { id: string } }).data.id;
    const path = `/secure/ledgers/${id}/note`;
    authCalls = 0;
    const first = await send(server.url, 'POST', path, {
      body: { payload: { n: 1 } },
      headers: { ...TOKEN, 'idempotency-key': 'secured' },
    });
    expect(first.status).toBe(200);
    // The middleware ran once for the request, not again inside the handler.
    expect(authCalls).toBe(1);
    const anonymous: Parameters<typeof send>[3][] = [
      { body: { payload: { n: 1 } }, headers: { 'idempotency-key': 'secured' } },
      { body: { payload: { n: 2 } }, headers: { 'idempotency-key': 'secured' } },
      { body: { payload: { n: 1 } }, headers: { 'idempotency-key': '' } },
      {
        raw: '{"payload":',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'x' },
      },
    ];
    for (const request of anonymous) {
      const response = await send(server.url, 'POST', path, request);
      expect({ status: response.status, body: response.body }).toEqual({
        status: 401,
        body: { message: 'Unauthenticated.' },
      });
      expect(response.headers.get('idempotency-replayed')).toBeNull();
    }
    // With credentials, a body that cannot be read is its 400 and claims nothing.
    const malformed = await send(server.url, 'POST', path, {
      raw: '{"payload":',
      headers: { ...TOKEN, 'content-type': 'application/json', 'idempotency-key': 'fresh' },
    });
    expect({ status: malformed.status, body: malformed.body }).toEqual({
      status: 400,
      body: { message: 'Malformed JSON in request body.' },
    });
    const fresh = await send(server.url, 'POST', path, {
      body: { payload: { n: 3 } },
      headers: { ...TOKEN, 'idempotency-key': 'fresh' },
    });
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get('idempotency-replayed')).toBeNull();
    expect(await context(id)).toMatchObject({ notes: 2, seen: [1, 3] });
  });

  it('should commit the stored response with the event: a lost claim rolls the event back', async () => {
    const id = await create();
    const keys = runtime.store.idempotencyKeys;
    const claim = { scope: 'test', key: 'lost', fingerprint: 'f', leaseMs: 0, ttlMs: 60_000 };
    expect(await keys.claim({ ...claim, ownerId: 'first' })).toEqual({ kind: 'claimed' });
    await sleep(5);
    // The first holder's lease ran out: another request takes the key over.
    expect(await keys.claim({ ...claim, ownerId: 'second', leaseMs: 60_000 })).toEqual({
      kind: 'claimed',
    });
    const before = (await runtime.store.load(id))!.sequence;
    await expect(
      runtime.send(
        ledgerMachine,
        id,
        { type: 'NOTE', payload: { n: 1 } },
        {
          idempotency: {
            scope: 'test',
            key: 'lost',
            ownerId: 'first',
            respond: async () => ({ status: 200, body: {} }),
          },
        },
      ),
    ).rejects.toBeInstanceOf(IdempotencyClaimLostError);
    expect((await runtime.store.load(id))!.sequence).toBe(before);
    // The holder's send commits event and response together.
    const sent = { stored: false } as { stored?: boolean };
    await runtime.send(
      ledgerMachine,
      id,
      { type: 'NOTE', payload: { n: 1 } },
      {
        idempotency: Object.assign(sent, {
          scope: 'test',
          key: 'lost',
          ownerId: 'second',
          respond: async () => ({ status: 200, body: { ok: true }, etag: `"${id}:9"` }),
        }),
      },
    );
    expect(sent.stored).toBe(true);
    expect(await keys.claim({ ...claim, ownerId: 'third' })).toEqual({
      kind: 'existing',
      record: {
        fingerprint: 'f',
        status: 'done',
        response: { status: 200, body: { ok: true }, etag: `"${id}:9"` },
      },
    });
  });
});

describe.each(backends)('Idempotency-Key across two server processes on $name', (backend) => {
  const processes = useServerProcesses(backend, SERVER, [JSON.stringify(LEDGERS)], {
    timeoutMs: 90_000,
  });
  const { urls } = processes;

  it('should send one event for a key retried on the other process', async () => {
    const [one, two] = urls as [string, string];
    const created = await send(one, 'POST', '/ledgers/create');
    const id = (created.body as { data: { id: string } }).data.id;
    const request = (url: string, headers: Record<string, string> = {}) =>
      send(url, 'POST', `/ledgers/${id}/note`, {
        body: { payload: { n: 5 } },
        headers: { 'idempotency-key': 'cross', ...headers },
      });
    const slow = request(one, { 'x-delay-ms': '800' });
    await sleep(300);
    expect((await request(two)).status).toBe(409);
    const first = await slow;
    expect(first.status).toBe(200);
    const replay = await request(two);
    expect(replay.body).toEqual(first.body);
    expect(replay.headers.get('idempotency-replayed')).toBe('true');
    expect(replay.headers.get('etag')).toBe(first.headers.get('etag'));
    expect(first.headers.get('etag')).toMatch(/^"[0-9A-Z]{26}:\d+"$/);
    const other = await send(two, 'POST', `/ledgers/${id}/note`, {
      body: { payload: { n: 6 } },
      headers: { 'idempotency-key': 'cross' },
    });
    expect(other.status).toBe(422);
    expect((await processes.runtime.store.load(id))!.context).toMatchObject({
      notes: 1,
      seen: [5],
    });
  });

  it('should commit one event for a burst of the same key on both processes', async () => {
    const [one, two] = urls as [string, string];
    const created = await send(two, 'POST', '/ledgers/create');
    const id = (created.body as { data: { id: string } }).data.id;
    const burst = await Promise.all(
      Array.from({ length: 10 }, (_, index) =>
        send(index % 2 === 0 ? one : two, 'POST', `/ledgers/${id}/note`, {
          body: { payload: { n: 8 } },
          headers: { 'idempotency-key': 'burst' },
        }),
      ),
    );
    // Each answer is the first response (200, maybe replayed), 409 (in flight) or 423 (the
    // instance was busy, the key freed); never a second event.
    for (const response of burst) expect([200, 409, 423]).toContain(response.status);
    expect(burst.some((response) => response.status === 200)).toBe(true);
    expect((await processes.runtime.store.load(id))!.context).toMatchObject({
      notes: 1,
      seen: [8],
    });
  });
});
