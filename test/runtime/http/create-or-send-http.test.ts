/**
 * Create-or-send on a business key (`createOrSend`, docs/http.md "Create-or-send"), over HTTP on
 * a listening server, on a SQLite file and on PostgreSQL: the first request on a key creates the
 * instance with the event applied, later ones send to it; 50 concurrent first requests on one
 * key leave one instance and, with `contention: { wait }`, 50 events applied in order of the
 * lock (with `reject`, the 423s applied nothing); two server processes racing on one key leave
 * one instance. A request without a key is a 422; a refused first event creates nothing; an
 * invalid registration is a build-time `MR_INVALID_CREATE_OR_SEND`.
 */
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyedOrderMachine } from '../../../fixtures/http/keyed-order-machine.js';
import { defineMachine } from '../../../src/runtime/definition/define-machine.js';
import { defineEvent } from '../../../src/runtime/definition/event-type.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { AggregateMachineRoutesError, MachineRoutesError } from '../../../src/runtime/errors.js';
import { MachineRouter } from '../../../src/runtime/http/machine-router.js';
import { planRoutes } from '../../../src/runtime/http/plan-routes.js';
import type { RegistrationOptions } from '../../../src/runtime/http/types.js';
import { postgresBackend, sqliteFileBackend, type StoreBackend } from '../../support/stores.js';
import { useServerProcesses } from './support/server-processes.js';
import { send, startServer, type TestServer } from './support/servers.js';

const KEYED_SERVER = fileURLToPath(new URL('./fixtures/keyed-order-server.ts', import.meta.url));
const BURST = 50;

/** Waits for the lock long enough for any burst of this suite on a loaded machine. */
const WAITING: RegistrationOptions = {
  prefix: 'orders',
  createOrSend: { key: 'orderNumber', events: ['PAYMENT', 'CANCEL', 'REFUND'] },
  reads: true,
  contention: { wait: 30_000 },
};
/** The default contention policy: a busy instance is answered 423 at once. */
const REJECTING: RegistrationOptions = {
  prefix: 'strict',
  name: 'strict',
  only: ['PAYMENT'],
  createOrSend: { key: 'orderNumber', events: ['PAYMENT'] },
};

const backends: StoreBackend[] = [sqliteFileBackend()];
const postgres = await postgresBackend('create-or-send-http');
if (postgres) backends.push(postgres);

interface OrderEnvelope {
  data: { id: string; state: string[]; output: { payments: number; seen: number[] } };
}
const envelope = (body: unknown) => (body as OrderEnvelope).data;

describe('createOrSend registration option', () => {
  it('should plan key-bound routes at the endpoint URI, without a path parameter', () => {
    const routes = planRoutes(keyedOrderMachine, WAITING);
    const payment = routes.find((route) => route.eventType === 'PAYMENT')!;
    expect(payment).toMatchObject({
      name: 'keyed_order.payment',
      method: 'POST',
      path: '/orders/payment',
      handler: 'keyBound',
      binding: { kind: 'key', field: 'orderNumber' },
      contention: { waitMs: 30_000 },
    });
    // Never 404 (a missing instance is created); contention and If-Match as on bound routes.
    expect(payment.errorStatuses).toEqual([400, 409, 412, 413, 415, 422, 423, 500]);
  });

  const refused = (options: RegistrationOptions, definition = keyedOrderMachine) => {
    try {
      planRoutes(definition, options);
    } catch (error) {
      const all = error instanceof AggregateMachineRoutesError ? error.issues : [error];
      return all.map((issue) => {
        const known = issue as MachineRoutesError;
        return { code: known.code, message: known.message };
      });
    }
    throw new Error('planned without an error');
  };

  it('should refuse a key that is not a required string or number payload field, at build time', () => {
    const loose = defineMachine({
      config: {
        id: 'loose',
        initial: 'open',
        states: { open: { on: { NOTE: {}, TAG: {}, BARE: {}, LOOK: {} } } },
      },
      behavior: {
        events: {
          NOTE: defineEvent({ type: 'NOTE', payload: z.object({ text: z.string() }) }),
          TAG: defineEvent({ type: 'TAG', payload: z.object({ ref: z.string().optional() }) }),
          LOOK: defineEvent({ type: 'LOOK', payload: z.object({ ref: z.string() }) }),
        },
      },
      endpoints: ['NOTE', 'TAG', 'BARE', { LOOK: { method: 'GET' } }],
    });
    const issues = refused(
      { prefix: 'loose', createOrSend: { key: 'ref', events: ['NOTE', 'TAG', 'BARE', 'LOOK'] } },
      loose,
    );
    expect(issues.map((issue) => issue.code)).toEqual(Array(4).fill('MR_INVALID_CREATE_OR_SEND'));
    expect(issues.map((issue) => issue.message).join('\n')).toMatch(
      /key 'ref' is not a field of the payload schema of 'NOTE'.*\n.*key 'ref' is optional in the payload schema of 'TAG'.*\n.*key 'ref' is not a field of the payload schema of 'BARE'.*\n.*'LOOK', a GET endpoint/,
    );
    const objectKey = defineMachine({
      config: { id: 'objkey', initial: 'a', states: { a: { on: { PUT: {} } } } },
      behavior: {
        events: {
          PUT: defineEvent({ type: 'PUT', payload: z.object({ ref: z.object({}) }) }),
        },
      },
      endpoints: ['PUT'],
    });
    expect(
      refused({ prefix: 'o', createOrSend: { key: 'ref', events: ['PUT'] } }, objectKey)[0]!
        .message,
    ).toMatch(/key 'ref' of 'PUT' must be a string or a number field/);
  });

  it('should refuse events bound otherwise, unknown events and keys, naming the machine and registration', () => {
    const messages = refused({
      prefix: 'orders',
      machineIdFor: ['CANCEL'],
      createOrSend: { key: 'orderNumber', events: ['PAYMENT', 'CANCEL', 'SHIP'] },
    }).map((issue) => `${issue.code} ${issue.message}`);
    expect(messages).toEqual([
      expect.stringMatching(
        /^MR_INVALID_CREATE_OR_SEND .*'createOrSend' lists 'CANCEL', which is also in 'machineIdFor'.*\(machine 'keyed_order', registration 'keyed_order'\)$/,
      ),
      expect.stringMatching(/lists 'SHIP', which is not a registered endpoint of the machine/),
    ]);
    expect(
      refused({
        prefix: 'orders',
        createOrSend: { key: 'orderNumber', events: ['PAYMENT'], keys: [] } as never,
      })[0]!.message,
    ).toMatch(/'createOrSend' has unknown key 'keys'.*Known keys: key, events/);
    expect(
      refused({ prefix: 'orders', createOrSend: { key: '', events: ['PAYMENT'] } })[0]!.message,
    ).toMatch(/needs 'key'/);
    // MachineRouter.register refuses the same way, before mounting anything.
    const router = new MachineRouter({ runtime: {} as never });
    expect(() =>
      router.register(keyedOrderMachine, {
        prefix: 'orders',
        createOrSend: { key: 'number', events: ['PAYMENT'] },
      }),
    ).toThrow(/key 'number' is not a field of the payload schema of 'PAYMENT'/);
  });
});

describe.each(backends)('create-or-send over HTTP on $name', (backend) => {
  let runtime: MachineRuntime;
  let server: TestServer;

  beforeAll(async () => {
    await backend.setUp();
    runtime = await MachineRuntime.open({
      databaseUrl: backend.url(),
      migrate: true,
      worker: false,
    });
    const router = new MachineRouter({ runtime, logger: { error: () => {} } });
    router.register(keyedOrderMachine, WAITING);
    router.register(keyedOrderMachine, REJECTING);
    server = await startServer('fastify', [router], { error: () => {} });
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await runtime?.close();
    await backend.tearDown();
  });

  const pay = (orderNumber: unknown, n: number, prefix = 'orders') =>
    send(server.url, 'POST', `/${prefix}/payment`, { body: { payload: { orderNumber, n } } });
  const instancesOf = (businessKey: string) =>
    runtime.store.queries.listInstances({ machineId: 'keyed_order', businessKey, limit: 10 });

  it('should create the instance on the first request on a key and send to it afterwards', async () => {
    const first = await pay('A-1', 1);
    expect(first.status).toBe(200);
    const id = envelope(first.body).id;
    expect(envelope(first.body)).toMatchObject({
      state: ['keyed_order.open'],
      output: { payments: 1 },
    });
    const second = await pay('A-1', 2);
    expect(second.status).toBe(200);
    expect(envelope(second.body)).toMatchObject({ id, output: { payments: 2, seen: [1, 2] } });
    // Another key, another instance; the keys are listed for operators.
    const other = await pay('A-2', 1);
    expect(envelope(other.body).id).not.toBe(id);
    expect((await instancesOf('A-1')).map((row) => row.id)).toEqual([id]);
    // The instance is an ordinary one: its reads answer by machine id.
    const read = await send(server.url, 'GET', `/orders/${id}/status`);
    expect(envelope(read.body).output).toEqual({ payments: 2, seen: [1, 2] });
  });

  it('should answer 422 for a request without a usable key, writing nothing', async () => {
    const missing = await send(server.url, 'POST', '/orders/payment', {
      body: { payload: { n: 1 } },
    });
    expect(missing.status).toBe(422);
    expect((missing.body as { errors: Record<string, string[]> }).errors).toHaveProperty([
      'payload.orderNumber',
    ]);
    const empty = await pay('', 1);
    expect(empty.status).toBe(422);
    expect((empty.body as { errors: Record<string, string[]> }).errors).toEqual({
      'payload.orderNumber': [
        "The business key 'orderNumber' must be a non-empty string or a number.",
      ],
    });
    expect(await instancesOf('')).toEqual([]);
  });

  it('should create nothing when the first event is refused (409), then go on with the key', async () => {
    const refund = await send(server.url, 'POST', '/orders/refund', {
      body: { payload: { orderNumber: 'R-1' } },
    });
    expect(refund.status).toBe(409);
    expect(await instancesOf('R-1')).toEqual([]);
    expect((await pay('R-1', 1)).status).toBe(200);
    const cancel = await send(server.url, 'POST', '/orders/cancel', {
      body: { payload: { orderNumber: 'R-1' } },
    });
    expect(envelope(cancel.body).state).toEqual(['keyed_order.cancelled']);
    const again = await send(server.url, 'POST', '/orders/refund', {
      body: { payload: { orderNumber: 'R-1' } },
    });
    expect(envelope(again.body).state).toEqual(['keyed_order.refunded']);
    expect(await instancesOf('R-1')).toHaveLength(1);
  });

  it('should refuse If-Match on a key no instance has yet (412), creating nothing', async () => {
    const conditional = await send(server.url, 'POST', '/orders/payment', {
      body: { payload: { orderNumber: 'M-1', n: 1 } },
      headers: { 'if-match': '"1"' },
    });
    expect(conditional.status).toBe(412);
    expect(await instancesOf('M-1')).toEqual([]);
  });

  it(`should give ${BURST} concurrent first requests on one key one instance and apply all ${BURST} events in lock order (wait)`, async () => {
    const answers = await Promise.all(
      Array.from({ length: BURST }, (_, index) => pay('BURST-1', index)),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(BURST).fill(200));
    const rows = await instancesOf('BURST-1');
    expect(rows).toHaveLength(1);
    const id = rows[0]!.id;
    expect(new Set(answers.map((answer) => envelope(answer.body).id))).toEqual(new Set([id]));
    const context = (await runtime.store.load(id))!.context as { payments: number; seen: number[] };
    expect(context.payments).toBe(BURST);
    expect([...context.seen].sort((a, b) => a - b)).toEqual(
      Array.from({ length: BURST }, (_, index) => index),
    );
    // In order: each answer shows the events applied before it, its own last.
    for (const answer of answers) {
      const { seen, payments } = envelope(answer.body).output;
      expect(seen).toEqual(context.seen.slice(0, payments));
    }
    // One history, gap-free: the creation and 50 events, each once.
    const history = await runtime.store.history(id);
    expect(history.filter((record) => record.type === 'PAYMENT')).toHaveLength(BURST);
    expect(history.map((record) => record.sequence)).toEqual(
      Array.from({ length: history.length }, (_, index) => index + 1),
    );
  });

  it(`should give ${BURST} concurrent first requests one instance under 'reject': the 423s applied nothing`, async () => {
    const answers = await Promise.all(
      Array.from({ length: BURST }, (_, index) => pay('BURST-2', index, 'strict')),
    );
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.every((status) => status === 200 || status === 423)).toBe(true);
    const applied = answers.filter((answer) => answer.status === 200);
    expect(applied.length).toBeGreaterThan(0);
    const rows = await instancesOf('BURST-2');
    expect(rows).toHaveLength(1);
    const context = (await runtime.store.load(rows[0]!.id))!.context as { seen: number[] };
    expect([...context.seen].sort((a, b) => a - b)).toEqual(
      applied
        .map((answer) => answer.body as OrderEnvelope)
        .map((body) => body.data.output.seen.at(-1))
        .sort((a, b) => a! - b!),
    );
    for (const answer of answers.filter((candidate) => candidate.status === 423))
      expect(envelope(answer.body).id).toBe(rows[0]!.id);
  });
});

describe.runIf(postgres !== null)(
  'create-or-send across two server processes on PostgreSQL',
  () => {
    const processes = useServerProcesses(postgres!, KEYED_SERVER, [JSON.stringify(WAITING)]);
    const { urls } = processes;

    it('should create one instance for first requests racing on one key in two processes', async () => {
      const [one, two] = urls as [string, string];
      for (const key of ['TWO-1', 'TWO-2', 'TWO-3']) {
        const answers = await Promise.all(
          Array.from({ length: BURST }, (_, index) =>
            send(index % 2 === 0 ? one : two, 'POST', '/orders/payment', {
              body: { payload: { orderNumber: key, n: index } },
            }),
          ),
        );
        expect(answers.map((answer) => answer.status)).toEqual(Array(BURST).fill(200));
        const rows = await processes.runtime.store.queries.listInstances({
          machineId: 'keyed_order',
          businessKey: key,
          limit: 10,
        });
        expect(rows).toHaveLength(1);
        const context = (await processes.runtime.store.load(rows[0]!.id))!.context as {
          seen: number[];
        };
        expect([...context.seen].sort((a, b) => a - b)).toEqual(
          Array.from({ length: BURST }, (_, index) => index),
        );
      }
      const all = await processes.runtime.store.queries.listInstances({
        machineId: 'keyed_order',
        limit: 100,
      });
      expect(all).toHaveLength(3);
    }, 120_000);
  },
);
