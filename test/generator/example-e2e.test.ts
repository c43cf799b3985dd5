/**
 * The generated example end to end: the generated server listening on a real port, driven
 * through the generated client. `customer` sends no credentials, as an outside client that
 * knows only the OpenAPI document would: every route but the staff tickets is public.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { SqliteStore } from '../../src/runtime/index.js';
import { checkoutMachine } from '../../fixtures/example/machines/checkout.js';
import { CHILD_START_WAIT_MS } from '../../src/runtime/engine/forwarded-send.js';
import { startFixture } from '../support/child-process.js';
import { buildApp, type App } from '../../generated-example/app.gen.js';
import {
  createClient,
  UnexpectedResponseError,
  type Client,
} from '../../generated-example/client.gen.js';

const SERVER = fileURLToPath(new URL('../../generated-example/server.gen.ts', import.meta.url));

let app: App;
let baseUrl: string;
let customer: Client;
let staff: Client;

beforeAll(async () => {
  app = await buildApp({ databaseUrl: 'sqlite::memory:' });
  baseUrl = await app.listen(0);
  customer = createClient({ baseUrl });
  staff = createClient({ baseUrl, headers: { authorization: 'Bearer staff-token' } });
});

/** The rows of the example's invoices table, in the app's own store. */
function invoiceRows(built: App): unknown[] {
  return (built.runtime.store as SqliteStore).database
    .prepare('SELECT number, customer, machine_id FROM invoices ORDER BY number')
    .all();
}

afterAll(async () => {
  await app.close();
});

async function createOrder(): Promise<string> {
  const created = await customer.order.create();
  if (created.status !== 201) throw new Error(`create answered ${created.status}`);
  return created.body.data.id;
}

describe('generated client against the generated server', () => {
  it('should create an order and drive it through events', async () => {
    const created = await customer.order.create();
    expect(created).toEqual({
      ok: true,
      status: 201,
      body: {
        data: {
          id: expect.any(String),
          state: ['order.draft'],
          output: { total: 0, note: null, lastQuote: null },
        },
      },
    });
    const machineId = created.status === 201 ? created.body.data.id : '';

    const submitted = await customer.order.submit({
      machineId,
      payload: { amount: 500, note: 'gift' },
    });
    expect(submitted).toEqual({
      ok: true,
      status: 200,
      // The instance version it shows (docs/client.md "Versions").
      etag: expect.any(String),
      body: {
        data: {
          id: machineId,
          state: ['order.submitted'],
          availableEvents: [
            { type: 'APPROVE', source: 'parent' },
            { type: 'CANCEL', source: 'parent' },
            { type: 'QUOTE', source: 'parent' },
            { type: 'EXPIRE', source: 'parent' },
          ],
          output: { total: 500, note: 'gift', lastQuote: null },
          isProcessing: false,
        },
      },
    });

    const quoted = await customer.order.quote({ machineId, payload: { quantity: 3 } });
    expect(quoted.status === 200 && quoted.body.data.output).toEqual({
      total: 500,
      note: 'gift',
      lastQuote: 75,
    });

    const approved = await customer.order.approve({ machineId });
    expect(approved.status === 200 && approved.body.data).toEqual({
      id: machineId,
      state: ['order.approved'],
      availableEvents: [],
      output: { total: 500, approved: true },
      isProcessing: false,
    });
  });

  it('should explain availableEvents on the review registration: APPROVE over the limit is disabled with the guard message', async () => {
    const machineId = await createOrder();
    await customer.order.submit({ machineId, payload: { amount: 20_000 } });

    const review = await customer.orderReview.read.status({ machineId });
    expect(review.status === 200 && review.body.data.availableEvents).toEqual([
      {
        type: 'APPROVE',
        source: 'parent',
        enabled: false,
        reason: 'Orders over 10000 need a manual approval.',
      },
      { type: 'CANCEL', source: 'parent', enabled: true },
      // QUOTE has no guard (its action reads the payload, but actions are not evaluated).
      { type: 'QUOTE', source: 'parent', enabled: true },
      { type: 'EXPIRE', source: 'parent', enabled: true },
    ]);
    // The reason is the 422 a send answers; the plain registration keeps the spec's entries.
    const refused = await customer.orderReview.approve({ machineId });
    expect(refused.status === 422 && refused.body.message).toBe(
      'Orders over 10000 need a manual approval.',
    );
    const plain = await customer.order.read.status({ machineId });
    expect(plain.status === 200 && plain.body.data.availableEvents).toEqual([
      { type: 'APPROVE', source: 'parent' },
      { type: 'CANCEL', source: 'parent' },
      { type: 'QUOTE', source: 'parent' },
      { type: 'EXPIRE', source: 'parent' },
    ]);
  });

  it('should answer 422 with field errors for an invalid payload', async () => {
    const machineId = await createOrder();
    const rejected = await customer.order.submit({ machineId, payload: { amount: 0 } });
    expect(rejected.status).toBe(422);
    if (rejected.status !== 422) return;
    expect(rejected.ok).toBe(false);
    expect(rejected.body).toEqual({
      message: expect.any(String),
      errors: { 'payload.amount': [expect.any(String)] },
    });
  });

  it('should answer 422 when a validation guard rejects the event', async () => {
    const machineId = await createOrder();
    await customer.order.submit({ machineId, payload: { amount: 20_000 } });
    const rejected = await customer.order.approve({ machineId });
    expect(rejected).toEqual({
      ok: false,
      status: 422,
      body: {
        message: 'Orders over 10000 need a manual approval.',
        errors: { total: ['Orders over 10000 need a manual approval.'] },
      },
    });
  });

  it('should answer 423 with the last committed state while the instance is locked', async () => {
    const machineId = await createOrder();
    await customer.order.submit({ machineId, payload: { amount: 700 } });
    const contended = await app.runtime.withLock(machineId, () =>
      customer.order.cancel({ machineId }),
    );
    expect(contended).toEqual({
      ok: false,
      status: 423,
      body: {
        data: {
          id: machineId,
          state: ['order.submitted'],
          output: { total: 700 },
          isProcessing: true,
        },
      },
    });
    const cancelled = await customer.order.cancel({ machineId });
    expect(cancelled.status === 200 && cancelled.body.data.state).toEqual(['order.cancelled']);
  });

  it('should read an order through the typed read methods, writing nothing', async () => {
    const machineId = await createOrder();
    await customer.order.submit({ machineId, payload: { amount: 700 } });
    const history = (await app.runtime.store.history(machineId)).length;
    const status = await customer.order.read.status({ machineId });
    expect(status).toEqual({
      ok: true,
      status: 200,
      // The instance version it shows (docs/client.md "Versions").
      etag: expect.any(String),
      body: {
        data: {
          id: machineId,
          state: ['order.submitted'],
          availableEvents: [
            { type: 'APPROVE', source: 'parent' },
            { type: 'CANCEL', source: 'parent' },
            { type: 'QUOTE', source: 'parent' },
            { type: 'EXPIRE', source: 'parent' },
          ],
          output: { total: 700, note: null, lastQuote: null },
          isProcessing: false,
        },
      },
    });
    const summary = await customer.order.read.summary({ machineId });
    expect(summary.status === 200 && summary.body.data.output).toEqual({
      total: 700,
      approved: true,
    });
    const missing = await customer.order.read.status({ machineId: '01ARZ3NDEKTSV4RRFFQ69G5FAV' });
    expect(missing).toEqual({ ok: false, status: 404, body: { message: 'Machine not found.' } });
    expect(await app.runtime.store.history(machineId)).toHaveLength(history);
  });

  it('should follow an order with subscribe and waitFor until aborted', async () => {
    const machineId = await createOrder();
    const states: string[][] = [];
    let seen: () => void = () => {};
    const following = customer.order.subscribe(
      { machineId },
      {
        onState: (message, sequence) => {
          expect(sequence).toBeGreaterThan(0);
          states.push(message.data.state);
          seen();
        },
      },
    );
    const waiting = customer.order.waitFor({
      machineId,
      state: 'order.submitted',
      timeout: 30_000,
    });
    await vi.waitFor(() => expect(states).toHaveLength(1), { timeout: 10_000, interval: 20 });
    const next = new Promise<void>((resolve) => (seen = resolve));
    await customer.order.submit({ machineId, payload: { amount: 700 } });
    await next;
    const reached = await waiting;
    expect(reached.status === 200 && reached.body.data.state).toEqual(['order.submitted']);
    const timedOut = await customer.order.waitFor({
      machineId,
      state: 'order.approved',
      timeout: 10,
    });
    expect(timedOut.status === 200 && timedOut.body.data.state).toEqual(['order.submitted']);
    // A final state ends the stream: subscribe resolves.
    await customer.order.cancel({ machineId });
    await following;
    expect(states).toEqual([['order.draft'], ['order.submitted'], ['order.cancelled']]);
  });

  it('should end a subscription on abort and resume one after lastEventId', async () => {
    const machineId = await createOrder();
    const controller = new AbortController();
    const first: Array<[string[], number]> = [];
    // Aborted from its own callback: subscribe resolves, nothing more is delivered.
    await customer.order.subscribe(
      { machineId },
      {
        signal: controller.signal,
        onState: (message, sequence) => {
          first.push([message.data.state, sequence]);
          controller.abort();
        },
      },
    );
    expect(first).toEqual([[['order.draft'], expect.any(Number)]]);
    const resumed: string[][] = [];
    let heard: () => void = () => {};
    const stop = new AbortController();
    const resuming = customer.order.subscribe(
      { machineId },
      {
        signal: stop.signal,
        lastEventId: first[0]![1],
        onState: (message) => {
          resumed.push(message.data.state);
          heard();
        },
      },
    );
    // The client already has the draft state: the resumed stream sends only what follows.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(resumed).toEqual([]);
    const next = new Promise<void>((resolve) => (heard = resolve));
    await customer.order.submit({ machineId, payload: { amount: 300 } });
    await next;
    stop.abort();
    await resuming;
    await customer.order.cancel({ machineId });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(first).toHaveLength(1);
    expect(resumed).toEqual([['order.submitted']]);
  });

  it('should answer 401 on a protected route without valid credentials', async () => {
    const created = await customer.ticket.create();
    const machineId = created.status === 201 ? created.body.data.id : '';
    const unauthenticated = { ok: false, status: 401, body: { message: 'Unauthenticated.' } };
    expect(await customer.ticketStaff.assign({ machineId, payload: { agent: 'ada' } })).toEqual(
      unauthenticated,
    );
    const wrongToken = createClient({ baseUrl, auth: () => 'forged-token' });
    expect(await wrongToken.ticketStaff.assign({ machineId, payload: { agent: 'ada' } })).toEqual(
      unauthenticated,
    );
    // customer-token is valid for the api guard, not for RESOLVE's auth:admin.
    const customerToken = createClient({ baseUrl, auth: () => 'customer-token' });
    expect(
      await customerToken.ticketStaff.assign({ machineId, payload: { agent: 'ada' } }),
    ).toMatchObject({ ok: true, status: 200 });
    expect(await customerToken.ticketStaff.resolve({ machineId })).toEqual(unauthenticated);
  });

  it('should answer 404 for an unknown instance', async () => {
    const missing = await customer.order.submit({
      machineId: '01ARZ3NDEKTSV4RRFFQ69G5FAV',
      payload: { amount: 5 },
    });
    expect(missing).toEqual({ ok: false, status: 404, body: { message: expect.any(String) } });
  });

  it('should run stateless, model-bound, parallel and protected routes', async () => {
    const sum = await customer.calculator.add({ payload: { a: 2, b: 3 } });
    expect(sum.status === 200 && sum.body.data.output).toEqual({ result: 5 });

    expect((await customer.invoice.void({ invoice: 'INV-404' })).status).toBe(404);

    const fulfillment = await customer.fulfillment.create();
    const id = fulfillment.status === 201 ? fulfillment.body.data.id : '';
    const captured = await customer.fulfillment.capture({ machineId: id });
    expect(captured.status === 200 && captured.body.data.availableEvents).toEqual([
      { type: 'PACK', source: 'parent', region: 'packing' },
    ]);

    const ticket = await customer.ticket.create();
    const ticketId = ticket.status === 201 ? ticket.body.data.id : '';
    expect(
      (await customer.ticket.comment({ machineId: ticketId, payload: { text: 'hello' } })).status,
    ).toBe(200);
    expect(
      (await staff.ticketStaff.assign({ machineId: ticketId, payload: { agent: 'ada' } })).status,
    ).toBe(200);
    expect((await customer.ticketStaff.resolve({ machineId: ticketId })).status).toBe(401);
    const resolved = await staff.ticketStaff.resolve({ machineId: ticketId });
    expect(resolved.status === 200 && resolved.body.data.state).toEqual(['ticket.resolved']);
  });

  it('should count a retried COMMENT once when it carries the same idempotencyKey', async () => {
    const ticket = await customer.ticket.create();
    const machineId = ticket.status === 201 ? ticket.body.data.id : '';
    const comment = { machineId, payload: { text: 'charged twice?' } };
    const first = await customer.ticket.comment(comment, { idempotencyKey: 'comment-1' });
    const retry = await customer.ticket.comment(comment, { idempotencyKey: 'comment-1' });
    expect(first.status === 200 && first.body.data.output).toMatchObject({ comments: 1 });
    expect(retry.body).toEqual(first.body);
    const reused = await customer.ticket.comment(
      { machineId, payload: { text: 'something else' } },
      { idempotencyKey: 'comment-1' },
    );
    expect(reused.status).toBe(422);
    // Without a key every request is an event (the spec's behaviour).
    const next = await customer.ticket.comment(comment);
    expect(next.status === 200 && next.body.data.output).toMatchObject({ comments: 2 });
  });

  it('should bind invoices to the rows of the table the config seeds in the store', async () => {
    const paid = await customer.invoice.pay({
      invoice: 'INV-1',
      payload: { amount: 120, method: 'card' },
    });
    const machineId = paid.status === 200 ? paid.body.data.id : '';
    expect(paid).toEqual({
      ok: true,
      status: 200,
      // The instance version it shows (docs/client.md "Versions").
      etag: expect.any(String),
      body: {
        data: {
          id: expect.any(String),
          state: ['invoice.paid'],
          availableEvents: [],
          output: { paid: 120, method: 'card' },
          isProcessing: false,
        },
      },
    });
    expect(invoiceRows(app)).toEqual([
      { number: 'INV-1', customer: 'Ada', machine_id: machineId },
      { number: 'INV-2', customer: 'Grace', machine_id: null },
    ]);
    // The stored machine id finds the same instance: paid is final, VOID has no transition.
    expect(await customer.invoice.void({ invoice: 'INV-1' })).toEqual({
      ok: false,
      status: 409,
      body: { message: expect.any(String) },
    });
  });

  it('should pass the AbortSignal to fetch', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(customer.order.create({ signal: controller.signal })).rejects.toThrow(/abort/i);
  });

  it('should throw UnexpectedResponseError on a status the route does not document', async () => {
    const client = createClient({
      baseUrl,
      fetch: async () => new Response('{"message":"teapot"}', { status: 418 }),
    });
    await expect(client.calculator.add({ payload: { a: 1, b: 1 } })).rejects.toBeInstanceOf(
      UnexpectedResponseError,
    );
  });
});

describe('forwarded child events through the generated client', () => {
  it('should pay a checkout through its payment child and reach @done.paid once the worker ran', async () => {
    const created = await customer.checkout.create();
    expect(created).toEqual({
      ok: true,
      status: 201,
      body: {
        data: {
          id: expect.any(String),
          state: ['checkout.paying'],
          output: { orderId: 'ORD-1', amount: 40, paidWith: null, paymentId: null },
        },
      },
    });
    const machineId = created.status === 201 ? created.body.data.id : '';

    // Right after create: the request waits for the worker to start the child (no 409).
    const provided = await customer.checkout.provideCard({
      machineId,
      payload: { card: '4111111111111111' },
    });
    expect(provided).toEqual({
      ok: true,
      status: 200,
      // The instance version it shows (docs/client.md "Versions").
      etag: expect.any(String),
      body: {
        data: {
          id: machineId,
          state: ['checkout.paying'],
          availableEvents: [
            { type: 'CANCEL', source: 'parent' },
            { type: 'CANCEL_PAYMENT', source: 'forward' },
            { type: 'CONFIRM_PAYMENT', source: 'forward' },
          ],
          child: { state: ['payment.authorizing'], output: { amount: 40, cardLast4: '1111' } },
          isProcessing: false,
        },
      },
    });

    const confirmed = await customer.checkout.confirmPayment({ machineId });
    expect(confirmed).toEqual({
      ok: true,
      status: 200,
      // The instance version it shows (docs/client.md "Versions").
      etag: expect.any(String),
      body: {
        data: {
          id: machineId,
          // The child is final; the parent moves on when the worker runs the completion job.
          state: ['checkout.paying'],
          availableEvents: [{ type: 'CANCEL', source: 'parent' }],
          output: { orderId: 'ORD-1', paid: 40, card: '1111' },
          child: { state: ['payment.paid'], output: { amount: 40, cardLast4: '1111' } },
          isProcessing: false,
        },
      },
    });
    await vi.waitFor(
      async () => {
        expect(await app.runtime.restore(checkoutMachine, machineId)).toMatchObject({
          value: ['checkout.paid'],
          context: { paidWith: '1111', paymentId: expect.stringMatching(/^PAY-\d{4}$/) },
        });
      },
      { timeout: 15_000, interval: 20 },
    );
    const outcomes = (await app.runtime.history(checkoutMachine, machineId))
      .map((record) => record.type)
      .filter((type) => type.startsWith('checkout.child.'));
    // The child authorized; the capture job actor called the payment provider.
    expect(outcomes).toEqual([
      'checkout.child.payment.start',
      'checkout.child.payment.done',
      'checkout.child.capturePayment.start',
      'checkout.child.capturePayment.done',
    ]);

    // Nothing to forward to any more: 409.
    const late = await customer.checkout.confirmPayment({ machineId });
    expect(late.status).toBe(409);
  });

  it('should answer a forward sent right after create, waiting for the child to start', async () => {
    // The served example in a process of its own, on a SQLite file: its worker starts the child
    // a few milliseconds after the create's commit (without the wait, 16 of 20 forwards sent
    // right after create were 409). In this process the client's own turns gave it that time.
    const dir = mkdtempSync(path.join(tmpdir(), 'machine-routes-forward-'));
    const server = startFixture(SERVER, [], {
      PORT: '0',
      MACHINE_DATABASE_URL: `sqlite:${path.join(dir, 'example.db')}`,
    });
    try {
      const line = await server.waitForLine((text) => text.includes('listening on'), 60_000);
      const client = createClient({ baseUrl: line.slice(line.indexOf('http')) });
      const statuses: number[] = [];
      for (let attempt = 0; attempt < 20; attempt++) {
        const created = await client.checkout.create();
        const machineId = created.status === 201 ? created.body.data.id : '';
        const provided = await client.checkout.provideCard({
          machineId,
          payload: { card: '4111111111111111' },
        });
        statuses.push(provided.status);
      }
      expect(statuses).toEqual(Array.from({ length: 20 }, () => 200));
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);

  it('should answer 409 when no worker starts the child within the wait', async () => {
    const idle = await buildApp({ databaseUrl: 'sqlite::memory:', worker: false });
    try {
      const client = createClient({ baseUrl: await idle.listen(0) });
      const created = await client.checkout.create();
      const machineId = created.status === 201 ? created.body.data.id : '';

      const provided = await client.checkout.provideCard({
        machineId,
        payload: { card: '4111111111111111' },
      });

      expect(provided).toEqual({
        ok: false,
        status: 409,
        body: {
          message: `Machine 'checkout' (instance '${machineId}'): 'PROVIDE_CARD' is forwarded to child machine 'payment' of state 'checkout.paying', but the child has not started within ${CHILD_START_WAIT_MS} ms (its start job is still queued). Retry shortly.`,
        },
      });
      expect((await idle.runtime.children(machineId)).map((row) => row.status)).toEqual([
        'pending',
      ]);
    } finally {
      await idle.close();
    }
  });
});

describe('buildApp', () => {
  it('should seed the invoices table once and keep its machine ids across restarts', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'machine-routes-example-'));
    const databaseUrl = `sqlite:${path.join(dir, 'example.db')}`;
    try {
      const first = await buildApp({ databaseUrl });
      const client = createClient({ baseUrl: await first.listen(0) });
      const paid = await client.invoice.pay({
        invoice: 'INV-2',
        payload: { amount: 80, method: 'transfer' },
      });
      await first.close();

      const second = await buildApp({ databaseUrl });
      try {
        expect(invoiceRows(second)).toEqual([
          { number: 'INV-1', customer: 'Ada', machine_id: null },
          {
            number: 'INV-2',
            customer: 'Grace',
            machine_id: paid.status === 200 && paid.body.data.id,
          },
        ]);
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('should refuse a store without SQL tables, and close it', async () => {
    await expect(buildApp({ databaseUrl: 'memory:' })).rejects.toThrow(
      "The example's invoices are a table of the store: use a sqlite: or postgres:// store, not 'memory'.",
    );
  });
});

describe('generated Express server', () => {
  it('should serve the same routes through the generated client', async () => {
    // The Express variant of the example, as emitted for the express fixture.
    const { buildApp: buildExpressApp } = await import('./__snapshots__/express/app.gen.js');
    const express = await buildExpressApp({ databaseUrl: 'sqlite::memory:' });
    try {
      const client = createClient({ baseUrl: await express.listen(0) });
      const created = await client.order.create();
      const machineId = created.status === 201 ? created.body.data.id : '';
      const submitted = await client.order.submit({ machineId, payload: { amount: 42 } });
      expect(submitted.status === 200 && submitted.body.data.state).toEqual(['order.submitted']);
      expect((await client.order.submit({ machineId, payload: { amount: -1 } })).status).toBe(422);
    } finally {
      await express.close();
    }
  });
});
