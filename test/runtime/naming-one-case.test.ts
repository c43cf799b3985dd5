/**
 * kebabCase's short way (runtime/naming.ts): words of one case joined by `_` or `-` are
 * converted without change-case, whose first call compiles its Unicode word patterns at every
 * start (`defineMachine` makes a URI of each event type). Same answers as change-case, which
 * still converts everything else.
 */
import * as changeCase from 'change-case';
import { describe, expect, it, vi } from 'vitest';
import { kebabCase } from '../../src/runtime/naming.js';

vi.mock('change-case', async (original) => {
  const actual = await original<typeof import('change-case')>();
  return { ...actual, kebabCase: vi.fn(actual.kebabCase) };
});

describe('kebabCase', () => {
  it('should convert words of one case without change-case, as change-case does', async () => {
    const actual = await vi.importActual<typeof import('change-case')>('change-case');
    const oneCase = ['SUBMIT', 'SUBMIT_ORDER', 'PROVIDE_CARD', 'add', 'line_item', 'line-item'];
    vi.mocked(changeCase.kebabCase).mockClear();
    for (const text of oneCase) expect(kebabCase(text)).toBe(actual.kebabCase(text));
    expect(changeCase.kebabCase).not.toHaveBeenCalled();
  });

  it('should leave every other name to change-case', async () => {
    const actual = await vi.importActual<typeof import('change-case')>('change-case');
    const others = [
      'HTTPRequest',
      'SUBMIT_ORDER_V2',
      'version_1_2',
      '_SUBMIT',
      'SUBMIT__ORDER',
      'Submit_Order',
      'ÉTÉ_DONE',
    ];
    vi.mocked(changeCase.kebabCase).mockClear();
    for (const text of others) expect(kebabCase(text)).toBe(actual.kebabCase(text));
    expect(changeCase.kebabCase).toHaveBeenCalledTimes(others.length);
  });
});
