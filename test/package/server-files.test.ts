/**
 * How many of dist's files a server loads at start (scripts/build.js `oneServerChunk`): each ES
 * module costs Node's loader about 1.8 M instructions whatever its size, and code splitting over
 * eleven entries had cut the runtime into 30-odd chunks, 32 of them loaded by every Fastify
 * server. The static import graph of the built entries is walked here (the global setup built
 * dist/): the runtime and what a server imports with it stay in a handful of files, an Express
 * server still loads no Fastify and the reverse, and the browser client stays small.
 */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const DIST = fileURLToPath(new URL('../../dist/', import.meta.url));

/** The dist files `entries` load through static imports, and the packages they import. */
function staticGraph(...entries: string[]): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string): void => {
    if (files.has(file)) return;
    files.add(file);
    const source = readFileSync(file, 'utf8');
    // Static imports and re-exports only: `import("...")` loads on first use.
    for (const [, specifier] of source.matchAll(
      /(?:^|\n)\s*(?:import|export)\b[^"'();]*?["']([^"']+)["']/g,
    )) {
      if (specifier!.startsWith('.')) visit(path.resolve(path.dirname(file), specifier!));
      else packages.add(specifier!);
    }
  };
  for (const entry of entries) visit(path.join(DIST, entry));
  return { files, packages };
}

describe('the built package', () => {
  it('should load the runtime of a Fastify server from a handful of files', () => {
    const { files, packages } = staticGraph('fastify.js', 'config.js', 'runtime/index.js');
    expect(packages).toContain('fastify');
    expect(packages).not.toContain('express');
    // 32 before the runtime's modules were tied into one chunk; 20 after.
    expect(files.size).toBeLessThanOrEqual(22);
  });

  it('should keep Fastify out of an Express server and the runtime out of the browser client', () => {
    expect(staticGraph('express.js', 'config.js', 'runtime/index.js').packages).not.toContain(
      'fastify',
    );
    const client = staticGraph('client/runtime.js');
    const bytes = [...client.files].reduce((sum, file) => sum + statSync(file).size, 0);
    expect(bytes).toBeLessThan(60_000);
  });
});
