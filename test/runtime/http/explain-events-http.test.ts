/**
 * Guard-aware availableEvents (`explainAvailableEvents` registration option) over HTTP: event
 * routes, reads and forwarded routes answer `enabled` / `reason` per entry, the reason is the
 * very 422 message a send answers, a registration without the option keeps the spec's shape;
 * against real listening servers of both adapters, on a SQLite file and on PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  InMemoryJobQueue,
  InvalidRouterConfigException,
  MachineRouter,
  MachineRuntime,
  defineMachine,
  defineValidationGuard,
  planRoutes,
  type RegistrationOptions,
  type Store,
} from '../../../src/runtime/index.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';
import { send, startServer, type AdapterName, type TestServer } from './support/servers.js';
import { openStream } from './support/sse.js';

type ApprovalContext = { total: number; owner: string | null };

const approval = defineMachine<ApprovalContext>({
  config: {
    id: 'approval',
    initial: 'draft',
    context: { total: 0, owner: null },
    on: { CLAIM: { actions: 'claim' } },
    states: {
      draft: { on: { SUBMIT: { target: 'submitted', actions: 'storeTotal' } } },
      submitted: {
        on: {
          APPROVE: {
            target: 'approved',
            guards: defineValidationGuard<ApprovalContext>({
              name: 'withinLimit',
              check: ({ context }) => context.total <= 100,
              message: ({ context }) => `Totals over 100 need a manager (total ${context.total}).`,
              field: 'total',
            }),
          },
          ARCHIVE: { target: 'approved', guards: 'hasOwner' },
          PAY: { target: 'approved', guards: 'paysTotal' },
        },
      },
      approved: { type: 'final' },
    },
  },
  behavior: {
    guards: {
      hasOwner: ({ context }) => context.owner !== null,
      paysTotal: ({ context, event }) => Number(event.payload?.['amount']) === context.total,
    },
    actions: {
      storeTotal: ({ context, event }) => {
        context.total = Number(event.payload?.['amount']);
      },
      claim: ({ context }) => {
        context.owner = 'ann';
      },
    },
  },
  endpoints: ['SUBMIT', 'CLAIM', 'APPROVE', 'ARCHIVE', 'PAY'],
});

type CardContext = { declines: number };

const card = defineMachine<CardContext>({
  config: {
    id: 'card',
    initial: 'waiting',
    context: { declines: 0 },
    states: {
      waiting: {
        on: {
          DECLINE: { actions: 'countDecline' },
          PROVIDE_CARD: {
            target: 'charged',
            guards: defineValidationGuard<CardContext>({
              name: 'triesLeft',
              check: ({ context }) => context.declines < 2,
              message: 'Two cards were declined: call us.',
            }),
          },
        },
      },
      charged: { type: 'final' },
    },
  },
  behavior: {
    actions: {
      countDecline: ({ context }) => {
        context.declines += 1;
      },
    },
  },
});

const checkout = defineMachine({
  config: {
    id: 'checkout',
    initial: 'paying',
    states: {
      paying: {
        machine: card,
        queue: true,
        forward: ['DECLINE', 'PROVIDE_CARD'],
        on: { '@done': 'paid', CANCEL: 'paid' },
      },
      paid: { type: 'final' },
    },
  },
  endpoints: ['CANCEL'],
});

const ALL = ['SUBMIT', 'CLAIM', 'APPROVE', 'ARCHIVE', 'PAY'];
const EXPLAINED: RegistrationOptions = {
  prefix: 'approvals',
  create: true,
  machineIdFor: ALL,
  reads: { status: null },
  stream: true,
  explainAvailableEvents: true,
};
const PLAIN: RegistrationOptions = {
  prefix: 'plain',
  name: 'plain',
  create: true,
  machineIdFor: ALL,
  reads: { status: null },
};
const CHECKOUTS: RegistrationOptions = {
  prefix: 'checkouts',
  create: true,
  machineIdFor: ['CANCEL'],
  explainAvailableEvents: true,
};

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('explain_events_http');
if (postgres) backends.push(postgres);

type Envelope = { data: { id: string; availableEvents?: unknown[] } };

describe('explainAvailableEvents planning', () => {
  it('should mark every route that lists availableEvents, and no other', () => {
    const routes = planRoutes(approval, {
      ...EXPLAINED,
      stream: true,
      reads: { status: null, bare: { available_events: false } },
    });
    expect(
      routes.map((route) => [route.name, route.availableEvents, route.explainAvailableEvents]),
    ).toEqual([
      ['approval.create', false, undefined],
      ['approval.submit', true, true],
      ['approval.claim', true, true],
      ['approval.approve', true, true],
      ['approval.archive', true, true],
      ['approval.pay', true, true],
      ['approval.read.status', true, true],
      ['approval.read.bare', false, undefined],
      ['approval.events', true, true],
    ]);
    // Without the option the planned routes do not carry the key at all (plain data unchanged).
    expect(planRoutes(approval, PLAIN).some((route) => 'explainAvailableEvents' in route)).toBe(
      false,
    );
  });

  it('should refuse a value that is not a boolean, naming the key', () => {
    expect(() =>
      planRoutes(approval, {
        ...PLAIN,
        explainAvailableEvents: 'yes' as unknown as boolean,
      }),
    ).toThrow(InvalidRouterConfigException);
    expect(() =>
      planRoutes(approval, { ...PLAIN, explainAvailableEvents: 'yes' as unknown as boolean }),
    ).toThrow(/'explainAvailableEvents' must be true or false/);
  });
});

describe.each(backends)('explained availableEvents on $name', (backend) => {
  let store: Store;
  let queue: InMemoryJobQueue;
  let runtime: MachineRuntime;
  const logged: unknown[] = [];

  beforeAll(async () => {
    await backend.setUp();
    store = await backend.open();
    queue = new InMemoryJobQueue();
    runtime = new MachineRuntime({
      store,
      jobs: queue,
      onDeferredError: (error) => logged.push(error),
    });
  });
  afterAll(async () => {
    await runtime.close();
    await backend.tearDown();
  });

  describe.each<AdapterName>(['fastify', 'express'])('over %s', (adapter) => {
    let server: TestServer;
    const call = (method: string, path: string, body?: unknown) =>
      send(server.url, method, path, body === undefined ? {} : { body });
    const create = async (prefix: string): Promise<string> => {
      const response = await call('POST', `/${prefix}/create`);
      expect(response.status).toBe(201);
      return (response.body as Envelope).data.id;
    };

    beforeAll(async () => {
      const router = new MachineRouter({
        runtime,
        logger: { error: (_message, meta) => logged.push(meta.error) },
      });
      router.register(approval, EXPLAINED);
      router.register(approval, PLAIN);
      router.register(checkout, CHECKOUTS);
      server = await startServer(adapter, [router], {
        error: (_message, meta) => logged.push(meta.error),
      });
    });
    afterAll(async () => {
      await server.close();
      expect(logged).toEqual([]);
    });

    it('should explain each entry of an event answer: guard passes, fails, refuses with its message, needs the payload', async () => {
      const id = await create('approvals');
      const submitted = await call('POST', `/approvals/${id}/submit`, {
        payload: { amount: 500 },
      });
      expect(submitted.status).toBe(200);
      expect(JSON.stringify((submitted.body as Envelope).data.availableEvents)).toBe(
        JSON.stringify([
          {
            type: 'APPROVE',
            source: 'parent',
            enabled: false,
            reason: 'Totals over 100 need a manager (total 500).',
          },
          { type: 'ARCHIVE', source: 'parent', enabled: false },
          { type: 'PAY', source: 'parent', enabled: null },
          { type: 'CLAIM', source: 'parent', enabled: true },
        ]),
      );

      // The reason is the message a send answers.
      const refused = await call('POST', `/approvals/${id}/approve`, {});
      expect(refused).toMatchObject({
        status: 422,
        body: { message: 'Totals over 100 need a manager (total 500).' },
      });

      // CLAIM sets the owner: ARCHIVE's ordinary guard passes in the answer.
      const claimed = await call('POST', `/approvals/${id}/claim`, {});
      expect((claimed.body as Envelope).data.availableEvents).toContainEqual({
        type: 'ARCHIVE',
        source: 'parent',
        enabled: true,
      });
    });

    it('should explain the entries of a read, which writes nothing', async () => {
      const id = await create('approvals');
      await call('POST', `/approvals/${id}/submit`, { payload: { amount: 80 } });
      const before = await runtime.history(approval, id);
      const read = await call('GET', `/approvals/${id}/status`);
      expect(read.status).toBe(200);
      expect((read.body as Envelope).data.availableEvents).toEqual([
        { type: 'APPROVE', source: 'parent', enabled: true },
        { type: 'ARCHIVE', source: 'parent', enabled: false },
        { type: 'PAY', source: 'parent', enabled: null },
        { type: 'CLAIM', source: 'parent', enabled: true },
      ]);
      // Evaluating guards wrote no history and changed no context.
      expect(await runtime.history(approval, id)).toEqual(before);
      const snapshot = await runtime.restore(approval, id);
      expect(snapshot.context).toEqual({ total: 80, owner: null });
    });

    it('should explain the entries of each state stream message', async () => {
      const id = await create('approvals');
      await call('POST', `/approvals/${id}/submit`, { payload: { amount: 500 } });
      const stream = await openStream(`${server.url}/approvals/${id}/events`);
      try {
        expect(stream.response.status).toBe(200);
        const [first] = await stream.received(1);
        expect(first!.data.data).toMatchObject({
          availableEvents: [
            {
              type: 'APPROVE',
              source: 'parent',
              enabled: false,
              reason: 'Totals over 100 need a manager (total 500).',
            },
            { type: 'ARCHIVE', source: 'parent', enabled: false },
            { type: 'PAY', source: 'parent', enabled: null },
            { type: 'CLAIM', source: 'parent', enabled: true },
          ],
        });
        expect((await call('POST', `/approvals/${id}/claim`, {})).status).toBe(200);
        const [, second] = await stream.received(2);
        expect(second!.data.data).toMatchObject({
          availableEvents: expect.arrayContaining([
            { type: 'ARCHIVE', source: 'parent', enabled: true },
          ]),
        });
      } finally {
        stream.close();
      }
    });

    it('should keep the spec shape { type, source } on a registration without the option', async () => {
      const id = await create('plain');
      const submitted = await call('POST', `/plain/${id}/submit`, { payload: { amount: 500 } });
      const expected = [
        { type: 'APPROVE', source: 'parent' },
        { type: 'ARCHIVE', source: 'parent' },
        { type: 'PAY', source: 'parent' },
        { type: 'CLAIM', source: 'parent' },
      ];
      expect(JSON.stringify((submitted.body as Envelope).data.availableEvents)).toBe(
        JSON.stringify(expected),
      );
      const read = await call('GET', `/plain/${id}/status`);
      expect(JSON.stringify((read.body as Envelope).data.availableEvents)).toBe(
        JSON.stringify(expected),
      );
    });

    it("should explain forwarded entries against the running child's snapshot", async () => {
      const id = await create('checkouts');
      await queue.runDue();
      const first = await call('POST', `/checkouts/${id}/decline`, {});
      expect(first.status).toBe(200);
      expect((first.body as Envelope).data.availableEvents).toEqual([
        { type: 'CANCEL', source: 'parent', enabled: true },
        { type: 'DECLINE', source: 'forward', enabled: true },
        { type: 'PROVIDE_CARD', source: 'forward', enabled: true },
      ]);
      const second = await call('POST', `/checkouts/${id}/decline`, {});
      expect((second.body as Envelope).data.availableEvents).toEqual([
        { type: 'CANCEL', source: 'parent', enabled: true },
        { type: 'DECLINE', source: 'forward', enabled: true },
        {
          type: 'PROVIDE_CARD',
          source: 'forward',
          enabled: false,
          reason: 'Two cards were declined: call us.',
        },
      ]);
      expect(await call('POST', `/checkouts/${id}/provide-card`, {})).toMatchObject({
        status: 422,
        body: { message: 'Two cards were declined: call us.' },
      });
    });
  });
});
