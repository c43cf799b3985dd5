import { describe, expect, it, vi } from 'vitest';
import { InvalidEndpointDefinitionException, defineMachine } from '../../../src/runtime/index.js';
import type { EndpointNormalizationInput } from '../../../src/runtime/definition/endpoints.js';

const calls: EndpointNormalizationInput[] = [];

vi.mock('../../../src/runtime/definition/endpoints.js', () => ({
  normalizeEndpoints: (input: EndpointNormalizationInput) => {
    calls.push(input);
    return {
      endpoints: [{ eventType: 'SUBMIT' }],
      forwards: [{ parentEventType: 'PING' }],
      issues: input.endpoints?.includes('UNKNOWN')
        ? [
            new InvalidEndpointDefinitionException(
              'Endpoint references undefined event type `UNKNOWN`.',
            ),
          ]
        : [],
    };
  },
}));

describe('defineMachine (endpoints)', () => {
  it('should hand endpoints, event types, events and delegating states to normalizeEndpoints', () => {
    const child = defineMachine({
      config: { id: 'child', initial: 'a', states: { a: { on: { PING: 'a' } } } },
    });
    calls.length = 0;
    const behavior = {};

    const definition = defineMachine({
      config: {
        id: 'parent',
        initial: 'idle',
        states: {
          idle: { on: { SUBMIT: 'working' } },
          working: { machine: child, queue: true, forward: ['PING'], on: { '@done': 'idle' } },
          other: { machine: 'not-a-definition', on: { '@done': 'idle' } },
        },
      },
      behavior,
      endpoints: ['SUBMIT'],
    });

    expect(calls).toEqual([
      {
        machineId: 'parent',
        endpoints: ['SUBMIT'],
        behavior,
        eventTypes: new Set(['SUBMIT']),
        events: new Map([['SUBMIT', { kind: 'event', type: 'SUBMIT', payload: undefined }]]),
        delegatingStates: [
          {
            stateId: 'parent.working',
            path: 'working',
            forward: ['PING'],
            child: { id: 'child', events: child.events, eventTypes: child.eventTypes },
          },
          { stateId: 'parent.other', path: 'other', forward: undefined, child: null },
        ],
      },
    ]);
    expect(definition.endpoints).toEqual([{ eventType: 'SUBMIT' }]);
    expect(definition.forwards).toEqual([{ parentEventType: 'PING' }]);
  });

  it('should merge endpoint issues into its own, tagged with the machine', () => {
    expect(() =>
      defineMachine({
        config: { id: 'm', initial: 'a', states: { a: {} } },
        endpoints: ['UNKNOWN'],
      }),
    ).toThrow(
      expect.objectContaining({
        code: 'MR_INVALID_ENDPOINT_DEFINITION',
        details: expect.objectContaining({ machine: 'm' }),
      }),
    );
  });
});
