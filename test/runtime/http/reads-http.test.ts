/**
 * Reads over HTTP (`reads` registration option): every read shape and option, waiting reads
 * (`waitFor`) on each shape, the model-bound state stream, zero writes and no lock taken
 * (counted in the store), isProcessing while a lock is held, and 404s; against real listening
 * servers of both adapters, on a SQLite file and on PostgreSQL.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { defineMachine } from '../../../src/runtime/definition/define-machine.js';
import { MachineRouter } from '../../../src/runtime/http/machine-router.js';
import type { ModelBinder, RegistrationOptions } from '../../../src/runtime/http/types.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import type { Store } from '../../../src/runtime/persistence/store.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';
import { send, startServer, type AdapterName, type TestServer } from './support/servers.js';
import { openStream } from './support/sse.js';
import { countRows, WRITE_METHODS } from './support/store-writes.js';

const readsMachine = defineMachine({
  config: {
    id: 'reads_machine',
    initial: 'pending',
    context: { orderId: 'ORD-1', total: 100, secret: 's3cret' },
    states: {
      pending: { on: { PAY: 'paid', TOUCH: { actions: 'touch' } } },
      paid: { type: 'final' },
    },
  },
  behavior: {
    actions: { touch: () => {} },
    outputs: { summary: ({ context }) => ({ order: context['orderId'], paid: false }) },
    computed: { doubled: ({ context }) => Number(context['total']) * 2 },
  },
  endpoints: ['PAY', 'TOUCH'],
});

const otherMachine = defineMachine({
  config: { id: 'other', initial: 'idle', states: { idle: {} } },
});

const REGISTRATIONS: Record<string, RegistrationOptions> = {
  main: {
    prefix: 'reads',
    create: true,
    machineIdFor: ['PAY', 'TOUCH'],
    reads: {
      status: null,
      fields: { uri: '/fields', output: ['orderId', 'total', 'doubled', 'missing'] },
      summary: { output: 'summary', status: 203, available_events: false },
      guarded: { middleware: ['gate'] },
      renamed: 'snapshot/now/',
    },
  },
  readsOnly: { prefix: 'only-reads', name: 'only_reads', reads: true },
  model: {
    prefix: 'shops',
    name: 'shop',
    model: 'Shop',
    attribute: 'machine_id',
    reads: true,
    stream: true,
  },
};

const UNKNOWN_ID = '01ARZ3NDEKTSV4RRFFQ69G5FAV';
const PENDING_EVENTS = [
  { type: 'PAY', source: 'parent' },
  { type: 'TOUCH', source: 'parent' },
];
const CONTEXT = { orderId: 'ORD-1', total: 100, secret: 's3cret', doubled: 200 };

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('reads_http');
if (postgres) backends.push(postgres);

describe.each(backends)('reads on $name', (backend) => {
  let store: Store;
  let runtime: MachineRuntime;
  const shops = new Map<string, { machine_id: string | null }>();
  const shopBinder: ModelBinder<{ machine_id: string | null }> = {
    find: (param) => shops.get(param) ?? null,
    readMachineId: (record, attribute) =>
      (record as unknown as Record<string, string | null>)[attribute] ?? null,
    writeMachineId: (record, _attribute, id) => {
      record.machine_id = id;
    },
  };

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
    const call = (method: string, path: string, headers: Record<string, string> = {}) =>
      send(server.url, method, path, { headers });
    const create = async (prefix = '/reads'): Promise<string> => {
      const response = await call('POST', `${prefix}/create`);
      expect(response.status).toBe(201);
      return (response.body as { data: { id: string } }).data.id;
    };

    beforeAll(async () => {
      const router = new MachineRouter({
        runtime,
        middleware: {
          gate: (request) =>
            request.headers['x-key'] === 'open'
              ? undefined
              : { status: 401, body: { message: 'Closed.' } },
        },
        models: { Shop: shopBinder as ModelBinder },
        logger: { error: (message, meta) => console.error(message, meta.error) },
      });
      for (const options of Object.values(REGISTRATIONS)) router.register(readsMachine, options);
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

    it('should answer the default read with the standard envelope of the committed state', async () => {
      const id = await create();
      const response = await call('GET', `/reads/${id}/status`);
      expect(response.status).toBe(200);
      expect(JSON.stringify(response.body)).toBe(
        JSON.stringify({
          data: {
            id,
            state: ['reads_machine.pending'],
            availableEvents: PENDING_EVENTS,
            output: CONTEXT,
            isProcessing: false,
          },
        }),
      );
      expect((await call('POST', `/reads/${id}/pay`)).status).toBe(200);
      expect(await call('GET', `/reads/${id}/status`)).toMatchObject({
        status: 200,
        body: { data: { id, state: ['reads_machine.paid'], availableEvents: [] } },
      });
    });

    it('should apply every read option: key list, output behavior, status, available_events, uri, middleware', async () => {
      const id = await create();
      expect(await call('GET', `/reads/${id}/fields`)).toMatchObject({
        status: 200,
        body: { data: { output: { orderId: 'ORD-1', total: 100, doubled: 200 } } },
      });
      expect(
        Object.keys(
          ((await call('GET', `/reads/${id}/fields`)).body as { data: { output: object } }).data
            .output,
        ),
      ).toEqual(['orderId', 'total', 'doubled']);
      const summary = await call('GET', `/reads/${id}/summary`);
      expect(summary.status).toBe(203);
      expect(summary.body).toEqual({
        data: {
          id,
          state: ['reads_machine.pending'],
          output: { order: 'ORD-1', paid: false },
          isProcessing: false,
        },
      });
      // The read's URI 'snapshot/now/' is planned without its trailing slash, as the original's.
      expect(await call('GET', `/reads/${id}/snapshot/now`)).toMatchObject({
        status: 200,
        body: { data: { id, output: CONTEXT } },
      });
      expect(await call('GET', `/reads/${id}/guarded`)).toEqual(
        expect.objectContaining({ status: 401, body: { message: 'Closed.' } }),
      );
      expect(await call('GET', `/reads/${id}/guarded`, { 'x-key': 'open' })).toMatchObject({
        status: 200,
        body: { data: { id } },
      });
      // A read answers GET only.
      expect((await call('POST', `/reads/${id}/status`)).status).toBe(405);
    });

    it('should serve a registration that has reads only', async () => {
      const id = await create();
      expect(await call('GET', `/only-reads/${id}/status`)).toMatchObject({
        status: 200,
        body: { data: { id, state: ['reads_machine.pending'] } },
      });
    });

    it('should write nothing and take no lock (counted in the store)', async () => {
      const ids = [await create(), await create()];
      shops.set('shop-read', { machine_id: ids[1]! });
      expect((await call('POST', `/reads/${ids[0]}/touch`)).status).toBe(200);
      const writes = WRITE_METHODS.filter(
        (name) => typeof (store as unknown as Record<string, unknown>)[name] === 'function',
      ).map((name) => vi.spyOn(store as never, name as never));
      const before = await countRows(store);
      for (const path of [
        `/reads/${ids[0]}/status`,
        `/reads/${ids[0]}/fields`,
        `/reads/${ids[0]}/summary`,
        `/reads/${ids[0]}/snapshot/now`,
        `/only-reads/${ids[1]}/status`,
        `/shops/shop-read/status`,
        `/reads/${UNKNOWN_ID}/status`,
      ]) {
        for (let round = 0; round < 3; round += 1) await call('GET', path);
      }
      expect(await countRows(store)).toEqual(before);
      for (const spy of writes) expect(spy).not.toHaveBeenCalled();
      // The same counters see a write: a targetless event adds history rows.
      expect((await call('POST', `/reads/${ids[0]}/touch`)).status).toBe(200);
      expect((await countRows(store))['machine_events']).toBeGreaterThan(before['machine_events']!);
    });

    it('should answer at once with isProcessing true while the lock is held, without waiting for it', async () => {
      const id = await create();
      await runtime.withLock(
        id,
        async () => {
          const read = await call('GET', `/reads/${id}/status`);
          expect(read).toMatchObject({
            status: 200,
            body: { data: { id, state: ['reads_machine.pending'], isProcessing: true } },
          });
          // The lock is still the holder's: an event is refused meanwhile.
          expect((await call('POST', `/reads/${id}/pay`)).status).toBe(423);
        },
        { timeoutMs: 1000 },
      );
      expect(await call('GET', `/reads/${id}/status`)).toMatchObject({
        body: { data: { isProcessing: false } },
      });
    });

    it('should answer model-bound reads through the binder, creating nothing for a record without a machine', async () => {
      const id = await create();
      shops.set('shop-1', { machine_id: id });
      shops.set('shop-empty', { machine_id: null });
      expect(await call('GET', `/shops/shop-1/status`)).toMatchObject({
        status: 200,
        body: { data: { id, state: ['reads_machine.pending'], isProcessing: false } },
      });
      const before = await countRows(store);
      expect(await call('GET', '/shops/shop-empty/status')).toEqual(
        expect.objectContaining({ status: 404, body: { message: 'Machine not found.' } }),
      );
      expect(await call('GET', '/shops/no-such-shop/status')).toEqual(
        expect.objectContaining({ status: 404, body: { message: 'Shop not found.' } }),
      );
      expect(shops.get('shop-empty')).toEqual({ machine_id: null });
      expect(await countRows(store)).toEqual(before);
    });

    it('should wait on every read shape: key list, output behavior with status, uri, middleware, model', async () => {
      const id = await create();
      shops.set('shop-wait', { machine_id: id });
      const paid = ['reads_machine.paid'];
      const waits = [
        call('GET', `/reads/${id}/fields?waitFor=paid&timeout=30000`),
        call('GET', `/reads/${id}/summary?waitFor=reads_machine.paid&timeout=30000`),
        call('GET', `/reads/${id}/snapshot/now?waitFor=paid&timeout=30000`),
        call('GET', `/reads/${id}/guarded?waitFor=paid&timeout=30000`, { 'x-key': 'open' }),
        call('GET', `/only-reads/${id}/status?waitFor=paid&timeout=30000`),
        call('GET', `/shops/shop-wait/status?waitFor=paid&timeout=30000`),
      ];
      // Middleware answers before any wait.
      expect(await call('GET', `/reads/${id}/guarded?waitFor=paid&timeout=30000`)).toEqual(
        expect.objectContaining({ status: 401, body: { message: 'Closed.' } }),
      );
      // Let the waits subscribe, then the transition answers every one of them.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect((await call('POST', `/reads/${id}/pay`)).status).toBe(200);
      const [fields, summary, renamed, guarded, only, shop] = await Promise.all(waits);
      expect(fields).toMatchObject({
        status: 200,
        body: { data: { state: paid, output: { orderId: 'ORD-1', total: 100, doubled: 200 } } },
      });
      expect(summary).toMatchObject({ status: 203 });
      expect(summary!.body).toEqual({
        data: { id, state: paid, output: { order: 'ORD-1', paid: false }, isProcessing: false },
      });
      for (const response of [renamed, guarded, only, shop]) {
        expect(response).toMatchObject({ status: 200, body: { data: { id, state: paid } } });
      }
    });

    it('should stream a model-bound instance through the binder', async () => {
      const id = await create();
      shops.set('shop-stream', { machine_id: id });
      shops.set('shop-none', { machine_id: null });
      const stream = await openStream(`${server.url}/shops/shop-stream/events`);
      expect(stream.response.status).toBe(200);
      const [first] = await stream.received(1);
      expect(first!.data.data).toMatchObject({ id, state: ['reads_machine.pending'] });
      expect((await call('POST', `/reads/${id}/pay`)).status).toBe(200);
      await stream.untilEnded();
      expect(stream.messages.map((message) => message.data.data.state)).toEqual([
        ['reads_machine.pending'],
        ['reads_machine.paid'],
      ]);
      const before = await countRows(store);
      expect(await call('GET', '/shops/shop-none/events')).toEqual(
        expect.objectContaining({ status: 404, body: { message: 'Machine not found.' } }),
      );
      expect(await call('GET', '/shops/no-such-shop/events')).toEqual(
        expect.objectContaining({ status: 404, body: { message: 'Shop not found.' } }),
      );
      expect(shops.get('shop-none')).toEqual({ machine_id: null });
      expect(await countRows(store)).toEqual(before);
    });

    it('should answer 404 { message } for unknown, malformed and foreign ids', async () => {
      const foreign = await create('/others');
      for (const id of [UNKNOWN_ID, 'not-a-ulid', foreign, '%20']) {
        expect(await call('GET', `/reads/${id}/status`)).toEqual(
          expect.objectContaining({ status: 404, body: { message: 'Machine not found.' } }),
        );
        expect(await call('GET', `/reads/${id}/status?waitFor=paid&timeout=30000`)).toEqual(
          expect.objectContaining({ status: 404, body: { message: 'Machine not found.' } }),
        );
      }
    });
  });
});
