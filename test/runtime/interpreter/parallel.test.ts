import { describe, expect, it } from 'vitest';
import {
  defineMachine,
  defineValidationGuard,
  initialize,
  transition,
} from '../../../src/runtime/index.js';
import { typesOf } from './helpers.js';

const editor = defineMachine({
  config: {
    id: 'editor',
    initial: 'active',
    context: { saves: 0, allowBold: true },
    states: {
      active: {
        type: 'parallel',
        on: { CLOSE: 'closed' },
        onDone: 'finished',
        states: {
          document: {
            initial: 'editing',
            states: {
              editing: {
                on: {
                  VALIDATE: 'reviewing',
                  SAVE: { target: 'saved', actions: 'countSave' },
                  TOGGLE: 'reviewing',
                  PUBLISH: 'published',
                },
              },
              reviewing: { on: { TOGGLE: 'editing' } },
              saved: { on: { TOGGLE: 'editing' } },
              published: { type: 'final' },
            },
          },
          format: {
            initial: 'plain',
            states: {
              plain: {
                on: {
                  TOGGLE: { target: 'bold', guards: 'boldAllowed' },
                  VALIDATE: { target: 'checked', guards: 'mustBeValid' },
                  PUBLISH: 'locked',
                },
              },
              bold: { on: { TOGGLE: 'plain' } },
              checked: {},
              locked: { type: 'final' },
            },
          },
        },
      },
      closed: {},
      finished: {},
    },
  },
  behavior: {
    guards: {
      boldAllowed: ({ context }) => context.allowBold === true,
      mustBeValid: defineValidationGuard({
        check: () => false,
        message: 'Formatting is invalid',
        field: 'payload.format',
      }),
    },
    actions: { countSave: ({ context }) => void ((context.saves as number) += 1) },
  },
});

describe('transition (parallel states)', () => {
  it('should list one active state per region, entering regions in order', () => {
    const { snapshot, history } = initialize(editor);

    expect(snapshot.value).toEqual([
      'editor.active.document.editing',
      'editor.active.format.plain',
    ]);
    expect(typesOf(history)).toEqual([
      'editor.start',
      'editor.state.active.enter',
      'editor.parallel.active.document.region.enter',
      'editor.state.active.document.enter',
      'editor.state.active.document.editing.enter',
      'editor.parallel.active.format.region.enter',
      'editor.state.active.format.enter',
      'editor.state.active.format.plain.enter',
    ]);
  });

  it('should send an event to every region that handles it', () => {
    const { snapshot } = transition(editor, initialize(editor).snapshot, 'TOGGLE');

    expect(snapshot.value).toEqual([
      'editor.active.document.reviewing',
      'editor.active.format.bold',
    ]);
  });

  it('should move only the region whose guard passes and record a TRANSITION_FAIL for the other', () => {
    const initial = initialize(editor).snapshot;

    const { snapshot, history } = transition(
      editor,
      { ...initial, context: { saves: 0, allowBold: false } },
      'TOGGLE',
    );

    expect(snapshot.value).toEqual([
      'editor.active.document.reviewing',
      'editor.active.format.plain',
    ]);
    expect(typesOf(history)).toContain('editor.transition.active.format.plain.TOGGLE.fail');
    expect(typesOf(history)).toContain('editor.transition.active.document.editing.TOGGLE.finish');
  });

  it('should move a single region and leave the other untouched', () => {
    const { snapshot } = transition(editor, initialize(editor).snapshot, { type: 'SAVE' });

    expect([snapshot.value, snapshot.context.saves]).toEqual([
      ['editor.active.document.saved', 'editor.active.format.plain'],
      1,
    ]);
  });

  it('should reject the whole event when a validation guard of a region fails', () => {
    const initial = initialize(editor).snapshot;

    const result = transition(editor, initial, 'VALIDATE');

    expect(result.validationFailure).toEqual({
      message: 'Formatting is invalid',
      errors: { 'payload.format': ['Formatting is invalid'] },
    });
    expect(result.snapshot).toEqual({
      ...initial,
      sequence: initial.sequence + result.history.length,
    });
  });

  it('should exit every region on a transition declared by the parallel state', () => {
    const { snapshot, history } = transition(editor, initialize(editor).snapshot, 'CLOSE');

    expect(snapshot.value).toEqual(['editor.closed']);
    expect(typesOf(history).filter((type) => type.endsWith('.exit'))).toEqual([
      'editor.state.active.format.plain.exit',
      'editor.state.active.format.exit',
      'editor.state.active.document.editing.exit',
      'editor.state.active.document.exit',
      'editor.state.active.exit',
    ]);
  });

  it('should take onDone when every region is final', () => {
    const { snapshot, history } = transition(editor, initialize(editor).snapshot, 'PUBLISH');

    expect(snapshot.value).toEqual(['editor.finished']);
    expect(typesOf(history)).toContain('editor.parallel.active.done');
  });

  it('should list the leaves of a nested parallel state', () => {
    const nested = defineMachine({
      config: {
        id: 'n',
        initial: 'outer',
        states: {
          outer: {
            type: 'parallel',
            states: {
              left: {
                type: 'parallel',
                states: {
                  l1: { initial: 'a', states: { a: {} } },
                  l2: { initial: 'b', states: { b: {} } },
                },
              },
              right: { initial: 'c', states: { c: {} } },
            },
          },
        },
      },
    });

    expect(initialize(nested).snapshot.value).toEqual([
      'n.outer.left.l1.a',
      'n.outer.left.l2.b',
      'n.outer.right.c',
    ]);
  });
});
