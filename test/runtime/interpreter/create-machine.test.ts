import { describe, expect, it } from 'vitest';
import {
  NoTransitionDefinitionFoundException,
  createMachine,
  defineMachine,
} from '../../../src/runtime/index.js';
import { typesOf } from './helpers.js';

const toggle = defineMachine({
  config: {
    id: 'toggle',
    initial: 'off',
    context: { flips: 0 },
    states: {
      off: { on: { FLIP: { target: 'on', actions: 'count' } } },
      on: { on: { FLIP: { target: 'off', actions: 'count' } } },
    },
  },
  behavior: { actions: { count: ({ context }) => void ((context.flips as number) += 1) } },
});

describe('createMachine', () => {
  it('should start, send events and expose the snapshot and history', () => {
    const actor = createMachine(toggle).start();

    actor.send('FLIP');
    const snapshot = actor.send({ type: 'FLIP' });

    expect(snapshot).toEqual({
      machineId: 'toggle',
      id: actor.history[0]?.id,
      value: ['toggle.off'],
      context: { flips: 2 },
      status: 'active',
      sequence: snapshot.sequence,
      version: toggle.version,
    });
    expect(actor.history.map((record) => record.sequence)).toEqual(
      actor.history.map((_, index) => index + 1),
    );
    expect(typesOf(actor.history).filter((type) => type === 'FLIP')).toHaveLength(2);
  });

  it('should start lazily and merge initial context overrides', () => {
    const actor = createMachine(toggle, { id: 'my-toggle', context: { flips: 10 } });

    expect(actor.snapshot()).toMatchObject({ id: 'my-toggle', context: { flips: 10 } });
  });

  it('should expose output and available events', () => {
    const actor = createMachine(toggle).start();

    expect([actor.output(), actor.availableEvents()]).toEqual([
      { flips: 0 },
      [{ type: 'FLIP', source: 'parent' }],
    ]);
  });

  it('should throw what transition throws and keep its state', () => {
    const actor = createMachine(toggle).start();

    expect(() => actor.send('UNKNOWN')).toThrow(NoTransitionDefinitionFoundException);
    expect(actor.snapshot().value).toEqual(['toggle.off']);
  });
});
