import { describe, expect, it } from 'vitest';
import {
  BehaviorNotFoundException,
  InvalidBehaviorDefinitionException,
  InvalidEventDefinitionException,
  InvalidOutputDefinitionException,
  InvalidStateConfigException,
  InvalidTimerDefinitionException,
  UndefinedTargetStateException,
  defineMachine,
  type MachineInput,
  type MachineRoutesError,
} from '../../../src/runtime/index.js';

type ErrorClass = abstract new (...args: never[]) => MachineRoutesError;

/** fixture file (fixtures/definitions/<name>.ts) -> expected error, state path and key. */
const cases: [fixture: string, error: ErrorClass, code: string, path: string, key: string][] = [
  ['final-with-transitions', InvalidStateConfigException, 'MR_INVALID_STATE_CONFIG', 'done', 'on'],
  [
    'final-with-child-states',
    InvalidStateConfigException,
    'MR_INVALID_STATE_CONFIG',
    'done',
    'states',
  ],
  ['unknown-state-type', InvalidStateConfigException, 'MR_INVALID_STATE_CONFIG', 'idle', 'type'],
  ['unknown-state-key', InvalidStateConfigException, 'MR_INVALID_STATE_CONFIG', 'idle', 'entri'],
  ['always-outside-on', InvalidStateConfigException, 'MR_INVALID_STATE_CONFIG', 'check', '@always'],
  [
    'compound-without-states',
    InvalidStateConfigException,
    'MR_INVALID_STATE_CONFIG',
    'group',
    'type',
  ],
  ['bad-initial', InvalidStateConfigException, 'MR_INVALID_STATE_CONFIG', 'review', 'initial'],
  [
    'initial-without-states',
    InvalidStateConfigException,
    'MR_INVALID_STATE_CONFIG',
    'idle',
    'initial',
  ],
  [
    'parallel-with-initial',
    InvalidStateConfigException,
    'MR_INVALID_STATE_CONFIG',
    'work',
    'initial',
  ],
  [
    'parallel-without-regions',
    InvalidStateConfigException,
    'MR_INVALID_STATE_CONFIG',
    'work',
    'states',
  ],
  [
    'unguarded-branch-not-last',
    InvalidStateConfigException,
    'MR_INVALID_STATE_CONFIG',
    'idle',
    'SUBMIT',
  ],
  [
    'transition-unknown-keys',
    InvalidStateConfigException,
    'MR_INVALID_STATE_CONFIG',
    'idle',
    'SUBMIT',
  ],
  [
    'cross-region-transition',
    InvalidStateConfigException,
    'MR_INVALID_STATE_CONFIG',
    'work.payment.pending',
    'shipping.sent',
  ],
  [
    'invalid-max-transition-depth',
    InvalidStateConfigException,
    'MR_INVALID_STATE_CONFIG',
    '',
    'max_transition_depth',
  ],
  [
    'context-schema-without-defaults',
    InvalidStateConfigException,
    'MR_INVALID_STATE_CONFIG',
    '',
    'context',
  ],
  [
    'undefined-target',
    UndefinedTargetStateException,
    'MR_UNDEFINED_TARGET_STATE',
    'idle',
    'submited',
  ],
  [
    'output-on-transient',
    InvalidOutputDefinitionException,
    'MR_INVALID_OUTPUT_DEFINITION',
    'check',
    'output',
  ],
  [
    'output-in-parallel-region',
    InvalidOutputDefinitionException,
    'MR_INVALID_OUTPUT_DEFINITION',
    'work.payment',
    'output',
  ],
  ['behavior-not-found', BehaviorNotFoundException, 'MR_BEHAVIOR_NOT_FOUND', 'idle', 'isOpen'],
  [
    'async-guard',
    InvalidBehaviorDefinitionException,
    'MR_INVALID_BEHAVIOR_DEFINITION',
    'idle',
    'isApproved',
  ],
  [
    'async-action-class',
    InvalidBehaviorDefinitionException,
    'MR_INVALID_BEHAVIOR_DEFINITION',
    'idle',
    'Notify',
  ],
  [
    'invalid-behavior-reference',
    InvalidBehaviorDefinitionException,
    'MR_INVALID_BEHAVIOR_DEFINITION',
    'idle',
    '42',
  ],
  [
    'timer-non-positive',
    InvalidTimerDefinitionException,
    'MR_INVALID_TIMER_DEFINITION',
    'waiting',
    'EXPIRE',
  ],
  [
    'timer-not-a-duration',
    InvalidTimerDefinitionException,
    'MR_INVALID_TIMER_DEFINITION',
    'polling',
    'POLL',
  ],
  [
    'timer-max-without-every',
    InvalidTimerDefinitionException,
    'MR_INVALID_TIMER_DEFINITION',
    'polling',
    'POLL',
  ],
  [
    'malformed-event-type',
    InvalidEventDefinitionException,
    'MR_INVALID_EVENT_DEFINITION',
    'idle',
    'submitOrder',
  ],
  [
    'reserved-event-not-allowed',
    InvalidEventDefinitionException,
    'MR_INVALID_EVENT_DEFINITION',
    'idle',
    '@fail',
  ],
  [
    'unknown-reserved-event',
    InvalidEventDefinitionException,
    'MR_INVALID_EVENT_DEFINITION',
    'idle',
    '@finish',
  ],
  [
    'event-key-mismatch',
    InvalidEventDefinitionException,
    'MR_INVALID_EVENT_DEFINITION',
    '',
    'events.SUBMIT',
  ],
];

async function load(fixture: string): Promise<MachineInput> {
  const module = (await import(`../../../fixtures/definitions/${fixture}.ts`)) as {
    default: unknown;
  };
  return module.default as MachineInput;
}

function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}

describe('defineMachine (definition errors)', () => {
  it.each(cases)(
    'should reject fixture %s with %o',
    async (fixture, errorClass, code, path, key) => {
      const input = await load(fixture);

      const error = thrownBy(() => defineMachine(input)) as MachineRoutesError;

      expect(error).toBeInstanceOf(errorClass);
      expect(error.code).toBe(code);
      expect(error.details).toMatchObject({ machine: 'fixture', path, key });
      expect(error.message).toContain(`Machine 'fixture'`);
      expect(error.message).toContain(path === '' ? 'root state' : `state '${path}'`);
      expect(error.message).toContain(
        key.startsWith('events.') ? key.slice('events.'.length) : key,
      );
    },
  );

  it('should have a fixture for every case and a case for every fixture', async () => {
    const { readdir } = await import('node:fs/promises');
    const files = await readdir(new URL('../../../fixtures/definitions/', import.meta.url));

    expect(files.map((file) => file.replace(/\.ts$/, '')).sort()).toEqual(
      cases.map(([fixture]) => fixture).sort(),
    );
  });
});
