/** docs/architecture.md lists every module of src/ with one line (its "Modules" section). */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SRC = join(ROOT, 'src');

/** Paths of the modules a Markdown text lists as `` - `path`: line ``. */
function listedModules(markdown: string): string[] {
  return [...markdown.matchAll(/^- `([\w./-]+\.ts)`: \S/gm)].map((match) => match[1]!);
}

describe('docs/architecture.md', () => {
  const modules = readdirSync(SRC, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => relative(SRC, join(entry.parentPath, entry.name)))
    .sort();
  const architecture = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const listed = listedModules(architecture.slice(architecture.indexOf('\n## Modules\n')));

  it('should list every module of src/ with a line saying what it holds', () => {
    expect(modules.length).toBeGreaterThan(100);
    expect(
      modules.filter((module) => !listed.includes(module)),
      'add "- `<path under src/>`: what it holds" to the Modules section of docs/architecture.md',
    ).toEqual([]);
  });

  it('should list no module that does not exist', () => {
    expect(listed.filter((module) => !modules.includes(module))).toEqual([]);
  });

  it('should read only list lines with a description', () => {
    expect(listedModules('- `a/b.ts`: holds b\n- `a/c.ts`:\n* `a/d.ts`: d')).toEqual(['a/b.ts']);
  });
});
