import { describe, expect, it } from 'vitest';
import { normalizeEndpoints } from '../../../src/runtime/definition/endpoints.js';
import { defineEvent } from '../../../src/runtime/definition/event-type.js';
import type { EventDefinition } from '../../../src/runtime/definition/types.js';
import {
  AggregateMachineRoutesError,
  InvalidRouterConfigException,
} from '../../../src/runtime/errors.js';
import { defineEndpointAction } from '../../../src/runtime/definition/endpoint-action.js';
import { planRoutes, type PlannableDefinition } from '../../../src/runtime/http/plan-routes.js';
import type { RegistrationOptions } from '../../../src/runtime/http/types.js';
import { validateRegistration } from '../../../src/runtime/http/validate-registration.js';

const SubmitEvent = defineEvent({ type: 'SUBMIT' });

/** An `order` machine with four endpoints and one forward (CONFIRM_PAYMENT -> child CONFIRM). */
function orderDefinition(): PlannableDefinition {
  const { endpoints, forwards, issues } = normalizeEndpoints({
    machineId: 'order',
    endpoints: [
      'SUBMIT',
      { APPROVE: { method: 'PATCH', middleware: ['auth:admin'], output: ['total'] } },
      {
        CANCEL: {
          action: defineEndpointAction({ name: 'audit' }),
          status: 202,
          available_events: false,
        },
      },
      { STATUS: { method: 'GET', uri: '/current-status', output: 'summary' } },
    ],
    behavior: { outputs: { summary: () => ({}) } },
    eventTypes: new Set(['SUBMIT', 'APPROVE', 'CANCEL', 'STATUS']),
    events: new Map<string, EventDefinition>([['SUBMIT', SubmitEvent]]),
    delegatingStates: [
      {
        stateId: 'order.paying',
        path: 'paying',
        forward: [{ CONFIRM_PAYMENT: 'CONFIRM' }],
        child: { id: 'payment', events: new Map(), eventTypes: new Set(['CONFIRM']) },
      },
    ],
  });
  expect(issues).toEqual([]);
  return { id: 'order', endpoints, forwards };
}

const summarize = (routes: ReturnType<typeof planRoutes>) =>
  routes.map((route) => `${route.method} ${route.path} ${route.name} ${route.handler}`);

describe('planRoutes', () => {
  it('should plan create, endpoints and forwards as plain data', () => {
    const routes = planRoutes(orderDefinition(), {
      prefix: 'orders',
      create: true,
      machineIdFor: ['SUBMIT', 'STATUS'],
      middleware: ['auth:api'],
    });
    // What each route answers is planned by plan-route-answers.ts (see the tests below).
    const withoutAnswers = ({
      payloadSource: _source,
      authGuards: _guards,
      errorStatuses: _statuses,
      actionStatuses: _declared,
      ...route
    }: (typeof routes)[number]) => route;
    expect(routes.map(withoutAnswers)).toEqual([
      {
        name: 'order.create',
        registration: 'order',
        method: 'POST',
        path: '/orders/create',
        handler: 'create',
        machineId: 'order',
        eventType: null,
        read: null,
        childEventType: null,
        childMachineId: null,
        endpointIndex: null,
        binding: { kind: 'none' },
        middleware: ['auth:api'],
        output: { kind: 'default' },
        action: null,
        status: 201,
        availableEvents: false,
      },
      {
        name: 'order.submit',
        registration: 'order',
        method: 'POST',
        path: '/orders/{machineId}/submit',
        handler: 'machineIdBound',
        machineId: 'order',
        eventType: 'SUBMIT',
        read: null,
        childEventType: null,
        childMachineId: null,
        endpointIndex: 0,
        binding: { kind: 'machineId', param: 'machineId' },
        middleware: ['auth:api'],
        output: { kind: 'default' },
        action: null,
        status: 200,
        availableEvents: true,
      },
      expect.objectContaining({
        name: 'order.approve',
        method: 'PATCH',
        path: '/orders/approve',
        handler: 'stateless',
        middleware: ['auth:api', 'auth:admin'],
        output: { kind: 'keys', keys: ['total'] },
        endpointIndex: 1,
      }),
      expect.objectContaining({
        name: 'order.cancel',
        path: '/orders/cancel',
        handler: 'stateless',
        action: 'audit',
        status: 202,
        availableEvents: false,
      }),
      expect.objectContaining({
        name: 'order.status',
        method: 'GET',
        path: '/orders/{machineId}/current-status',
        handler: 'machineIdBound',
        output: { kind: 'behavior', name: 'summary' },
      }),
      {
        name: 'order.confirm_payment',
        registration: 'order',
        method: 'POST',
        path: '/orders/{machineId}/confirm-payment',
        handler: 'forwardedMachineIdBound',
        machineId: 'order',
        eventType: 'CONFIRM_PAYMENT',
        read: null,
        childEventType: 'CONFIRM',
        childMachineId: 'payment',
        endpointIndex: 0,
        binding: { kind: 'machineId', param: 'machineId' },
        middleware: ['auth:api'],
        output: { kind: 'default' },
        action: null,
        status: 200,
        availableEvents: true,
      },
    ]);
  });

  it('should return data that survives a JSON round trip', () => {
    const routes = planRoutes(orderDefinition(), {
      prefix: '/api/orders/',
      create: true,
      machineIdFor: ['SUBMIT'],
    });
    expect(JSON.parse(JSON.stringify(routes))).toEqual(routes);
  });

  it('should bind modelFor events and forwards to the model parameter', () => {
    const routes = planRoutes(orderDefinition(), {
      prefix: 'orders',
      model: 'SalesOrder',
      attribute: 'machine_id',
      modelFor: [SubmitEvent],
      machineIdFor: ['CANCEL'],
    });
    expect(summarize(routes)).toEqual([
      'POST /orders/{salesOrder}/submit order.submit modelBound',
      'PATCH /orders/approve order.approve stateless',
      'POST /orders/{machineId}/cancel order.cancel machineIdBound',
      'GET /orders/current-status order.status stateless',
      'POST /orders/{salesOrder}/confirm-payment order.confirm_payment forwardedModelBound',
    ]);
    expect(routes[0]?.binding).toEqual({
      kind: 'model',
      param: 'salesOrder',
      model: 'SalesOrder',
      attribute: 'machine_id',
    });
  });

  it.each<[string, Partial<RegistrationOptions>, string[]]>([
    [
      'only',
      { only: ['SUBMIT', 'CONFIRM_PAYMENT'] },
      ['order.create', 'order.submit', 'order.confirm_payment'],
    ],
    [
      'except',
      { except: ['SUBMIT', 'CONFIRM_PAYMENT'] },
      ['order.create', 'order.approve', 'order.cancel', 'order.status'],
    ],
    ['only: [] (create stays)', { only: [] }, ['order.create']],
    ['only with an event definition', { only: [SubmitEvent] }, ['order.create', 'order.submit']],
  ])('should filter with %s', (_name, options, names) => {
    const routes = planRoutes(orderDefinition(), { prefix: 'orders', create: true, ...options });
    expect(routes.map((route) => route.name)).toEqual(names);
  });

  it('should name routes after the registration name', () => {
    const routes = planRoutes(orderDefinition(), {
      prefix: 'public/orders',
      name: 'public_orders',
      only: ['SUBMIT'],
    });
    expect(summarize(routes)).toEqual([
      'POST /public/orders/submit public_orders.submit stateless',
    ]);
    expect(routes[0]?.registration).toBe('public_orders');
  });

  it.each<[string, Partial<RegistrationOptions>, string]>([
    ['a missing prefix', { prefix: '' }, "MachineRouter: 'prefix' is required"],
    [
      'an invalid prefix',
      { prefix: 'orders/{id}' },
      "MachineRouter: invalid 'prefix' 'orders/{id}'",
    ],
    [
      'both only and except',
      { only: ['SUBMIT'], except: ['CANCEL'] },
      "MachineRouter: 'only' and 'except' cannot be used together.",
    ],
    [
      'an unknown type in only',
      { only: ['NONEXISTENT'] },
      "MachineRouter: unknown event types in 'only': NONEXISTENT. Available: SUBMIT, APPROVE, CANCEL, STATUS, CONFIRM_PAYMENT.",
    ],
    ['an unknown type in except', { except: ['NOPE'] }, "unknown event types in 'except': NOPE."],
    [
      'a machineIdFor entry filtered by only',
      { only: ['SUBMIT'], machineIdFor: ['CANCEL'] },
      "MachineRouter: 'machineIdFor' references event types not in the registered endpoint set: CANCEL (filtered by 'only'). Remove from 'machineIdFor' or add to 'only'.",
    ],
    [
      'a machineIdFor entry filtered by except',
      { except: ['CANCEL'], machineIdFor: ['CANCEL'] },
      "'machineIdFor' references event types not in the registered endpoint set: CANCEL (filtered by 'except'). Remove from 'machineIdFor' or adjust 'except'.",
    ],
    [
      'a nonexistent machineIdFor entry',
      { machineIdFor: ['TYPO'] },
      "'machineIdFor' references event types not in the registered endpoint set: TYPO. Available: SUBMIT, APPROVE, CANCEL, STATUS.",
    ],
    [
      'a nonexistent modelFor entry',
      { model: 'Order', attribute: 'machine_id', modelFor: ['TYPO'] },
      "'modelFor' references event types not in the registered endpoint set: TYPO.",
    ],
    [
      'a modelFor entry filtered by only',
      { model: 'Order', attribute: 'machine_id', only: ['SUBMIT'], modelFor: ['CANCEL'] },
      "'modelFor' references event types not in the registered endpoint set: CANCEL (filtered by 'only')",
    ],
    [
      'a forwarded event in machineIdFor',
      { machineIdFor: ['CONFIRM_PAYMENT'] },
      "'machineIdFor' cannot reference forwarded endpoints (they inherit binding mode from parent model config): CONFIRM_PAYMENT.",
    ],
    [
      'a forwarded event in modelFor',
      { model: 'Order', attribute: 'machine_id', modelFor: ['CONFIRM_PAYMENT'] },
      "'modelFor' cannot reference forwarded endpoints (they inherit binding mode from parent model config): CONFIRM_PAYMENT.",
    ],
    [
      'modelFor without model',
      { attribute: 'machine_id', modelFor: ['SUBMIT'] },
      "'model' and 'attribute' are required when 'modelFor' is set",
    ],
    [
      'modelFor without attribute',
      { model: 'Order', modelFor: ['SUBMIT'] },
      "'model' and 'attribute' are required when 'modelFor' is set",
    ],
    [
      'an overlap of machineIdFor and modelFor',
      { model: 'Order', attribute: 'machine_id', modelFor: ['SUBMIT'], machineIdFor: ['SUBMIT'] },
      "events cannot be in both 'machineIdFor' and 'modelFor': SUBMIT.",
    ],
    ['an invalid name', { name: 'my orders' }, "invalid 'name' 'my orders'"],
    [
      'a middleware that is not a name',
      { middleware: [''] },
      "'middleware' must be a list of middleware names",
    ],
    [
      'a middleware that is not a list',
      { middleware: 'auth' as never },
      "'middleware' must be a list of middleware names",
    ],
    [
      'a binding list that is not a list',
      { machineIdFor: 'SUBMIT' as never },
      "'machineIdFor' must be a list",
    ],
  ])('should reject %s with InvalidRouterConfigException', (_name, options, message) => {
    const definition = orderDefinition();
    const call = () => planRoutes(definition, { prefix: 'orders', ...options });
    expect(call).toThrow(InvalidRouterConfigException);
    expect(call).toThrow(message);
    const [issue] = validateRegistration(definition, { prefix: 'orders', ...options });
    expect(issue?.details).toMatchObject({ machine: 'order', registration: 'order' });
    expect(issue?.message).toContain("(machine 'order', registration 'order')");
  });

  it('should collect every violation and throw them once', () => {
    const options = {
      prefix: 'orders',
      only: ['NOPE'],
      except: ['ALSO_NOPE'],
      modelFor: ['SUBMIT'],
    };
    const issues = validateRegistration(orderDefinition(), options);
    expect(issues.map((issue) => issue.code)).toEqual(Array(5).fill('MR_INVALID_ROUTER_CONFIG'));
    expect(() => planRoutes(orderDefinition(), options)).toThrow(AggregateMachineRoutesError);
  });

  it('should reject two routes answering the same method and path', () => {
    const { endpoints } = normalizeEndpoints({
      machineId: 'order',
      endpoints: ['SUBMIT', { CANCEL: '/create' }],
      behavior: {},
      eventTypes: new Set(['SUBMIT', 'CANCEL']),
      events: new Map(),
      delegatingStates: [],
    });
    expect(() =>
      planRoutes({ id: 'order', endpoints, forwards: [] }, { prefix: 'orders', create: true }),
    ).toThrow(
      "MachineRouter: routes 'order.create' and 'order.cancel' both answer POST /orders/create.",
    );
  });
});

describe('validateRegistration', () => {
  it('should report unknown middleware and models when their names are given', () => {
    const issues = validateRegistration(
      orderDefinition(),
      {
        prefix: 'orders',
        middleware: ['throttle:60'],
        model: 'Order',
        attribute: 'machine_id',
        modelFor: ['SUBMIT'],
      },
      { middleware: ['auth'], models: [] },
    );
    expect(issues.map((issue) => issue.message)).toEqual([
      "MachineRouter: unknown middleware 'throttle:60' on order.submit, order.approve, order.cancel, order.status, order.confirm_payment (machine 'order', registration 'order'). Declare 'throttle' in the middleware registry. Known: auth.",
      "MachineRouter: unknown model 'Order' (machine 'order', registration 'order'). Provide a binder for it in the router's 'models' (e.g. models: { Order: tableModelBinder(...) }). Known: (none).",
    ]);
  });

  it('should accept `auth:<guard>` for a registry entry named auth', () => {
    expect(
      validateRegistration(
        orderDefinition(),
        { prefix: 'orders', middleware: ['auth:api'] },
        { middleware: ['auth'] },
      ),
    ).toEqual([]);
  });
});

describe('planRoutes: what a route answers', () => {
  /** Everything planRoutes derives a route's answers from, on one machine. */
  function answers(options: RegistrationOptions) {
    const { endpoints, forwards, issues } = normalizeEndpoints({
      machineId: 'doc',
      endpoints: [
        { SIGN: { middleware: ['auth:admin,editor'] } },
        {
          PUBLISH: {
            action: defineEndpointAction({
              name: 'tenant',
              statuses: { 403: 'The tenant header is missing.', 422: 'Refused by the tenant.' },
              before: ({ abort }) => abort(403, 'The tenant header is missing.'),
            }),
          },
        },
        { PEEK: { method: 'GET' } },
      ],
      behavior: {},
      eventTypes: new Set(['SIGN', 'PUBLISH', 'PEEK']),
      events: new Map(),
      delegatingStates: [],
    });
    expect(issues).toEqual([]);
    const routes = planRoutes({ id: 'doc', endpoints, forwards }, options);
    return Object.fromEntries(
      routes.map((route) => [
        route.name,
        {
          payloadSource: route.payloadSource,
          authGuards: route.authGuards,
          errorStatuses: route.errorStatuses,
          actionStatuses: route.actionStatuses,
        },
      ]),
    );
  }

  it('should list the guards of `auth:admin,editor` as the middleware receives them', () => {
    const planned = answers({ prefix: 'docs', machineIdFor: ['SIGN', 'PUBLISH', 'PEEK'] });
    expect(planned['doc.sign']!.authGuards).toEqual(['admin', 'editor']);
    expect(planned['doc.publish']!.authGuards).toBeNull();
    const plain = answers({ prefix: 'docs', middleware: ['auth'] });
    expect(plain['doc.peek']!.authGuards).toEqual([]);
  });

  it('should plan the error statuses of each kind of route', () => {
    const bound = answers({
      prefix: 'docs',
      create: true,
      machineIdFor: ['SIGN', 'PUBLISH', 'PEEK'],
    });
    expect(bound['doc.create']).toEqual({
      payloadSource: 'body',
      authGuards: null,
      errorStatuses: [400, 413, 415, 500],
      actionStatuses: {},
    });
    expect(bound['doc.sign']!.errorStatuses).toEqual([
      400, 401, 404, 409, 412, 413, 415, 422, 423, 500,
    ]);
    // A GET reads its query (malformed: 400) and answers contention with 200, not 423.
    expect(bound['doc.peek']).toMatchObject({
      payloadSource: 'query',
      errorStatuses: [400, 404, 409, 412, 422, 500],
    });
    const stateless = answers({ prefix: 'docs' });
    expect(stateless['doc.sign']!.errorStatuses).toEqual([400, 401, 409, 413, 415, 422, 500]);
  });

  it('should add the statuses an endpoint action declares, with their descriptions', () => {
    const planned = answers({ prefix: 'docs' });
    expect(planned['doc.publish']).toEqual({
      payloadSource: 'body',
      authGuards: null,
      errorStatuses: [400, 403, 409, 413, 415, 422, 500],
      actionStatuses: { 403: 'The tenant header is missing.', 422: 'Refused by the tenant.' },
    });
  });

  it('should refuse declared statuses that are not HTTP error statuses', () => {
    expect(() => defineEndpointAction({ name: 'bad', statuses: { 200: 'Fine.' } })).toThrow(
      /Endpoint action 'bad': 'statuses' key '200' is not an HTTP error status/,
    );
    expect(() => defineEndpointAction({ name: 'bad', statuses: { 403: '' } })).toThrow(
      /'statuses' entry 403 needs a description/,
    );
  });
});
