/**
 * The runtime's layers, checked over the real import graph (every `import`/`export ... from`,
 * type-only ones included, as the TypeScript scanner reads them):
 *
 *   errors/ids < definition < interpreter < persistence < jobs < engine < http
 *
 * A module imports from its own layer or below, never above. The engine holds no module-level
 * mutable state (a `let` or `var` at the top of a module). No module of `src/` is part of an
 * import cycle (value imports: what Node evaluates), except the ones named in
 * `ALLOWED_CYCLES`; `engine/` has none even counting type-only imports.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../generator/support.js';

const RUNTIME = path.join(ROOT, 'src/runtime');
const SRC = path.join(ROOT, 'src');

/**
 * Cycles that exist on purpose, each as the exact set of its modules (below src/): a cycle
 * with one module more, or a new one, fails. The interpreter's macrostep starts child machines
 * inline, whose initial macrostep runs the same loop; the client emitter and the TanStack
 * emitter share helpers both ways.
 */
const ALLOWED_CYCLES: readonly (readonly string[])[] = [
  [
    'runtime/interpreter/initialize.ts',
    'runtime/interpreter/invoke-child.ts',
    'runtime/interpreter/macrostep.ts',
    'runtime/interpreter/microstep.ts',
    'runtime/interpreter/plan-region-dispatch.ts',
    'runtime/interpreter/route-child-outcome.ts',
  ],
  ['generator/emitters/client.ts', 'generator/emitters/tanstack.ts'],
];

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
  // errors.ts's classes by job, behind the barrel: the bottom layer like errors.ts itself.
  if (first === 'errors') return { name: 'errors/ids', rank: 0 };
  // Telemetry (the OpenTelemetry API's spans and instruments) is used by every layer above it.
  if (first === 'telemetry') return { name: 'telemetry', rank: 0 };
  const folders = ['definition', 'interpreter', 'persistence', 'jobs', 'engine', 'http'];
  const rank = folders.indexOf(first!);
  return rank < 0 ? null : { name: first!, rank: rank + 1 };
}

function sourceModules(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceModules(full);
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

/** Relative imports of a module below `root`; `values`: only those Node evaluates (no `import type`). */
function moduleImports(file: string, root: string, values: boolean): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest);
  const found: string[] = [];
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement) && !ts.isExportDeclaration(statement)) continue;
    const specifier = statement.moduleSpecifier;
    if (specifier === undefined || !ts.isStringLiteral(specifier)) continue;
    if (!specifier.text.startsWith('.')) continue;
    if (values && typeOnly(statement)) continue;
    found.push(
      path.relative(root, path.resolve(path.dirname(file), specifier.text)).replace(/\.js$/, '.ts'),
    );
  }
  return found;
}

/** `import type`, `export type`, or an import whose every name is `type`. */
function typeOnly(statement: ts.ImportDeclaration | ts.ExportDeclaration): boolean {
  if (ts.isExportDeclaration(statement)) return statement.isTypeOnly;
  const clause = statement.importClause;
  if (clause === undefined) return false;
  if (clause.isTypeOnly) return true;
  const bindings = clause.namedBindings;
  return (
    clause.name === undefined &&
    bindings !== undefined &&
    ts.isNamedImports(bindings) &&
    bindings.elements.length > 0 &&
    bindings.elements.every((element) => element.isTypeOnly)
  );
}

/** The import cycles of a graph: its strongly connected components of more than one module. */
function cyclesOf(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || (graph.get(node) ?? []).includes(node))
      cycles.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return cycles;
}

/** Cycles not in `allowed` (an allowed cycle must match one entry exactly). */
function unexpectedCycles(
  cycles: readonly string[][],
  allowed: readonly (readonly string[])[],
): string[] {
  const known = new Set(allowed.map((cycle) => [...cycle].sort().join(' -> ')));
  return cycles.map((cycle) => cycle.join(' -> ')).filter((cycle) => !known.has(cycle));
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
  const modules = sourceModules(RUNTIME).map((file) => ({
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

describe('import cycles', () => {
  const graphOf = (files: readonly string[], values: boolean) =>
    new Map(
      files.map((file) => [path.relative(SRC, file), moduleImports(file, SRC, values)] as const),
    );

  it('should find no cycle in src/ but the allowed ones', () => {
    const graph = graphOf(sourceModules(SRC), true);
    expect(graph.size).toBeGreaterThan(100);
    expect(unexpectedCycles(cyclesOf(graph), ALLOWED_CYCLES)).toEqual([]);
  });

  it('should find no cycle in engine/, type-only imports included', () => {
    const graph = graphOf(sourceModules(path.join(RUNTIME, 'engine')), false);
    expect(cyclesOf(graph)).toEqual([]);
  });

  it('should report a new cycle and one that grew, and accept an allowed one', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['e.ts']],
      ['e.ts', ['d.ts']],
      ['f.ts', ['f.ts']],
      ['g.ts', ['a.ts']],
    ]);
    expect(
      unexpectedCycles(cyclesOf(graph), [
        ['a.ts', 'b.ts'],
        ['d.ts', 'e.ts'],
      ]),
    ).toEqual(['a.ts -> b.ts -> c.ts', 'f.ts']);
  });
});
