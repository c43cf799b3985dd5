import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  normalizeEndpoints,
  type EndpointNormalizationInput,
} from '../../../src/runtime/definition/endpoints.js';
import { defineEvent, MachineEvent } from '../../../src/runtime/definition/event-type.js';
import type { EventDefinition } from '../../../src/runtime/definition/types.js';
import type {
  EndpointConfig,
  ForwardConfig,
} from '../../../src/runtime/definition/endpoint-config.js';
import {
  InvalidEndpointDefinitionException,
  InvalidStateConfigException,
} from '../../../src/runtime/errors.js';
import { defineEndpointAction } from '../../../src/runtime/definition/endpoint-action.js';
import { endpointUriFor } from '../../../src/runtime/definition/uri.js';

const SubmitEvent = defineEvent({ type: 'SUBMIT', payload: z.object({ amount: z.number() }) });
class ApproveOrderEvent extends MachineEvent {}
class ShipEvent extends MachineEvent {
  static override readonly type = 'SHIP_IT';
}
const audit = defineEndpointAction({ name: 'audit', before: () => {} });
const summary = () => ({ summary: true });

function input(
  endpoints: readonly EndpointConfig[],
  overrides: Partial<EndpointNormalizationInput> = {},
): EndpointNormalizationInput {
  return {
    machineId: 'order',
    endpoints,
    behavior: {
      outputs: { summary },
      endpointActions: { audit, inline: defineEndpointAction({ after: () => {} }) },
    },
    eventTypes: new Set(['SUBMIT', 'APPROVE_ORDER', 'CANCEL', 'SHIP_IT', 'REFUND_EVENT', 'PING']),
    events: new Map<string, EventDefinition>([['SUBMIT', SubmitEvent]]),
    delegatingStates: [],
    ...overrides,
  };
}

const child = {
  id: 'payment',
  events: new Map<string, EventDefinition>([
    [
      'PROVIDE_CARD',
      defineEvent({ type: 'PROVIDE_CARD', payload: z.object({ card: z.string() }) }),
    ],
  ]),
  eventTypes: new Set(['PROVIDE_CARD', 'ABORT', 'CONFIRM']),
};
function forwarding(forward: ForwardConfig, overrides: Partial<EndpointNormalizationInput> = {}) {
  return input([], {
    delegatingStates: [{ stateId: 'order.paying', path: 'paying', forward, child }],
    ...overrides,
  });
}

describe('endpointUriFor', () => {
  it.each([
    ['SUBMIT', '/submit'],
    ['SUBMIT_ORDER', '/submit-order'],
    ['SUBMIT_ORDER_EVENT', '/submit-order'],
    ['EVENT', '/event'],
    ['PREVENT_EVENT_EVENT', '/prevent-event'],
  ])('should turn %s into %s', (type, uri) => {
    expect(endpointUriFor(type)).toBe(uri);
  });
});

describe('normalizeEndpoints', () => {
  it('should resolve every option to its default for the list format', () => {
    const result = normalizeEndpoints(input(['SUBMIT']));
    expect(result.issues).toEqual([]);
    expect(result.endpoints).toEqual([
      {
        eventType: 'SUBMIT',
        event: SubmitEvent,
        uri: '/submit',
        method: 'POST',
        action: null,
        output: null,
        middleware: [],
        status: 200,
        availableEvents: true,
        contention: null,
      },
    ]);
  });

  it.each<[string, EndpointConfig, Record<string, unknown>]>([
    ['list: type string', 'CANCEL', { eventType: 'CANCEL', uri: '/cancel', method: 'POST' }],
    ['list: event definition', SubmitEvent, { eventType: 'SUBMIT', uri: '/submit' }],
    ['list: event class', ApproveOrderEvent, { eventType: 'APPROVE_ORDER', uri: '/approve-order' }],
    ['list: class with static type', ShipEvent, { eventType: 'SHIP_IT', uri: '/ship-it' }],
    [
      'list: trailing _EVENT dropped',
      'REFUND_EVENT',
      { eventType: 'REFUND_EVENT', uri: '/refund' },
    ],
    ['string map', { CANCEL: '/cancel-order' }, { eventType: 'CANCEL', uri: '/cancel-order' }],
    [
      'options map',
      {
        CANCEL: {
          method: 'delete',
          middleware: ['auth:admin'],
          status: 202,
          available_events: false,
        },
      },
      {
        eventType: 'CANCEL',
        uri: '/cancel',
        method: 'DELETE',
        middleware: ['auth:admin'],
        status: 202,
        availableEvents: false,
      },
    ],
    ['event-definition key with uri', [SubmitEvent, '/go'], { eventType: 'SUBMIT', uri: '/go' }],
    [
      'event-class key with options',
      [ApproveOrderEvent, { method: 'PATCH' }],
      { eventType: 'APPROVE_ORDER', method: 'PATCH' },
    ],
    [
      'contention: wait',
      { PING: { contention: { wait: 1500 } } },
      { eventType: 'PING', contention: { wait: 1500 } },
    ],
    ['contention: reject', { PING: { contention: 'reject' } }, { contention: 'reject' }],
    [
      'output as context keys',
      { PING: { output: ['total'] } },
      { output: { kind: 'keys', keys: ['total'] } },
    ],
    [
      'output as inline key',
      { PING: { output: 'summary' } },
      { output: { kind: 'behavior', name: 'summary', run: summary, params: {} } },
    ],
    [
      'output as tuple',
      { PING: { output: ['summary', { currency: 'EUR' }] } },
      { output: { kind: 'behavior', name: 'summary', run: summary, params: { currency: 'EUR' } } },
    ],
    ['action by inline key', { PING: { action: 'audit' } }, { action: audit }],
    ['action as definition', { PING: { action: audit } }, { action: audit }],
  ])('should normalize the %s format', (_name, config, expected) => {
    const result = normalizeEndpoints(input([config]));
    expect(result.issues).toEqual([]);
    expect(result.endpoints).toHaveLength(1);
    expect(result.endpoints[0]).toMatchObject(expected);
  });

  it('should keep mixed formats in declaration order', () => {
    const result = normalizeEndpoints(
      input(['SUBMIT', { CANCEL: '/c', PING: { method: 'GET' } }, [ApproveOrderEvent, '/approve']]),
    );
    expect(
      result.endpoints.map((endpoint) => [endpoint.eventType, endpoint.method, endpoint.uri]),
    ).toEqual([
      ['SUBMIT', 'POST', '/submit'],
      ['CANCEL', 'POST', '/c'],
      ['PING', 'GET', '/ping'],
      ['APPROVE_ORDER', 'POST', '/approve'],
    ]);
  });

  it('should name an unnamed inline endpoint action after its key', () => {
    const result = normalizeEndpoints(input([{ PING: { action: 'inline' } }]));
    expect(result.endpoints[0]?.action).toMatchObject({ kind: 'endpointAction', name: 'inline' });
  });

  it.each<[string, EndpointConfig, string]>([
    ['an undefined event type', 'SHIP', 'Endpoint references undefined event type `SHIP`'],
    [
      'an undefined output behavior',
      { PING: { output: 'missing' } },
      'Endpoint references undefined output behavior `missing`',
    ],
    ['an invalid action', { PING: { action: 'nope' } }, 'Endpoint action `nope`'],
    [
      'an invalid action object',
      { PING: { action: { run: () => {} } as never } },
      'must be created with defineEndpointAction()',
    ],
    ['an invalid method', { PING: { method: 'TRACE' as never } }, "invalid method 'TRACE'"],
    ['an invalid uri', { PING: 'ping' }, "invalid uri 'ping'"],
    ['an invalid status', { PING: { status: 404 } }, "invalid status '404'"],
    ['unknown option keys', { PING: { verb: 'GET' } as never }, 'has unknown keys: verb'],
    ['a malformed pair', [SubmitEvent] as never, 'must be a pair [event, uri | options]'],
  ])('should report %s', (_name, config, message) => {
    const result = normalizeEndpoints(input([config]));
    expect(result.endpoints).toEqual([]);
    expect(result.issues).toHaveLength(1);
    expect(result.issues[0]).toBeInstanceOf(InvalidEndpointDefinitionException);
    expect(result.issues[0]?.message).toContain(message);
    expect(result.issues[0]?.details.machine).toBe('order');
  });

  it('should report endpoints that are not a list', () => {
    const result = normalizeEndpoints(input({ SUBMIT: '/s' } as never));
    expect(result.issues.map((issue) => issue.message)).toEqual([
      "'endpoints' of machine 'order' must be a list, e.g. ['SUBMIT', { APPROVE: '/approve' }].",
    ]);
  });

  it('should report a duplicate endpoint', () => {
    const result = normalizeEndpoints(input(['PING', { PING: '/again' }]));
    expect(result.issues.map((issue) => issue.message)).toEqual([
      "Endpoint `PING` is declared more than once in machine 'order'. Keep one entry per event type.",
    ]);
  });

  it('should collect every issue instead of stopping at the first', () => {
    const result = normalizeEndpoints(
      input(['NOPE', { PING: { output: 'missing', action: 'nope' } }]),
    );
    expect(result.issues).toHaveLength(3);
  });
});

describe('normalizeEndpoints (forwards)', () => {
  it('should normalize the list, rename and options formats', () => {
    const result = normalizeEndpoints(
      forwarding([
        'PROVIDE_CARD',
        { CANCEL_PAYMENT: 'ABORT' },
        {
          CONFIRM_PAYMENT: {
            child_event: 'CONFIRM',
            uri: '/confirm',
            method: 'PATCH',
            status: 202,
            available_events: false,
          },
        },
      ]),
    );
    expect(result.issues).toEqual([]);
    expect(result.forwards).toEqual([
      {
        parentEventType: 'PROVIDE_CARD',
        childEventType: 'PROVIDE_CARD',
        childEvent: child.events.get('PROVIDE_CARD'),
        stateId: 'order.paying',
        childMachineId: 'payment',
        uri: '/provide-card',
        method: 'POST',
        action: null,
        output: null,
        middleware: [],
        status: 200,
        availableEvents: true,
        contention: null,
      },
      expect.objectContaining({
        parentEventType: 'CANCEL_PAYMENT',
        childEventType: 'ABORT',
        childEvent: { kind: 'event', type: 'ABORT', payload: undefined },
        uri: '/cancel-payment',
      }),
      expect.objectContaining({
        parentEventType: 'CONFIRM_PAYMENT',
        childEventType: 'CONFIRM',
        uri: '/confirm',
        method: 'PATCH',
        status: 202,
        availableEvents: false,
      }),
    ]);
  });

  it.each<[string, ForwardConfig, Partial<EndpointNormalizationInput>, string]>([
    [
      'a forward also declared as an endpoint',
      [{ PING: 'ABORT' }],
      { endpoints: ['PING'], eventTypes: new Set(['PING']) },
      "State 'order.paying' forwards 'PING' which is also declared in parent's endpoints. Remove 'PING' from endpoints",
    ],
    [
      'a forward also declared in behavior.events',
      ['PROVIDE_CARD'],
      { events: new Map([['PROVIDE_CARD', defineEvent({ type: 'PROVIDE_CARD' })]]) },
      'forward auto-discovers child events',
    ],
    ['an undefined child event', [{ PAY: 'MISSING' }], {}, 'undefined child event type `MISSING`'],
    [
      'an undefined output behavior',
      [{ ABORT: { output: 'missing' } }],
      {},
      'undefined output behavior `missing`',
    ],
  ])('should report %s', (_name, forward, overrides, message) => {
    const result = normalizeEndpoints(forwarding(forward, overrides));
    expect(result.issues).toHaveLength(1);
    expect(result.issues[0]).toBeInstanceOf(InvalidEndpointDefinitionException);
    expect(result.issues[0]?.message).toContain(message);
  });

  it('should report the same forward declared by two delegating states', () => {
    const result = normalizeEndpoints(
      input([], {
        delegatingStates: [
          { stateId: 'order.paying', path: 'paying', forward: ['ABORT'], child },
          { stateId: 'order.refunding', path: 'refunding', forward: ['ABORT'], child },
        ],
      }),
    );
    expect(result.issues.map((issue) => issue.message)).toEqual([
      "Forward event 'ABORT' is declared in multiple delegating states ('order.paying' and 'order.refunding'). " +
        "Use rename syntax to disambiguate (e.g., { CANCEL_PAYMENT: 'CANCEL' }).",
    ]);
  });

  it.each<[string, ForwardConfig, string]>([
    [
      'unknown keys',
      [{ ABORT: { target: 'x' } as never }],
      "forward entry 'ABORT' has unknown keys: target",
    ],
    [
      'a uri without a leading slash',
      [{ ABORT: { uri: 'abort' } }],
      "forward entry 'ABORT' uri must start with '/'",
    ],
  ])('should report %s as InvalidStateConfigException', (_name, forward, message) => {
    const result = normalizeEndpoints(forwarding(forward));
    expect(result.issues).toHaveLength(1);
    expect(result.issues[0]).toBeInstanceOf(InvalidStateConfigException);
    expect(result.issues[0]?.message).toContain(message);
  });
});
