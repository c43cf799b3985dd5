import { describe, expect, it } from 'vitest';
import { normalizeEndpoints } from '../../../src/runtime/definition/endpoints.js';
import { InvalidRouterConfigException } from '../../../src/runtime/errors.js';
import { planRegistration, planRoutes } from '../../../src/runtime/http/plan-routes.js';
import type { PlannableDefinition } from '../../../src/runtime/http/plan-routes.js';
import type { RegistrationOptions } from '../../../src/runtime/http/types.js';

/** An `order` machine: SUBMIT (POST) and STATUS (GET /current) endpoints, a `summary` output. */
function orderDefinition(
  endpoints: unknown[] = ['SUBMIT', { STATUS: { method: 'GET', uri: '/current' } }],
): PlannableDefinition {
  const normalized = normalizeEndpoints({
    machineId: 'order',
    endpoints: endpoints as never,
    behavior: { outputs: { summary: () => ({}) } },
    eventTypes: new Set(['SUBMIT', 'STATUS']),
    events: new Map(),
    delegatingStates: [],
  });
  expect(normalized.issues).toEqual([]);
  return {
    id: 'order',
    endpoints: normalized.endpoints,
    forwards: normalized.forwards,
    behavior: { outputs: { summary: () => ({}) } },
  };
}

const plan = (options: Partial<RegistrationOptions>, definition = orderDefinition()) =>
  planRegistration(definition, { prefix: 'orders', ...options });

describe('reads: planning', () => {
  it('should plan `reads: true` as one status read after create, endpoints and forwards', () => {
    const { routes, issues } = plan({ create: true, machineIdFor: ['SUBMIT'], reads: true });
    expect(issues).toEqual([]);
    expect(routes.map((route) => `${route.method} ${route.path} ${route.name}`)).toEqual([
      'POST /orders/create order.create',
      'POST /orders/{machineId}/submit order.submit',
      'GET /orders/current order.status',
      'GET /orders/{machineId}/status order.read.status',
    ]);
    expect(routes[3]).toEqual({
      name: 'order.read.status',
      registration: 'order',
      machineId: 'order',
      method: 'GET',
      path: '/orders/{machineId}/status',
      handler: 'read',
      eventType: null,
      read: 'status',
      childEventType: null,
      childMachineId: null,
      endpointIndex: null,
      binding: { kind: 'machineId', param: 'machineId' },
      middleware: [],
      output: { kind: 'default' },
      action: null,
      status: 200,
      availableEvents: true,
      payloadSource: 'query',
      authGuards: null,
      errorStatuses: [400, 404, 422, 500],
      actionStatuses: {},
    });
  });

  it('should plan every read form: null, a URI string, and options', () => {
    const { routes, issues } = plan({
      middleware: ['auth:api'],
      reads: {
        status: null,
        totals: 'orders-total/',
        slashes: '///deep/path//',
        summary: {
          uri: 'sum',
          output: 'summary',
          middleware: ['auth:admin'],
          status: 203,
          available_events: false,
        },
        picked: { output: ['total', 'note'] },
      },
    });
    expect(issues).toEqual([]);
    const reads = routes.filter((route) => route.handler === 'read');
    expect(
      reads.map((route) => [
        route.name,
        route.path,
        route.output,
        route.middleware,
        route.status,
        route.availableEvents,
      ]),
    ).toEqual([
      [
        'order.read.status',
        '/orders/{machineId}/status',
        { kind: 'default' },
        ['auth:api'],
        200,
        true,
      ],
      [
        'order.read.totals',
        '/orders/{machineId}/orders-total',
        { kind: 'default' },
        ['auth:api'],
        200,
        true,
      ],
      [
        'order.read.slashes',
        '/orders/{machineId}/deep/path',
        { kind: 'default' },
        ['auth:api'],
        200,
        true,
      ],
      [
        'order.read.summary',
        '/orders/{machineId}/sum',
        { kind: 'behavior', name: 'summary' },
        ['auth:api', 'auth:admin'],
        203,
        false,
      ],
      [
        'order.read.picked',
        '/orders/{machineId}/picked',
        { kind: 'keys', keys: ['total', 'note'] },
        ['auth:api'],
        200,
        true,
      ],
    ]);
    expect(JSON.parse(JSON.stringify(reads))).toEqual(reads);
  });

  it('should bind reads by model when the registration has model and attribute', () => {
    const { routes, issues } = plan({
      model: 'SalesOrder',
      attribute: 'machine_id',
      modelFor: ['SUBMIT'],
      reads: true,
    });
    expect(issues).toEqual([]);
    expect(routes.at(-1)).toMatchObject({
      path: '/orders/{salesOrder}/status',
      binding: { kind: 'model', param: 'salesOrder', model: 'SalesOrder', attribute: 'machine_id' },
    });
  });

  it('should accept a registration with reads only, unaffected by only/except', () => {
    const { routes, issues } = plan({ reads: true }, orderDefinition([]));
    expect(issues).toEqual([]);
    expect(routes.map((route) => route.name)).toEqual(['order.read.status']);
    expect(plan({ only: ['SUBMIT'], reads: true }).routes.map((route) => route.name)).toEqual([
      'order.submit',
      'order.read.status',
    ]);
  });

  it.each<[string, RegistrationOptions['reads'], string, string]>([
    [
      'R1 action',
      { status: { action: 'audit' } as never },
      "read definition cannot contain 'action' — reads are pure GET projections (no actions, GET-only).",
      'action',
    ],
    [
      'R1 method',
      { status: { method: 'POST' } as never },
      "read definition cannot contain 'method' — reads are pure GET projections (no actions, GET-only).",
      'method',
    ],
    [
      'R2 unknown option',
      { status: { outptu: ['total'] } as never },
      "unknown read option 'outptu' in read 'status'. Recognized: uri, output, middleware, status, available_events.",
      'outptu',
    ],
    ['R3 empty URI', { status: '' }, "invalid read URI '' in read 'status'", 'status'],
    ['R3 slash URI', { status: { uri: '//' } }, "invalid read URI '//' in read 'status'", 'status'],
    [
      'R3 URI with a parameter',
      { status: '/{id}' },
      "invalid read URI '/{id}' in read 'status'",
      'status',
    ],
    [
      'R4 duplicate URI',
      { status: null, current: '/status' },
      "duplicate read URI '/status' within one registration (reads 'status' and 'current').",
      'current',
    ],
    [
      'R4 duplicate URI that differs by a trailing slash',
      { status: null, current: { uri: 'status/' } },
      "duplicate read URI '/status' within one registration (reads 'status' and 'current').",
      'current',
    ],
    [
      'an unknown output behavior',
      { status: { output: 'nope' } },
      "read 'status' references undefined output behavior 'nope'.",
      'status',
    ],
    [
      'an output function',
      { status: { output: (() => ({})) as never } },
      "'output' of read 'status' must be null, a list of context keys, or the name of an output behavior",
      'status',
    ],
    [
      'a status outside 2xx',
      { status: { status: 404 } },
      "'status' of read 'status' must be a 2xx status code",
      'status',
    ],
    [
      'available_events not boolean',
      { status: { available_events: 'yes' as never } },
      "'available_events' of read 'status' must be true or false.",
      'status',
    ],
    [
      'middleware not a list',
      { status: { middleware: 'auth' as never } },
      "'middleware' of read 'status' must be a list of middleware names",
      'status',
    ],
    [
      'a read value of another type',
      { status: 42 as never },
      "read 'status' must be null, a URI string or options",
      'status',
    ],
    ['an invalid read name', { 'st.atus': null }, "invalid read name 'st.atus'", 'reads'],
    ['reads not a map', ['status'] as never, "'reads' must be true or a map of read name", 'reads'],
  ])('should reject %s with InvalidRouterConfigException', (_name, reads, message, key) => {
    const { routes, issues } = plan({ reads });
    expect(issues).toHaveLength(1);
    const [issue] = issues;
    expect(issue).toBeInstanceOf(InvalidRouterConfigException);
    expect(issue!.message).toContain(`MachineRouter: ${message}`);
    expect(issue!.message).toContain("(machine 'order', registration 'order')");
    expect(issue!.details).toMatchObject({ machine: 'order', registration: 'order', key });
    // A read with a problem is never planned (R4 keeps the first of the two).
    expect(routes.filter((route) => route.handler === 'read').length).toBeLessThanOrEqual(1);
    expect(() => planRoutes(orderDefinition(), { prefix: 'orders', reads })).toThrow(
      InvalidRouterConfigException,
    );
  });

  it('should reject (R15) a read colliding with a GET endpoint of the registration', () => {
    const { issues } = plan({ machineIdFor: ['STATUS'], reads: { current: null } });
    expect(issues.map((issue) => issue.message)).toEqual([
      "MachineRouter: read route GET '/{machineId}/current' (read 'current') collides with the existing endpoint route 'order.status' in the same group. Give the read another 'uri'. (machine 'order', registration 'order')",
    ]);
    expect(issues[0]!.details).toMatchObject({ key: 'current' });
    // The same URI is no collision when the endpoint is stateless (another path) or not GET.
    expect(plan({ reads: { current: null } }).issues).toEqual([]);
    expect(plan({ machineIdFor: ['SUBMIT'], reads: { submit: null } }).issues).toEqual([]);
  });
});
