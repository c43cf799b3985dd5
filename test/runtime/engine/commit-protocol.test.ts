/**
 * The commit protocol is written once: outside the stores themselves, only
 * `engine/commit-step.ts` writes to the store (`store.commit`): steps (`writeCommit`) and a timer
 * fire's claim recorded alone (`commitTimerClaim`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../generator/support.js';

const SRC = path.join(ROOT, 'src');

function sources(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** `<something>store.commit(` calls of a source, comments dropped. */
function storeCommits(source: string): number {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  return [...code.matchAll(/\bstore\.commit\(/gi)].length;
}

describe('the commit protocol', () => {
  it('should write steps to the store only in commit-step.ts', () => {
    const callers = Object.fromEntries(
      sources()
        .map(
          (file) => [path.relative(SRC, file), storeCommits(readFileSync(file, 'utf8'))] as const,
        )
        .filter(([, count]) => count > 0),
    );

    expect(callers).toEqual({
      // writeCommit, and commitTimerClaim (a fire no state accepts, recorded alone).
      'runtime/engine/commit-step.ts': 2,
    });
  });

  it('should count a store commit in a source', () => {
    expect(storeCommits('await this.store.commit(request); // store.commit(x)')).toBe(1);
  });
});
