import { describe, expect, it } from 'vitest';
import {
  BehaviorNotFoundException,
  InvalidBehaviorDefinitionException,
  defineMachine,
  defineValidationGuard,
  initialize,
  transition,
  type BehaviorArgs,
} from '../../../src/runtime/index.js';

describe('behaviors', () => {
  it('should receive one argument object with context, event, state, params, machineId, id and raise', () => {
    const calls: Pick<BehaviorArgs, 'context' | 'event' | 'params' | 'machineId' | 'id'>[] = [];
    const extras: unknown[] = [];
    const machine = defineMachine({
      config: {
        id: 'args',
        initial: 'a',
        context: { n: 1 },
        states: { a: { on: { GO: { target: 'b', actions: [['record', { weight: 3 }]] } } }, b: {} },
      },
      behavior: {
        actions: {
          record: ({ context, event, state, params, machineId, id, raise }) => {
            calls.push({ context: { ...context }, event, params, machineId, id });
            extras.push([state.value, state.matches('a'), state.matches('args.b'), typeof raise]);
          },
        },
      },
    });
    const initial = initialize(machine).snapshot;

    transition(machine, initial, { type: 'GO', payload: { x: 1 } });

    expect(calls).toEqual([
      {
        context: { n: 1 },
        event: { type: 'GO', payload: { x: 1 } },
        params: { weight: 3 },
        machineId: 'args',
        id: initial.id,
      },
    ]);
    expect(extras).toEqual([[['args.a'], true, false, 'function']]);
  });

  it.each([
    ['an inline key', 'inc'],
    ['a function', ({ context }: BehaviorArgs) => void ((context.n as number) += 1)],
    [
      'a class with run(args)',
      class Increment {
        run({ context }: BehaviorArgs) {
          (context.n as number) += 1;
        }
      },
    ],
  ])('should run an action given as %s', (_label, action) => {
    const machine = defineMachine({
      config: {
        id: 'm',
        initial: 'a',
        context: { n: 0 },
        states: { a: { on: { GO: { target: null, actions: action } } } },
      },
      behavior: { actions: { inc: ({ context }) => void ((context.n as number) += 1) } },
    });

    expect(transition(machine, initialize(machine).snapshot, 'GO').snapshot.context).toEqual({
      n: 1,
    });
  });

  it('should accept a validation guard only where a guard is expected', () => {
    const guard = defineValidationGuard({ check: () => true, message: 'never shown' });

    expect(() =>
      defineMachine({
        config: { id: 'm', initial: 'a', states: { a: { entry: guard as never } } },
      }),
    ).toThrow(InvalidBehaviorDefinitionException);
  });

  it('should name the kind when a calculator key is missing', () => {
    expect(() =>
      defineMachine({
        config: {
          id: 'm',
          initial: 'a',
          states: { a: { on: { GO: { target: null, calculators: 'total' } } } },
        },
      }),
    ).toThrow(
      expect.objectContaining({
        constructor: BehaviorNotFoundException,
        message: expect.stringContaining("calculator 'total' (in on.GO.calculators)"),
      }),
    );
  });
});
