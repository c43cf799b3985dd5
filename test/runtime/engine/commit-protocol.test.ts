/**
 * The commit protocol is written once: outside the stores themselves, only
 * `engine/commit-step.ts` writes to the store (`store.commit`): steps (`writeCommit`) and a timer
 * fire's claim recorded alone (`commitTimerClaim`). Child-status rows (`machine_children`) change
 * in a step's commit or through `commitChildRows` there: nothing else calls `updateChildren`.
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

/** The source without its comments. */
function code(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
}

/** `<something>store.commit(` calls of a source, comments dropped. */
function storeCommits(source: string): number {
  return [...code(source).matchAll(/\bstore\.commit\(/gi)].length;
}

/** `.updateChildren(` calls of a source (not the stores' own definitions), comments dropped. */
function childRowWrites(source: string): number {
  return [...code(source).matchAll(/\.updateChildren\(/g)].length;
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

  it('should write child-status rows only in commit-step.ts', () => {
    const callers = Object.fromEntries(
      sources()
        .map(
          (file) => [path.relative(SRC, file), childRowWrites(readFileSync(file, 'utf8'))] as const,
        )
        .filter(([, count]) => count > 0),
    );

    // commitChildRows: row changes that belong to no step (the rest ride in a step's commit).
    expect(callers).toEqual({ 'runtime/engine/commit-step.ts': 1 });
  });

  it('should count a child-row write in a source', () => {
    expect(childRowWrites('await ctx.store.updateChildren([]); // store.updateChildren(x)')).toBe(
      1,
    );
    expect(childRowWrites('async updateChildren(changes) {}')).toBe(0);
  });

  it('should count a store commit in a source', () => {
    expect(storeCommits('await this.store.commit(request); // store.commit(x)')).toBe(1);
  });
});
