/**
 * Walks the import graph of a TypeScript module by reading sources, as far as it is loaded:
 * type-only imports are erased and do not count. Used to keep generated code free of modules
 * it must never load.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './support.js';

/** Options of {@link importGraph}. */
export interface ImportGraphOptions {
  /** Whether `import('...')` counts: yes for "may ever load", no for "loads on import". */
  dynamic: boolean;
}

// This package's own entry points, as its `exports` map them: followed like relative imports.
const OWN_EXPORTS = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'))
  .exports as Record<string, string | Record<string, string>>;
const OWN_NAME = 'machine-routes';

function ownEntry(specifier: string): string | null {
  if (specifier !== OWN_NAME && !specifier.startsWith(`${OWN_NAME}/`)) return null;
  const target = OWN_EXPORTS[`.${specifier.slice(OWN_NAME.length)}`];
  if (target === undefined) return null;
  // The TypeScript sources, as the tests' `machine-routes-source` condition resolves them.
  const file = typeof target === 'string' ? target : target['machine-routes-source'];
  return file === undefined ? null : path.join(ROOT, file);
}

const STATIC = /(?:^|[;\s])(?:import|export)\s+(type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/g;
const DYNAMIC = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Specifiers a source loads; comments are dropped first (TSDoc examples hold imports). */
function specifiersOf(source: string, options: ImportGraphOptions): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const found = [...code.matchAll(STATIC)]
    .filter((match) => match[1] === undefined)
    .map((match) => match[2]!);
  if (options.dynamic) found.push(...[...code.matchAll(DYNAMIC)].map((match) => match[1]!));
  return found;
}

/**
 * Every module `entry` reaches: absolute paths of this repository's files, and bare specifiers
 * of packages (a package is part of the graph whatever it imports in turn).
 */
export function importGraph(entry: string, options: ImportGraphOptions): string[] {
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    if (!file.endsWith('.ts')) return;
    for (const specifier of specifiersOf(readFileSync(file, 'utf8'), options)) {
      const own = ownEntry(specifier);
      if (own !== null) {
        visit(own);
      } else if (specifier.startsWith('.')) {
        const resolved = path.resolve(path.dirname(file), specifier);
        const source = resolved.replace(/\.js$/, '.ts');
        visit(existsSync(source) ? source : resolved);
      } else {
        seen.add(specifier);
      }
    }
  };
  visit(entry);
  return [...seen];
}
