/**
 * src/testing is a layer of its own above the whole runtime: it reaches the engine through its
 * barrel only (engine modules move, its exports stay), and no module outside src/testing
 * imports it (the runtime and the generator never depend on the test kit).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../generator/support.js';

const SRC = path.join(ROOT, 'src');

function modules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

/** Relative imports of `file`, as paths below src/. */
function importsOf(file: string): string[] {
  return ts
    .preProcessFile(readFileSync(file, 'utf8'), true, true)
    .importedFiles.map((imported) => imported.fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) =>
      path.relative(SRC, path.resolve(path.dirname(file), name)).replace(/\.js$/, '.ts'),
    );
}

describe('src/testing imports', () => {
  it('should reach the engine through its barrel only', () => {
    const deep = modules(path.join(SRC, 'testing')).flatMap((file) =>
      importsOf(file)
        .filter(
          (target) => target.startsWith('runtime/engine/') && target !== 'runtime/engine/index.ts',
        )
        .map((target) => `${path.relative(SRC, file)} imports ${target}`),
    );
    expect(deep).toEqual([]);
  });

  it('should be imported by no module outside src/testing', () => {
    const users = modules(SRC)
      .filter((file) => !path.relative(SRC, file).startsWith('testing/'))
      .flatMap((file) =>
        importsOf(file)
          .filter((target) => target.startsWith('testing/'))
          .map((target) => `${path.relative(SRC, file)} imports ${target}`),
      );
    expect(users).toEqual([]);
  });
});
