import fc from 'fast-check';
import { distance } from 'fastest-levenshtein';
import { describe, expect, it } from 'vitest';
import {
  editDistance,
  findUnknownKeys,
  KNOWN_KEYS,
  nearestKey,
} from '../../src/runtime/known-keys.js';
import { defineMachine } from '../../src/runtime/definition/define-machine.js';
import { planRegistration } from '../../src/runtime/http/plan-routes.js';
import type { RegistrationOptions } from '../../src/runtime/http/types.js';

describe('editDistance', () => {
  it('should give the Levenshtein distance fastest-levenshtein gives (a devDependency now)', () => {
    const word = fc.string({
      unit: fc.constantFrom('a', 'b', 'c', 'I', 'd', 'é', '😀'),
      maxLength: 12,
    });
    fc.assert(
      fc.property(word, word, (a, b) => {
        expect(editDistance(a, b)).toBe(distance(a, b));
      }),
      { numRuns: 2000 },
    );
    expect(editDistance('machineIDFor', 'machineIdFor')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
  });
});

describe('nearestKey', () => {
  it.each<[string, string | null]>([
    ['machineIDFor', 'machineIdFor'],
    ['machineIdfor', 'machineIdFor'],
    ['modelfor', 'modelFor'],
    ['prefx', 'prefix'],
    ['midleware', 'middleware'],
    ['excepts', 'except'],
    ['banana', null],
    ['x', null],
  ])('should suggest for %s: %s', (key, expected) => {
    expect(nearestKey(key, KNOWN_KEYS.registration)).toBe(expected);
  });
});

describe('findUnknownKeys', () => {
  it('should list only keys that are not known', () => {
    expect(findUnknownKeys({ dir: 'x', framwork: 'fastify', zzz: 1 }, KNOWN_KEYS.output)).toEqual([
      { key: 'framwork', suggestion: 'framework' },
      { key: 'zzz', suggestion: null },
    ]);
    expect(findUnknownKeys(null, KNOWN_KEYS.output)).toEqual([]);
  });
});

describe('registration keys', () => {
  const machine = defineMachine({
    config: {
      id: 'order',
      initial: 'idle',
      states: { idle: { on: { SUBMIT: 'done' } }, done: {} },
    },
    endpoints: ['SUBMIT'],
  });

  it('should report an unknown registration key naming the nearest valid key', () => {
    const options = { prefix: 'orders', machineIDFor: ['SUBMIT'] } as RegistrationOptions;
    const { issues } = planRegistration(machine, options);
    expect(issues.map((issue) => [issue.code, issue.details.key, issue.message])).toEqual([
      [
        'MR_INVALID_ROUTER_CONFIG',
        'machineIDFor',
        "MachineRouter: unknown key 'machineIDFor' (did you mean 'machineIdFor'?) in the registration options. " +
          'Known keys: prefix, name, create, machineIdFor, model, attribute, modelFor, only, except, middleware, reads, stream, idempotency, explainAvailableEvents, contention, flow, createOrSend, callbacks, webhooks. ' +
          "(machine 'order', registration 'order')",
      ],
    ]);
  });
});
