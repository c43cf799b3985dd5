/**
 * Live state over HTTP: the state stream (`stream: true`, Server-Sent Events) and waiting reads
 * (`?waitFor=&timeout=`), on both adapters, on a SQLite file and on PostgreSQL: messages, resume,
 * answers on the transition and on the timeout, zero writes and no lock (counted in the store),
 * no polling (store reads counted), 404s. On PostgreSQL an SSE client of this process receives
 * the states of events sent to another server process, and that process sends a commit notice
 * only for instances some process watches (the watch lease, persistence/watch-leases.ts).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { defineMachine } from '../../../src/runtime/definition/define-machine.js';
import { MachineRouter } from '../../../src/runtime/http/machine-router.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { commitChannel } from '../../../src/runtime/persistence/commit-feed.js';
import type { PostgresStore } from '../../../src/runtime/persistence/postgres-store.js';
import type { Store } from '../../../src/runtime/persistence/store.js';
import { listeningUrl, startFixture, type FixtureProcess } from '../../support/child-process.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';
import { LIVE_REGISTRATION, liveMachine } from './fixtures/live-machine.js';
import { send, startServer, type AdapterName, type TestServer } from './support/servers.js';
import { openStream } from './support/sse.js';
import { countRows, WRITE_METHODS } from './support/store-writes.js';

const otherMachine = defineMachine({
  config: { id: 'other', initial: 'idle', states: { idle: {} } },
});

/** Lets a waiting read or a stream subscribe before the test commits. */
const settle = (ms = 150) => new Promise((resolve) => setTimeout(resolve, ms));

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('live_state_http');
if (postgres) backends.push(postgres);

describe.each(backends)('live state on $name', (backend) => {
  let runtime: MachineRuntime;
  let store: Store;

  beforeAll(async () => {
    await backend.setUp();
    store = await backend.open();
    runtime = new MachineRuntime({ store });
  });
  afterAll(async () => {
    await runtime.close();
    await backend.tearDown();
  });

  describe.each<AdapterName>(['fastify', 'express'])('over %s', (adapter) => {
    let server: TestServer;
    const call = (method: string, path: string) => send(server.url, method, path);
    const create = async (): Promise<string> => {
      const response = await call('POST', '/live/create');
      expect(response.status).toBe(201);
      return (response.body as { data: { id: string } }).data.id;
    };

    beforeAll(async () => {
      const router = new MachineRouter({ runtime });
      router.register(liveMachine, LIVE_REGISTRATION);
      router.register(otherMachine, { prefix: 'others', create: true });
      server = await startServer(adapter, [router], {
        error: (message, meta) => console.error(message, meta.error),
      });
    });
    afterAll(async () => {
      await server.close();
    });
    afterEach(() => {
      vi.restoreAllMocks();
    });

    it('should stream the current state, then each committed state, and end after a final one', async () => {
      const id = await create();
      const stream = await openStream(`${server.url}/live/${id}/events`);
      expect(stream.response.status).toBe(200);
      expect(stream.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const [first] = await stream.received(1);
      expect(first!.id).toBe(String((await runtime.read(liveMachine, id)).snapshot.sequence));
      expect(first).toEqual({
        id: first!.id,
        event: 'state',
        data: {
          data: {
            id,
            state: ['live.draft'],
            availableEvents: [
              { type: 'SUBMIT', source: 'parent' },
              { type: 'TOUCH', source: 'parent' },
            ],
            output: { step: 0 },
            isProcessing: false,
          },
        },
      });
      expect((await call('POST', `/live/${id}/submit`)).status).toBe(200);
      const [, second] = await stream.received(2);
      expect(second!.data.data).toMatchObject({ state: ['live.review'], output: { step: 1 } });
      expect(Number(second!.id)).toBeGreaterThan(Number(first!.id));
      expect((await call('POST', `/live/${id}/approve`)).status).toBe(200);
      await stream.untilEnded();
      expect(stream.messages.map((message) => message.data.data.state)).toEqual([
        ['live.draft'],
        ['live.review'],
        ['live.approved'],
      ]);
    });

    it('should resume after Last-Event-ID with only what is newer', async () => {
      const id = await create();
      const submitted = await call('POST', `/live/${id}/submit`);
      expect(submitted.status).toBe(200);
      const first = await openStream(`${server.url}/live/${id}/events`);
      const [current] = await first.received(1);
      first.close();
      // Reconnecting with the last id seen: nothing is repeated, the next commit arrives.
      const resumed = await openStream(`${server.url}/live/${id}/events`, {
        'last-event-id': current!.id!,
      });
      expect((await call('POST', `/live/${id}/approve`)).status).toBe(200);
      await resumed.untilEnded();
      expect(resumed.messages.map((message) => message.data.data.state)).toEqual([
        ['live.approved'],
      ]);
      // An older id: the current state is sent at once.
      const behind = await openStream(`${server.url}/live/${id}/events`, { 'last-event-id': '1' });
      await behind.untilEnded();
      expect(behind.messages.map((message) => message.data.data.state)).toEqual([
        ['live.approved'],
      ]);
    });

    it('should answer streams and waiting reads of unknown, malformed and foreign ids with a JSON 404', async () => {
      const created = await call('POST', '/others/create');
      const foreign = (created.body as { data: { id: string } }).data.id;
      for (const id of ['01ARZ3NDEKTSV4RRFFQ69G5FAV', 'not-a-ulid', foreign, '%20']) {
        for (const path of [
          `/live/${id}/events`,
          `/live/${id}/status?waitFor=review&timeout=30000`,
        ]) {
          const response = await call('GET', path);
          expect(response, path).toMatchObject({
            status: 404,
            body: { message: 'Machine not found.' },
          });
          expect(response.headers.get('content-type'), path).toMatch(/^application\/json/);
        }
      }
    });

    it('should write nothing and take no lock while streaming and waiting (counted in the store)', async () => {
      const id = await create();
      const writes = WRITE_METHODS.filter(
        (name) => typeof (store as unknown as Record<string, unknown>)[name] === 'function',
      ).map((name) => vi.spyOn(store as never, name as never));
      const before = await countRows(store);
      const stream = await openStream(`${server.url}/live/${id}/events`);
      await stream.received(1);
      const resumed = await openStream(`${server.url}/live/${id}/events`, {
        'last-event-id': stream.messages[0]!.id!,
      });
      const answers = await Promise.all([
        call('GET', `/live/${id}/status?waitFor=review&timeout=100`),
        call('GET', `/live/${id}/status?waitFor=draft`),
        call('GET', `/live/${id}/status?waitFor=nowhere`),
      ]);
      expect(answers.map((answer) => answer.status)).toEqual([200, 200, 422]);
      stream.close();
      resumed.close();
      await settle(50);
      expect(await countRows(store)).toEqual(before);
      for (const spy of writes) expect(spy).not.toHaveBeenCalled();
    });

    it('should wait and stream without polling the store (reads counted)', async () => {
      const id = await create();
      const loads = vi.spyOn(store, 'load');
      const locks = vi.spyOn(store, 'readLock');
      const of = (spy: typeof loads | typeof locks) =>
        spy.mock.calls.filter(([rootEventId]) => rootEventId === id).length;
      const stream = await openStream(`${server.url}/live/${id}/events`);
      await stream.received(1);
      const started = Date.now();
      const waited = await call('GET', `/live/${id}/status?waitFor=approved&timeout=700`);
      expect(Date.now() - started).toBeGreaterThanOrEqual(690);
      expect(waited).toMatchObject({ status: 200, body: { data: { state: ['live.draft'] } } });
      // Stream: a read, and one more once its subscription is in effect. Waiting read: the
      // same two, and one at the timeout. Nothing in between, however long the wait.
      expect(of(loads)).toBeLessThanOrEqual(5);
      expect(of(locks)).toBeLessThanOrEqual(5);
      stream.close();
    });

    it('should read a commit once for all the streams of an instance (reads counted)', async () => {
      const id = await create();
      const streams = await Promise.all(
        Array.from({ length: 6 }, () => openStream(`${server.url}/live/${id}/events`)),
      );
      await Promise.all(streams.map((stream) => stream.received(1)));
      await settle();
      const loads = vi.spyOn(store, 'loadForRead');
      expect((await call('POST', `/live/${id}/touch`)).status).toBe(200);
      await Promise.all(streams.map((stream) => stream.received(2)));
      for (const stream of streams) {
        expect(stream.messages[1]!.data.data).toMatchObject({ output: { step: 1 } });
      }
      // One read shared by the six streams (the send's own load may count too): not one each.
      expect(
        loads.mock.calls.filter(([rootEventId]) => rootEventId === id).length,
      ).toBeLessThanOrEqual(2);
      for (const stream of streams) stream.close();
    });

    it('should answer a waiting read when the instance reaches the state', async () => {
      const id = await create();
      let answered = false;
      const waiting = call('GET', `/live/${id}/status?waitFor=review&timeout=30000`).then(
        (response) => {
          answered = true;
          return response;
        },
      );
      // Still waiting after a commit that does not reach the state.
      expect((await call('POST', `/live/${id}/touch`)).status).toBe(200);
      expect((await call('GET', `/live/${id}/status`)).status).toBe(200);
      expect(answered).toBe(false);
      expect((await call('POST', `/live/${id}/submit`)).status).toBe(200);
      expect(await waiting).toMatchObject({
        status: 200,
        body: { data: { id, state: ['live.review'], output: { step: 2 } } },
      });
      // Already there: answered at once.
      expect(await call('GET', `/live/${id}/status?waitFor=live.review`)).toMatchObject({
        status: 200,
        body: { data: { state: ['live.review'] } },
      });
    });

    it('should answer a waiting read with the current state when the timeout passes', async () => {
      const id = await create();
      expect(await call('GET', `/live/${id}/status?waitFor=approved&timeout=50`)).toMatchObject({
        status: 200,
        body: { data: { id, state: ['live.draft'] } },
      });
    });

    it('should reject invalid waits with 422', async () => {
      const id = await create();
      for (const [query, field] of [
        ['waitFor=nowhere', 'waitFor'],
        ['waitFor=review&timeout=60001', 'timeout'],
        ['waitFor=review&timeout=-1', 'timeout'],
        ['waitFor=review&timeout=soon', 'timeout'],
        ['timeout=10', 'timeout'],
      ] as const) {
        const response = await call('GET', `/live/${id}/status?${query}`);
        expect(response.status, query).toBe(422);
        expect(Object.keys((response.body as { errors: object }).errors)).toEqual([field]);
      }
    });
  });
});

describe.runIf(postgres !== null)('live state across processes (PostgreSQL)', () => {
  let runtime: MachineRuntime;
  let store: PostgresStore;
  let server: TestServer;
  let other: FixtureProcess;
  let otherUrl: string;

  beforeAll(async () => {
    await postgres!.setUp();
    store = (await postgres!.open()) as PostgresStore;
    runtime = new MachineRuntime({ store });
    const router = new MachineRouter({ runtime });
    router.register(liveMachine, LIVE_REGISTRATION);
    server = await startServer('fastify', [router], {
      error: (message, meta) => console.error(message, meta.error),
    });
    other = startFixture(new URL('./fixtures/live-server.ts', import.meta.url).pathname, [
      postgres!.url(),
    ]);
    otherUrl = await listeningUrl(other, 30_000);
  }, 60_000);
  afterAll(async () => {
    other?.child.kill('SIGTERM');
    await other?.exited;
    await server?.close();
    await runtime?.close();
    await postgres!.tearDown();
  });

  it('should stream states of events sent to another server process', async () => {
    const created = await send(otherUrl, 'POST', '/live/create');
    const id = (created.body as { data: { id: string } }).data.id;
    const stream = await openStream(`${server.url}/live/${id}/events`);
    await stream.received(1);
    const waiting = send(server.url, 'GET', `/live/${id}/status?waitFor=approved&timeout=30000`);
    expect((await send(otherUrl, 'POST', `/live/${id}/submit`)).status).toBe(200);
    await stream.received(2);
    expect((await send(otherUrl, 'POST', `/live/${id}/approve`)).status).toBe(200);
    await stream.untilEnded();
    expect(stream.messages.map((message) => message.data.data.state)).toEqual([
      ['live.draft'],
      ['live.review'],
      ['live.approved'],
    ]);
    expect(await waiting).toMatchObject({
      status: 200,
      body: { data: { state: ['live.approved'] } },
    });
  });

  it('should notify commits of watched instances only, watched from another process', async () => {
    const create = async (): Promise<string> =>
      ((await send(otherUrl, 'POST', '/live/create')).body as { data: { id: string } }).data.id;
    const [unwatched, watched] = [await create(), await create()];
    // A plain LISTEN of the schema's channel: it hears every NOTIFY and takes no lease.
    const listener = await store.pool.connect();
    const heard: string[] = [];
    listener.on('notification', (message) => heard.push(message.payload ?? ''));
    try {
      await listener.query(`LISTEN "${commitChannel(store.schema ?? 'public')}"`);
      for (let step = 0; step < 3; step += 1)
        expect((await send(otherUrl, 'POST', `/live/${unwatched}/touch`)).status).toBe(200);
      const stream = await openStream(`${server.url}/live/${watched}/events`);
      await stream.received(1);
      expect((await send(otherUrl, 'POST', `/live/${watched}/touch`)).status).toBe(200);
      await stream.received(2);
      while (!heard.some((payload) => payload.includes(watched))) await settle(20);
      // The other process sends its notices in commit order: the unwatched instance's three
      // commits, had they been announced, would have come first.
      expect(heard.filter((payload) => payload.includes(unwatched))).toEqual([]);
      stream.close();
      const [lease] = (
        await store.pool.query<{ live: boolean }>(
          `SELECT watched_until > now() AS live FROM machine_instances WHERE root_event_id = $1`,
          [watched],
        )
      ).rows;
      expect(lease).toEqual({ live: true });
    } finally {
      listener.release(true);
    }
  });
});
