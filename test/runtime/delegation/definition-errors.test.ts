import { describe, expect, it } from 'vitest';
import {
  InvalidStateConfigException,
  MachineOutputInjectionException,
  defineMachine,
  validateMachine,
  type MachineInput,
  type MachineRoutesError,
} from '../../../src/runtime/index.js';

type ErrorClass = abstract new (...args: never[]) => MachineRoutesError;

/** fixture file (fixtures/delegation/<name>.ts) -> expected error, state path and key. */
const cases: [fixture: string, error: ErrorClass, path: string, key: string, message: RegExp][] = [
  [
    'forward-without-queue',
    InvalidStateConfigException,
    'paying',
    'forward',
    /'forward' without 'queue'. Event forwarding is only valid in async mode/,
  ],
  [
    'done-final-without-machine',
    InvalidStateConfigException,
    'idle',
    '@done.paid',
    /@done.paid keys but no 'machine' delegation/,
  ],
  [
    'machine-on-parallel',
    InvalidStateConfigException,
    'work',
    'machine',
    /parallel state cannot delegate/,
  ],
  [
    'machine-on-compound',
    InvalidStateConfigException,
    'work',
    'machine',
    /only atomic states delegate/,
  ],
  [
    'uncovered-final-states',
    InvalidStateConfigException,
    'paying',
    '@done.paid',
    /has @done.\{state\} routing but child machine 'payment' has uncovered final states: declined/,
  ],
  [
    'unknown-final-state',
    InvalidStateConfigException,
    'paying',
    '@done.payed',
    /child machine 'payment' has no final state 'payed' \(final states: paid, declined\)/,
  ],
  [
    'forward-fire-and-forget',
    InvalidStateConfigException,
    'paying',
    'forward',
    /'forward' without '@done'. Fire-and-forget machine delegation does not support event forwarding/,
  ],
  [
    'fail-fire-and-forget',
    InvalidStateConfigException,
    'paying',
    '@fail',
    /'@fail' without '@done'/,
  ],
  [
    'timeout-without-queue',
    InvalidStateConfigException,
    'paying',
    '@timeout',
    /'@timeout' without 'queue'/,
  ],
  [
    'timeout-without-delay',
    InvalidStateConfigException,
    'paying',
    '@timeout',
    /'@timeout' without a delay/,
  ],
  [
    'sync-without-done',
    InvalidStateConfigException,
    'paying',
    'machine',
    /delegates synchronously without '@done'/,
  ],
  [
    'invalid-machine-value',
    InvalidStateConfigException,
    'paying',
    'machine',
    /invalid 'machine' value/,
  ],
  ['invalid-input', InvalidStateConfigException, 'paying', 'input', /invalid 'input'/],
  [
    'queue-without-machine',
    InvalidStateConfigException,
    'idle',
    'queue',
    /'queue' is set without 'machine'/,
  ],
  ['job-invalid-value', InvalidStateConfigException, 'charging', 'job', /invalid 'job' value/],
  [
    'job-with-machine',
    InvalidStateConfigException,
    'charging',
    'job',
    /cannot have both 'job' and 'machine'/,
  ],
  [
    'job-on-parallel',
    InvalidStateConfigException,
    'work',
    'job',
    /cannot have both 'job' and type 'parallel'/,
  ],
  ['job-with-forward', InvalidStateConfigException, 'charging', 'forward', /'forward' with 'job'/],
  [
    'job-without-done-or-target',
    InvalidStateConfigException,
    'charging',
    'job',
    /'job' without '@done' or 'target'/,
  ],
  [
    'job-done-and-target',
    InvalidStateConfigException,
    'charging',
    'target',
    /cannot have both '@done' and 'target' with 'job'/,
  ],
  [
    'job-fail-with-target',
    InvalidStateConfigException,
    'notifying',
    '@fail',
    /'@fail' with 'target'. A fire-and-forget job/,
  ],
  [
    'target-without-job',
    InvalidStateConfigException,
    'idle',
    'target',
    /'target' is set without 'job'/,
  ],
  [
    'child-output-missing',
    MachineOutputInjectionException,
    'talking',
    'PING',
    /reads the child's output, but child machine 'plain' defines no output/,
  ],
];

describe('defineMachine (delegating states)', () => {
  it.each(cases)(
    'should reject fixtures/delegation/%s with %o',
    async (fixture, errorClass, path, key, message) => {
      const input = (await import(`../../../fixtures/delegation/${fixture}.ts`)) as {
        default: MachineInput;
      };
      const issues = validateMachine(input.default);
      expect(issues).toHaveLength(1);
      const [issue] = issues as [MachineRoutesError];
      expect(issue).toBeInstanceOf(errorClass);
      expect(issue.details).toMatchObject({ machine: 'fixture', path, key });
      expect(issue.message).toMatch(message);
      expect(() => defineMachine(input.default)).toThrow(errorClass as never);
    },
  );

  it('should accept a child referenced by id, checking what needs the child at run time', () => {
    const definition = defineMachine({
      config: {
        id: 'parent',
        initial: 'paying',
        states: {
          paying: { machine: 'payment', queue: 'payments', on: { '@done.paid': 'done' } },
          done: { type: 'final' },
        },
      },
    });

    expect(definition.idMap.get('parent.paying')?.invocation).toMatchObject({
      machine: 'payment',
      childMachineId: 'payment',
      async: true,
      queue: 'payments',
      fireAndForget: false,
      timeoutSeconds: null,
    });
  });
});
