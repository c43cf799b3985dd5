/** The machine of the retention test: a document drafted, edited, then published (final). */
import { defineMachine } from '../../../../src/runtime/definition/index.js';

export const documentMachine = defineMachine({
  config: {
    id: 'document',
    initial: 'draft',
    context: { edits: 0 },
    states: {
      draft: { on: { EDIT: { actions: 'edit' }, PUBLISH: 'published' } },
      published: { type: 'final' },
    },
  },
  behavior: {
    actions: {
      edit: ({ context }) => {
        context.edits = Number(context.edits) + 1;
      },
    },
  },
});
