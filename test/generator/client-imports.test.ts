import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './support.js';

const FORBIDDEN = [
  /\/runtime\/persistence\//,
  /\/runtime\/http\//,
  /^fastify/,
  /^express/,
  /^pg$/,
  /^better-sqlite3$/,
];

/** Every module the file reaches through static and dynamic imports, as resolved specifiers. */
function importGraph(entry: string): string[] {
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    if (!file.startsWith('/')) return;
    const source = readFileSync(file, 'utf8');
    for (const match of source.matchAll(
      /(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm,
    )) {
      const specifier = (match[1] ?? match[2] ?? match[3])!;
      if (!specifier.startsWith('.')) {
        // A package: it is part of the graph whatever it imports in turn.
        seen.add(specifier);
        continue;
      }
      visit(path.resolve(path.dirname(file), specifier.replace(/\.js$/, '.ts')));
    }
  };
  visit(entry);
  return [...seen];
}

describe('emitClient', () => {
  it('should emit a client whose import graph holds no server code', () => {
    const graph = importGraph(path.join(ROOT, 'generated-example/client.gen.ts'));
    expect(graph.map((file) => path.relative(ROOT, file))).toEqual([
      'generated-example/client.gen.ts',
      'generated-example/client-runtime.gen.ts',
    ]);
    for (const file of graph) {
      for (const pattern of FORBIDDEN) expect(file).not.toMatch(pattern);
    }
  });

  it('should flag server code when the graph reaches it', () => {
    const graph = importGraph(path.join(ROOT, 'generated-example/app.gen.ts'));
    expect(graph.some((file) => FORBIDDEN.some((pattern) => pattern.test(file)))).toBe(true);
  });
});
