/**
 * The runtime's layers, checked over the real import graph (every `import`/`export ... from`,
 * type-only ones included, as the TypeScript scanner reads them):
 *
 *   errors/ids < definition < interpreter < persistence < jobs < engine < http
 *
 * A module imports from its own layer or below, never above. The engine holds no module-level
 * mutable state (a `let` or `var` at the top of a module).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../generator/support.js';

const RUNTIME = path.join(ROOT, 'src/runtime');

/** Layer rank of a runtime module by its path below src/runtime; `null` for an unknown place. */
function layerOf(relative: string): { name: string; rank: number } | null {
  const [first, ...rest] = relative.split('/');
  if (rest.length === 0) {
    if (
      [
        'errors.ts',
        'ids.ts',
        'clock.ts',
        'environment.ts',
        'store-url.ts',
        'naming.ts',
        'logger.ts',
        'known-keys.ts',
        'own-root.ts',
      ].includes(first!)
    )
      return { name: 'errors/ids', rank: 0 };
    if (first === 'index.ts') return { name: 'barrel', rank: 7 };
    return null;
  }
  // Telemetry (the OpenTelemetry API's spans and instruments) is used by every layer above it.
  if (first === 'telemetry') return { name: 'telemetry', rank: 0 };
  const folders = ['definition', 'interpreter', 'persistence', 'jobs', 'engine', 'http'];
  const rank = folders.indexOf(first!);
  return rank < 0 ? null : { name: first!, rank: rank + 1 };
}

function runtimeModules(dir = RUNTIME): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return runtimeModules(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** Relative imports of a module, resolved to paths below src/runtime. */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return importedFiles
    .map((imported) => imported.fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) =>
      path.relative(RUNTIME, path.resolve(path.dirname(file), name)).replace(/\.js$/, '.ts'),
    );
}

/** Imports of modules into a higher layer (or outside the runtime), as readable lines. */
function upwardImports(
  graph: readonly { relative: string; imports: readonly string[] }[],
): string[] {
  const upward: string[] = [];
  for (const { relative, imports } of graph) {
    const from = layerOf(relative);
    if (from === null) continue;
    for (const target of imports) {
      const to = layerOf(target);
      if (to === null || to.rank > from.rank)
        upward.push(
          `${relative} (${from.name}) imports ${target} (${to?.name ?? 'outside src/runtime'})`,
        );
    }
  }
  return upward;
}

describe('runtime layers', () => {
  const modules = runtimeModules().map((file) => ({
    file,
    relative: path.relative(RUNTIME, file),
  }));

  it('should place every runtime module in a layer', () => {
    expect(
      modules.filter(({ relative }) => layerOf(relative) === null).map((m) => m.relative),
    ).toEqual([]);
  });

  it('should import only from the same layer or below', () => {
    const graph = modules.map(({ file, relative }) => ({ relative, imports: importsOf(file) }));
    expect(graph.length).toBeGreaterThan(50);
    expect(upwardImports(graph)).toEqual([]);
  });

  it('should report an upward import', () => {
    expect(
      upwardImports([
        { relative: 'interpreter/plan-commit.ts', imports: ['persistence/store.ts', 'errors.ts'] },
        { relative: 'http/request-lifecycle.ts', imports: ['engine/machine-runtime.ts'] },
      ]),
    ).toEqual([
      'interpreter/plan-commit.ts (interpreter) imports persistence/store.ts (persistence)',
    ]);
  });

  it('should keep no module-level mutable state in the engine', () => {
    const found: string[] = [];
    for (const { file, relative } of modules.filter((m) => m.relative.startsWith('engine/'))) {
      const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
      for (const statement of source.statements) {
        if (
          ts.isVariableStatement(statement) &&
          (statement.declarationList.flags & ts.NodeFlags.BlockScoped) !== ts.NodeFlags.Const
        )
          found.push(`${relative}: ${statement.getText(source).split('\n')[0]}`);
      }
    }
    expect(found).toEqual([]);
  });
});
