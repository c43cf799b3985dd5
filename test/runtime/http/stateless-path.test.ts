/**
 * The stateless route's own path (event-handler.ts `answerStateless`: no middleware, hooks,
 * scenarios or Idempotency-Key) answers what the whole lifecycle answers: the same machine
 * registered twice, once with a pass-through middleware (which takes the whole lifecycle), and
 * every kind of answer compared, ids aside.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineMachine } from '../../../src/runtime/definition/define-machine.js';
import { defineEvent } from '../../../src/runtime/definition/event-type.js';
import { defineValidationGuard } from '../../../src/runtime/definition/validation-guard.js';
import { MachineRuntime } from '../../../src/runtime/engine/machine-runtime.js';
import { MachineAlreadyRunningException } from '../../../src/runtime/errors.js';
import { MachineRouter } from '../../../src/runtime/http/machine-router.js';
import { immediateAnswerOf } from '../../../src/runtime/http/handler-forms.js';
import type { EndpointRequest, EndpointResponse } from '../../../src/runtime/http/types.js';
import { initialize } from '../../../src/runtime/interpreter/index.js';
import { openStore } from '../../../src/runtime/persistence/open-store.js';

const basket = defineMachine<{ count: number }>({
  config: {
    id: 'basket',
    initial: 'open',
    context: { count: 0 },
    states: {
      open: {
        on: {
          ADD: { actions: 'add' },
          CHECK: { actions: 'add' },
          CLOSE: { target: 'closed', guards: 'full' },
          BOOM: { actions: 'boom' },
        },
      },
      closed: { on: { REOPEN: 'open' } },
    },
  },
  behavior: {
    events: {
      ADD: defineEvent({ type: 'ADD', payload: z.object({ n: z.number().int().min(1) }) }),
      // An async refinement: the payload is validated asynchronously.
      CHECK: defineEvent({
        type: 'CHECK',
        payload: z
          .object({ n: z.number() })
          .refine(async (value) => value.n !== 13, { message: 'Unlucky.', path: ['n'] }),
      }),
    },
    guards: {
      full: defineValidationGuard({
        check: ({ context }) => context.count > 0,
        message: 'The basket is empty.',
        field: 'count',
      }),
    },
    actions: {
      add: ({ context, event }) => {
        context.count += Number(event.payload?.n ?? 1);
      },
      boom: () => {
        throw new Error('internals');
      },
    },
  },
  endpoints: ['ADD', 'CHECK', 'CLOSE', 'BOOM', 'REOPEN'],
});

async function routers(overrides: Partial<MachineRuntime> = {}) {
  const runtime = new MachineRuntime({ store: await openStore('memory:') });
  // Own properties over the prototype's methods, on the runtime itself (its private fields).
  const instances = Object.assign(runtime, overrides);
  const router = new MachineRouter({
    runtime: instances,
    logger: { error: () => {} },
    middleware: { pass: () => undefined },
  });
  router.register(basket, { prefix: 'quick', name: 'quick' });
  router.register(basket, { prefix: 'full', name: 'full', middleware: ['pass'] });
  const handler = (name: string) =>
    router.routes.find((mounted) => mounted.route.name === name)!.handler;
  return async (event: string, request: Partial<EndpointRequest>) => {
    const make = (): EndpointRequest => ({
      method: 'POST',
      params: {},
      query: {},
      body: undefined,
      headers: { 'content-type': 'application/json' },
      ...request,
    });
    const quick = await handler(`quick.${event}`)(make());
    const full = await handler(`full.${event}`)(make());
    // The form the adapters call: the same answer, a response rather than a promise when
    // nothing awaited (a synchronous schema).
    const immediate = immediateAnswerOf(handler(`quick.${event}`))(make());
    const settled = await immediate;
    return {
      quick: withoutId(quick),
      full: withoutId(full),
      immediate: withoutId(settled),
      waited: immediate instanceof Promise,
    };
  };
}

/** The response with its instance id (fresh per request) replaced. */
function withoutId(response: EndpointResponse): EndpointResponse {
  const body = response.body as { data?: { id?: string } } | undefined;
  if (body?.data?.id === undefined) return response;
  return { ...response, body: { data: { ...body.data, id: '(id)' } } };
}

describe('stateless route without middleware, hooks or scenarios', () => {
  it.each<[string, Partial<EndpointRequest>, number]>([
    ['add', { body: { payload: { n: 2 } } }, 200],
    ['add', { body: { type: 'ADD', payload: { n: 2 } } }, 200],
    ['add', { body: { payload: { n: 0 } } }, 422],
    ['add', { body: { payload: 'two' } }, 422],
    // The payload's fields at the top level: the 422 says where they belong.
    ['add', { body: { n: 2 } }, 422],
    ['add', { body: { type: 'OTHER', payload: { n: 2 } } }, 422],
    ['add', { body: [1, 2] }, 400],
    ['add', { body: null }, 400],
    ['add', {}, 422],
    ['add', { body: { payload: { n: 'x'.repeat(70_000) } } }, 413],
    ['check', { body: { payload: { n: 2 } } }, 200],
    ['check', { body: { payload: { n: 13 } } }, 422],
    ['check', { body: { payload: { n: 'x' } } }, 422],
    ['close', { body: {} }, 422],
    ['boom', { body: {} }, 500],
    ['reopen', { body: {} }, 409],
    ['add', { method: 'HEAD' }, 200],
  ])('answers %s %j as the whole lifecycle does (%i)', async (event, request, status) => {
    const call = await routers();
    const { quick, full, immediate, waited } = await call(event, request);
    expect(quick.status).toBe(status);
    expect(quick).toEqual(full);
    expect(immediate).toEqual(full);
    // Only the async schema (CHECK) and HEAD (the whole lifecycle) answer through a promise.
    expect(waited).toBe(event === 'check' || request.method === 'HEAD');
  });

  it('answers contention from a runtime that reports it as the whole lifecycle does', async () => {
    const committed = initialize(basket).snapshot;
    const call = await routers({
      sendStatelessSync: () => {
        throw new MachineAlreadyRunningException('busy', committed);
      },
    });
    const { quick, full, immediate } = await call('add', { body: { payload: { n: 2 } } });
    expect(quick.status).toBe(423);
    expect(quick).toEqual(full);
    expect(immediate).toEqual(full);
  });
});
