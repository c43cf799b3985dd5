/**
 * Delegation through MachineRuntime: rows, child instances and jobs on every store backend,
 * with the in-memory job queue run by hand (`runDue`) and a movable clock.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  ForwardTargetUnavailableException,
  InMemoryJobQueue,
  MachineRuntime,
  MemoryStore,
  defineMachine,
  type MachineDefinition,
  type Store,
} from '../../../src/runtime/index.js';
import { paymentMachine } from '../../../fixtures/delegation/children.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';

const reviewChild = defineMachine({
  config: {
    id: 'review',
    initial: 'deciding',
    states: {
      deciding: { on: { '@always': 'approved' } },
      approved: { type: 'final', output: ['verdict'] },
    },
    context: { verdict: 'ok' },
  },
});

/** Pings its parent, synchronously and through the queue. */
const chatty = defineMachine({
  config: {
    id: 'chatty',
    initial: 'open',
    states: {
      open: {
        on: {
          SAY: { actions: 'say' },
          QUEUE: { actions: 'queue' },
          CLOSE: 'closed',
        },
      },
      closed: { type: 'final' },
    },
  },
  behavior: {
    actions: {
      say: ({ sendToParent }) => sendToParent({ type: 'HEARD', payload: { how: 'sync' } }),
      queue: ({ dispatchToParent }) =>
        dispatchToParent({ type: 'HEARD', payload: { how: 'async' } }),
    },
  },
});

const order = defineMachine({
  config: {
    id: 'order',
    initial: 'idle',
    context: { amount: 25, heard: [] as string[], verdict: null as string | null },
    states: {
      idle: { on: { REVIEW: 'reviewing', PAY: 'paying', CHAT: 'chatting' } },
      reviewing: {
        machine: reviewChild,
        on: { '@done': { target: 'reviewed', actions: 'storeVerdict' } },
      },
      reviewed: { on: { PAY: 'paying' } },
      paying: {
        machine: paymentMachine,
        queue: true,
        input: ['amount'],
        forward: ['PROVIDE_CARD', { CONFIRM_PAYMENT: 'CONFIRM' }],
        on: {
          '@done.paid': 'paid',
          '@done': 'idle',
          '@timeout': { target: 'expired', after: { minutes: 10 } },
          CANCEL: 'idle',
        },
      },
      chatting: {
        machine: chatty,
        queue: true,
        on: { '@done': 'idle', HEARD: { actions: 'hear' } },
      },
      paid: { type: 'final' },
      expired: { on: { PAY: 'paying' } },
    },
  },
  behavior: {
    actions: {
      storeVerdict: ({ context, event }) => {
        context.verdict = (event.payload?.output as { verdict: string }).verdict;
      },
      hear: ({ context, event }) => {
        (context.heard as string[]).push(String(event.payload?.how));
      },
    },
  },
});

const backends: (
  | StoreBackend
  | { name: string; open: () => Promise<Store>; setUp(): Promise<void>; tearDown(): Promise<void> }
)[] = [
  {
    name: 'memory',
    open: async () => new MemoryStore(),
    setUp: async () => {},
    tearDown: async () => {},
  },
  sqliteFileBackend(),
];
const postgres = await postgresBackend('delegation-runtime');
if (postgres) backends.push(postgres);

describe.each(backends)('delegation through MachineRuntime on $name', (backend) => {
  let store: Store;
  let now: Date;
  let queue: InMemoryJobQueue;
  let runtime: MachineRuntime;
  const errors: unknown[] = [];

  beforeAll(async () => {
    await backend.setUp();
    store = await backend.open();
  });
  afterAll(async () => {
    await store.close();
    await backend.tearDown();
  });
  beforeEach(() => {
    now = new Date('2026-03-01T10:00:00.000Z');
    queue = new InMemoryJobQueue({ now: () => now });
    errors.length = 0;
    runtime = new MachineRuntime({
      store,
      jobs: queue,
      now: () => now,
      sendRetry: { delayMs: 1000 },
      onDeferredError: (error) => errors.push(error),
    });
  });

  const started = async (event = 'PAY') => {
    const { snapshot } = await runtime.create(order);
    await runtime.send(order, snapshot.id, { type: event });
    return snapshot.id;
  };

  it('should persist a synchronous child with its row and route @done in the same step', async () => {
    const id = await started('REVIEW');

    const parent = await runtime.restore(order, id);
    expect(parent).toMatchObject({ value: ['order.reviewed'], context: { verdict: 'ok' } });
    const [row] = await runtime.children(id);
    expect(row).toMatchObject({
      parentStateId: 'order.reviewing',
      childMachineId: 'review',
      status: 'completed',
    });
    const child = await store.load(row!.id);
    expect(child).toMatchObject({
      machineId: 'review',
      status: 'done',
      parent: { machineId: 'order', id },
    });
  });

  it('should start an asynchronous child through the queue and complete the parent when it finishes', async () => {
    const id = await started();
    expect(await runtime.children(id)).toEqual([
      expect.objectContaining({ status: 'pending', childMachineId: 'payment' }),
    ]);

    await queue.runDue();
    const [row] = await runtime.children(id);
    expect(row?.status).toBe('running');
    expect(await store.load(row!.id)).toMatchObject({
      value: ['payment.awaiting'],
      context: { amount: 25 },
    });

    // The child finishes through its own events (its own endpoints).
    await runtime.send(paymentMachine, row!.id, {
      type: 'PROVIDE_CARD',
      payload: { card: '4111111111111111' },
    });
    await runtime.send(paymentMachine, row!.id, { type: 'CONFIRM' });
    expect((await runtime.children(id))[0]?.status).toBe('completed');
    expect((await runtime.restore(order, id)).value).toEqual(['order.paying']);

    await queue.runDue();
    expect((await runtime.restore(order, id)).value).toEqual(['order.paid']);
    const types = (await runtime.history(order, id)).map((record) => record.type);
    expect(types).toContain('order.child.payment.done');
    expect(types).toContain('order.transition.paying.@done.paid.start');
  });

  it('should forward parent events to the running child and list them as available', async () => {
    const id = await started();
    await expect(
      runtime.send(order, id, { type: 'PROVIDE_CARD', payload: { card: '1' } }),
    ).rejects.toThrow(ForwardTargetUnavailableException);
    await queue.runDue();
    const parent = await runtime.restore(order, id);
    expect(await runtime.availableEvents(order, parent)).toEqual([
      { type: 'CANCEL', source: 'parent' },
      { type: 'PROVIDE_CARD', source: 'forward' },
    ]);

    const result = await runtime.send(order, id, {
      type: 'PROVIDE_CARD',
      payload: { card: '4111111111111111' },
    });

    expect(result.snapshot.value).toEqual(['order.paying']);
    expect(result.history.map((record) => [record.type, record.source])).toEqual([
      ['PROVIDE_CARD', 'external'],
    ]);
    const child = await runtime.forwardedChild(order, result.snapshot, order.forwards[0]!);
    expect(child).toMatchObject({ value: ['payment.charging'], context: { cardLast4: '1111' } });
    expect(await runtime.availableEvents(order, result.snapshot)).toEqual([
      { type: 'CANCEL', source: 'parent' },
      { type: 'CONFIRM_PAYMENT', source: 'forward' },
    ]);
    // The child does not accept PROVIDE_CARD any more: 409, nothing written.
    await expect(
      runtime.send(order, id, { type: 'PROVIDE_CARD', payload: { card: '2' } }),
    ).rejects.toThrow(/does not accept 'PROVIDE_CARD'/);

    // Forwarded to final: the parent completes through the completion job.
    await runtime.send(order, id, { type: 'CONFIRM_PAYMENT' });
    await queue.runDue();
    expect((await runtime.restore(order, id)).value).toEqual(['order.paid']);
  });

  it('should cancel the child row when the delegating state is left', async () => {
    const id = await started();
    await queue.runDue();

    await runtime.send(order, id, { type: 'CANCEL' });

    expect((await runtime.children(id)).map((row) => row.status)).toEqual(['cancelled']);
    await runtime.send(paymentMachine, (await runtime.children(id))[0]!.id, { type: 'ABORT' });
    await queue.runDue();
    expect((await runtime.restore(order, id)).value).toEqual(['order.idle']);
  });

  it('should route @timeout when the delay passes first', async () => {
    const id = await started();
    await queue.runDue();

    now = new Date(now.getTime() + 10 * 60 * 1000);
    await queue.runDue();

    expect((await runtime.restore(order, id)).value).toEqual(['order.expired']);
    expect((await runtime.children(id)).map((row) => row.status)).toEqual(['timed_out']);
  });

  it('should route @fail when an asynchronous child fails to start, and ignore a late timeout', async () => {
    const broken = defineMachine({
      config: { id: 'broken', initial: 'a', entry: 'explode', states: { a: {} } },
      behavior: {
        actions: {
          explode: () => {
            throw new Error('card service down');
          },
        },
      },
    });
    const parent = defineMachine({
      config: {
        id: 'fragile',
        initial: 'working',
        states: {
          working: {
            machine: broken,
            queue: true,
            on: { '@done': 'done', '@fail': 'failed', '@timeout': { target: 'late', after: 60 } },
          },
          done: { type: 'final' },
          failed: { type: 'final' },
          late: { type: 'final' },
        },
      },
    });
    const { snapshot } = await runtime.create(parent);

    await queue.runDue();
    now = new Date(now.getTime() + 60_000);
    await queue.runDue();

    expect((await runtime.restore(parent, snapshot.id)).value).toEqual(['fragile.failed']);
    expect((await runtime.children(snapshot.id)).map((row) => row.status)).toEqual(['failed']);
    const fail = (await runtime.history(parent, snapshot.id)).find(
      (record) => record.type === 'fragile.child.broken.fail',
    );
    expect(fail?.payload).toMatchObject({ error: { name: 'Error', message: 'card service down' } });
  });

  it('should deliver sendToParent right away and dispatchToParent through the queue', async () => {
    const id = await started('CHAT');
    await queue.runDue();
    const childId = (await runtime.children(id))[0]!.id;

    await runtime.send(chatty, childId, { type: 'SAY' });
    expect((await runtime.restore(order, id)).context.heard).toEqual(['sync']);

    await runtime.send(chatty, childId, { type: 'QUEUE' });
    expect((await runtime.restore(order, id)).context.heard).toEqual(['sync']);
    await queue.runDue();
    expect((await runtime.restore(order, id)).context.heard).toEqual(['sync', 'async']);
    expect(errors).toEqual([]);
  });

  it('should retry a synchronous send as a job while the target is locked', async () => {
    const id = await started('CHAT');
    await queue.runDue();
    const childId = (await runtime.children(id))[0]!.id;

    await runtime.withLock(id, () => runtime.send(chatty, childId, { type: 'SAY' }));
    expect((await runtime.restore(order, id)).context.heard).toEqual([]);

    now = new Date(now.getTime() + 1000);
    await queue.runDue();
    expect((await runtime.restore(order, id)).context.heard).toEqual(['sync']);
  });

  it('should forward to the child of the region whose state forwards the event', async () => {
    const split = defineMachine({
      config: {
        id: 'split',
        initial: 'work',
        states: {
          work: {
            type: 'parallel',
            states: {
              billing: {
                initial: 'paying',
                states: {
                  paying: {
                    machine: paymentMachine,
                    queue: true,
                    forward: ['PROVIDE_CARD'],
                    on: { '@done': 'paid' },
                  },
                  paid: { type: 'final' },
                },
              },
              chat: {
                initial: 'open',
                states: {
                  open: {
                    machine: chatty,
                    queue: true,
                    forward: [{ CLOSE_CHAT: 'CLOSE' }],
                    on: { '@done': 'closed' },
                  },
                  closed: { type: 'final' },
                },
              },
            },
          },
        },
      },
    });
    const { snapshot } = await runtime.create(split);
    await queue.runDue();

    expect(await runtime.availableEvents(split, snapshot)).toEqual([
      { type: 'PROVIDE_CARD', source: 'forward', region: 'billing' },
      { type: 'CLOSE_CHAT', source: 'forward', region: 'chat' },
    ]);
    await runtime.send(split, snapshot.id, { type: 'CLOSE_CHAT' });
    await queue.runDue();

    expect((await runtime.restore(split, snapshot.id)).value).toEqual([
      'split.work.billing.paying',
      'split.work.chat.closed',
    ]);
    const rows = await runtime.children(snapshot.id);
    expect(rows.map((row) => [row.childMachineId, row.status])).toEqual([
      ['payment', 'running'],
      ['chatty', 'completed'],
    ]);
  });

  it('should retry an async send while the target does not accept the event yet', async () => {
    const sender = defineMachine({
      config: { id: 'sender', initial: 'a', states: { a: { on: { GO: { actions: 'go' } } } } },
      behavior: {
        actions: {
          go: ({ dispatchTo, event }) =>
            dispatchTo({ machineId: 'order', id: String(event.payload?.to) }, 'REVIEW'),
        },
      },
    });
    runtime = new MachineRuntime({
      store,
      jobs: queue,
      now: () => now,
      machines: [order],
      sendRetry: { delayMs: 1000, tries: 3 },
      onDeferredError: (error) => errors.push(error),
    });
    const target = await started('PAY');
    const { snapshot } = await runtime.create(sender);
    await runtime.send(sender, snapshot.id, { type: 'GO', payload: { to: target } });

    await queue.runDue();
    await runtime.send(order, target, { type: 'CANCEL' });
    now = new Date(now.getTime() + 1000);
    await queue.runDue();

    expect((await runtime.restore(order, target)).value).toEqual(['order.reviewed']);
  });
});

describe('MachineRuntime without a job queue', () => {
  it('should run asynchronous work on an in-process queue of its own', async () => {
    const runtime = new MachineRuntime({ store: new MemoryStore() });
    const { snapshot } = await runtime.create(order);

    await runtime.send(order, snapshot.id, { type: 'PAY' });
    await vi.waitFor(async () => {
      expect((await runtime.children(snapshot.id)).map((row) => row.status)).toEqual(['running']);
    });
  });
});

export type { MachineDefinition };
