import { describe, expect, it } from 'vitest';
import {
  InvalidStateConfigException,
  UndefinedTargetStateException,
  collectDefinitionIssues,
  defineMachine,
  validateMachine,
} from '../../../src/runtime/index.js';

const broken = {
  config: {
    id: 'broken',
    initial: 'a',
    states: { a: { on: { GO: 'missing' } }, b: { type: 'final' as const, on: { X: 'a' } } },
  },
};

describe('validateMachine', () => {
  it('should return no issue for a valid machine', () => {
    expect(validateMachine({ config: { id: 'ok', initial: 'a', states: { a: {} } } })).toEqual([]);
  });

  it('should return every issue without throwing', () => {
    const issues = validateMachine(broken);

    expect(issues.map((issue) => [issue.code, issue.details.path, issue.details.key])).toEqual([
      ['MR_INVALID_STATE_CONFIG', 'b', 'on'],
      ['MR_UNDEFINED_TARGET_STATE', 'a', 'missing'],
    ]);
  });
});

describe('collectDefinitionIssues', () => {
  it('should record issues of every machine defined inside and mark those definitions invalid', async () => {
    const { result, error, issues } = await collectDefinitionIssues(async () => {
      await Promise.resolve();
      const first = defineMachine(broken);
      const second = defineMachine({
        config: { id: 'other', initial: 'x', states: { x: { type: 'weird' as never } } },
      });
      const valid = defineMachine({ config: { id: 'fine', initial: 'a', states: { a: {} } } });
      return [first.invalid, second.invalid, valid.invalid];
    });

    expect(result).toEqual([true, true, false]);
    expect(error).toBeUndefined();
    expect(issues.map((issue) => [issue.constructor, issue.details.machine])).toEqual([
      [InvalidStateConfigException, 'broken'],
      [UndefinedTargetStateException, 'broken'],
      [InvalidStateConfigException, 'other'],
    ]);
  });

  it('should return the error fn threw along with the issues recorded before it', async () => {
    const failure = new Error('config file crashed');

    const outcome = await collectDefinitionIssues(async () => {
      defineMachine(broken);
      throw failure;
    });

    expect(outcome).toEqual({
      result: undefined,
      error: failure,
      issues: [expect.any(InvalidStateConfigException), expect.any(UndefinedTargetStateException)],
    });
  });

  it('should throw again outside the collecting scope', async () => {
    await collectDefinitionIssues(async () => undefined);

    expect(() => defineMachine(broken)).toThrow(expect.objectContaining({ code: 'MR_AGGREGATE' }));
  });
});
