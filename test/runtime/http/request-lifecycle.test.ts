/**
 * The neutral lifecycle without a server: forwarded endpoints (whose child lookup the runtime
 * does not provide yet) against an instance double, and handler construction errors.
 */
import { describe, expect, it } from 'vitest';
import { checkoutMachine } from '../../../fixtures/http/checkout-machine.js';
import { checkoutMachine as exampleCheckout } from '../../../fixtures/example/machines/checkout.js';
import { forwardedOutput } from '../../../src/runtime/http/forwarded-output.js';
import type { MachineDefinition } from '../../../src/runtime/definition/index.js';
import type { EventObject } from '../../../src/runtime/definition/types.js';
import {
  MachineAlreadyRunningException,
  MachineNotFoundException,
} from '../../../src/runtime/errors.js';
import {
  createRouteHandler,
  type HttpServices,
} from '../../../src/runtime/http/request-lifecycle.js';
import { consoleLogger } from '../../../src/runtime/http/http-logger.js';
import { planRoutes } from '../../../src/runtime/http/plan-routes.js';
import type { EndpointRequest, PlannedRoute } from '../../../src/runtime/http/types.js';
import { DEFAULT_PAYLOAD_LIMIT } from '../../../src/runtime/http/request-parsing.js';
import {
  availableEvents,
  initialize,
  resolveOutput,
} from '../../../src/runtime/interpreter/index.js';
import type { MachineSnapshot } from '../../../src/runtime/interpreter/types.js';
import { MemoryStore } from '../../../src/runtime/persistence/memory-store.js';

const ID = '01J0000000000000000000PARE';
const parent = initialize(checkoutMachine, { id: ID }).snapshot;
const child: MachineSnapshot = {
  machineId: 'payment',
  id: '01J0000000000000000000CHLD',
  value: ['payment.provided'],
  context: { card: '1111', status: 'new' },
  status: 'done',
  sequence: 4,
};

function services(options: { locked?: boolean; withChild?: boolean } = {}) {
  const sent: EventObject[] = [];
  const value: HttpServices<MachineDefinition> = {
    instances: {
      create: async () => ({ snapshot: parent, history: [] }),
      restore: async (_definition, id) => {
        if (id !== ID) throw new MachineNotFoundException(`Machine '${id}' not found.`);
        return parent;
      },
      send: async (_definition, _id, event) => {
        if (options.locked) throw new MachineAlreadyRunningException('busy', parent);
        sent.push(event);
        return { snapshot: parent, history: [] };
      },
      sendStateless: async () => {
        throw new Error('not used');
      },
      read: async () => {
        throw new Error('not used');
      },
      watch: async () => {
        throw new Error('not used');
      },
      createAndSend: async () => {
        throw new Error('not used');
      },
      createOrSend: async () => {
        throw new Error('not used');
      },
      bindBusinessKey: async () => {
        throw new Error('not used');
      },
      sendStatelessSync: () => {
        throw new Error('not used');
      },
      scenariosEnabled: false,
      keptScenario: async () => null,
      availableEvents: async (definition, snapshot) => availableEvents(definition, snapshot),
      idempotencyKeys: new MemoryStore().idempotencyKeys,
      forwardedChild: async () => null,
    },
    availableEvents: (definition, snapshot) => availableEvents(definition, snapshot),
    resolveOutput: (definition, snapshot, output) => resolveOutput(definition, snapshot, output),
    initialSnapshot: (definition) => initialize(definition).snapshot,
    forwardedChild: async () => (options.withChild === false ? null : child),
    idempotencyKeys: new MemoryStore().idempotencyKeys,
    middleware: {},
    models: {},
    logger: consoleLogger,
    payloadLimit: DEFAULT_PAYLOAD_LIMIT,
  };
  return { services: value, sent };
}

const routes = planRoutes(checkoutMachine, { prefix: 'checkouts', machineIdFor: ['CANCEL'] });
const route = (name: string): PlannedRoute => routes.find((candidate) => candidate.name === name)!;
const request = (method: string, body?: unknown, machineId = ID): EndpointRequest => ({
  method,
  params: { machineId },
  query: {},
  body,
  headers: {},
});

describe('createRouteHandler (forwarded endpoints)', () => {
  it('should plan forwards bound by machine id', () => {
    expect(routes.map((planned) => `${planned.method} ${planned.path} ${planned.handler}`)).toEqual(
      [
        'POST /checkouts/{machineId}/cancel machineIdBound',
        'POST /checkouts/{machineId}/provide-card forwardedMachineIdBound',
        'DELETE /checkouts/{machineId}/cancel-payment forwardedMachineIdBound',
      ],
    );
  });

  it('should send the parent-facing type and answer the parent and child states', async () => {
    const { services: deps, sent } = services();
    const handler = createRouteHandler(checkoutMachine, route('checkout.provide_card'), deps);
    const response = await handler(request('POST', { payload: { card: '1111' } }));
    expect(response).toEqual({
      status: 200,
      body: {
        data: {
          id: ID,
          state: ['checkout.processing'],
          availableEvents: [{ type: 'CANCEL', source: 'parent' }],
          child: { state: ['payment.provided'], output: { card: '1111', status: 'new' } },
          isProcessing: false,
        },
      },
      // The parent instance's version after the send (docs/http.md "Conditional requests").
      headers: { etag: `"${ID}:3"` },
    });
    expect(sent).toEqual([{ type: 'PROVIDE_CARD', payload: { card: '1111' } }]);
  });

  it("should validate with the child's event schema", async () => {
    const { services: deps, sent } = services();
    const response = await createRouteHandler(
      checkoutMachine,
      route('checkout.provide_card'),
      deps,
    )(request('POST', { payload: { card: '11' } }));
    expect(response).toEqual({
      status: 422,
      body: {
        message: 'Too small: expected string to have exactly 4 characters',
        errors: { 'payload.card': ['Too small: expected string to have exactly 4 characters'] },
      },
    });
    expect(sent).toEqual([]);
  });

  it('should accept the child type in the body of a rename forward and filter the child output', async () => {
    const { services: deps, sent } = services();
    const response = await createRouteHandler(
      checkoutMachine,
      route('checkout.cancel_payment'),
      deps,
    )(request('DELETE', { type: 'ABORT' }));
    expect(response.body).toEqual({
      data: {
        id: ID,
        state: ['checkout.processing'],
        availableEvents: [{ type: 'CANCEL', source: 'parent' }],
        child: { state: ['payment.provided'], output: { status: 'new' } },
        isProcessing: false,
      },
    });
    expect(sent).toEqual([{ type: 'CANCEL_PAYMENT', payload: {} }]);
  });

  it('should answer contention with 423 and the committed state', async () => {
    const { services: deps } = services({ locked: true });
    const response = await createRouteHandler(
      checkoutMachine,
      route('checkout.provide_card'),
      deps,
    )(request('POST', { payload: { card: '1111' } }));
    expect(response.status).toBe(423);
    expect(response.body).toMatchObject({ data: { id: ID, isProcessing: true } });
  });

  it('should read the committed state when contention carries no snapshot (busy store), still 423', async () => {
    const { services: deps } = services();
    let restored = 0;
    const handler = createRouteHandler(checkoutMachine, route('checkout.cancel'), {
      ...deps,
      instances: {
        ...deps.instances,
        restore: async (definition, id) => {
          restored += 1;
          return deps.instances.restore(definition, id);
        },
        send: async () => {
          throw new MachineAlreadyRunningException('busy', null);
        },
      },
    });
    const response = await handler(request('POST', {}));
    expect(response.status).toBe(423);
    expect(response.body).toMatchObject({
      data: { id: ID, state: parent.value, isProcessing: true },
    });
    // machineId-bound without before(): the load was deferred to send, so read after the refusal.
    expect(restored).toBe(1);
  });

  it('should answer child null when the child is not found', async () => {
    const { services: deps } = services({ withChild: false });
    const response = await createRouteHandler(
      checkoutMachine,
      route('checkout.provide_card'),
      deps,
    )(request('POST', { payload: { card: '1111' } }));
    expect(response.body).toMatchObject({ data: { child: null } });
  });

  it('should answer 404 for an unknown parent', async () => {
    const { services: deps } = services();
    const response = await createRouteHandler(
      checkoutMachine,
      route('checkout.provide_card'),
      deps,
    )(request('POST', { payload: { card: '1111' } }, 'missing'));
    expect(response).toEqual({ status: 404, body: { message: 'Machine not found.' } });
  });
});

describe('createRouteHandler (forward with a child-output behavior)', () => {
  // CONFIRM_PAYMENT's `receipt` reads the child's final output: a child still authorizing has none.
  const exampleParent = initialize(exampleCheckout, { id: ID }).snapshot;
  const authorizing: MachineSnapshot = {
    machineId: 'payment',
    id: '01J0000000000000000000CHLD',
    value: ['payment.authorizing'],
    context: { amount: 40, cardLast4: '1111' },
    status: 'active',
    sequence: 2,
  };
  const exampleServices = (locked: boolean): HttpServices<MachineDefinition> => ({
    ...services({ locked }).services,
    instances: {
      ...services({ locked }).services.instances,
      restore: async () => exampleParent,
      send: async () => {
        if (locked) throw new MachineAlreadyRunningException('busy', exampleParent);
        return { snapshot: exampleParent, history: [] };
      },
    },
    forwardedChild: async () => authorizing,
    forwardedOutput: (definition, snapshot, forward, childSnapshot, event) =>
      forwardedOutput(definition, snapshot, forward, childSnapshot, event),
  });
  const confirm = planRoutes(exampleCheckout, { prefix: 'checkouts' }).find(
    (candidate) => candidate.name === 'checkout.confirm_payment',
  )!;

  it("should answer contention with the parent's output when the child has no output yet", async () => {
    const response = await createRouteHandler(
      exampleCheckout,
      confirm,
      exampleServices(true),
    )(request('POST', {}));
    expect(response).toEqual({
      status: 423,
      body: {
        data: {
          id: ID,
          state: ['checkout.paying'],
          availableEvents: expect.any(Array),
          output: { orderId: 'ORD-1', amount: 40, paidWith: null, paymentId: null },
          child: { state: ['payment.authorizing'], output: { amount: 40, cardLast4: '1111' } },
          isProcessing: true,
        },
      },
    });
  });

  it('should still answer 500 on the normal path (a definition error, not contention)', async () => {
    const response = await createRouteHandler(exampleCheckout, confirm, {
      ...exampleServices(false),
      logger: { error: () => undefined },
    })(request('POST', {}));
    expect(response).toEqual({ status: 500, body: { message: 'Internal Server Error' } });
  });
});

describe('createRouteHandler (construction)', () => {
  it('should refuse a route planned from another definition', () => {
    const foreign = { ...route('checkout.provide_card'), eventType: 'SOMETHING_ELSE' };
    expect(() => createRouteHandler(checkoutMachine, foreign, services().services)).toThrow(
      "Route checkout.provide_card does not match machine 'checkout': plan it from this definition with planRoutes().",
    );
  });

  it('should refuse unknown middleware', () => {
    const guarded = { ...route('checkout.cancel'), middleware: ['auth:api'] };
    expect(() => createRouteHandler(checkoutMachine, guarded, services().services)).toThrow(
      'Route checkout.cancel: unknown middleware auth:api.',
    );
  });
});
