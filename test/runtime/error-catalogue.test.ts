/**
 * The error catalogue (docs/errors.md) and the error classes (src/runtime/errors/, re-exported by
 * src/runtime/errors.ts) stay in step: every error class is documented with its code and HTTP status, and every class is raised somewhere in src/.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ERRORS_DIR = join(ROOT, 'src/runtime/errors');
/** Every file of the errors folder, one after the other. */
const ERRORS_SOURCE = readdirSync(ERRORS_DIR)
  .filter((name) => name.endsWith('.ts'))
  .sort()
  .map((name) => readFileSync(join(ERRORS_DIR, name), 'utf8'))
  .join('\n');
const CATALOGUE = readFileSync(join(ROOT, 'docs/errors.md'), 'utf8');

interface ErrorClass {
  name: string;
  code: string;
  status: number;
}

/** The classes of errors.ts that extend MachineRoutesError, with their code and status. */
function errorClasses(source: string): ErrorClass[] {
  const classes: ErrorClass[] = [];
  const pattern = /export class (\w+) extends MachineRoutesError \{([\s\S]*?)\n\}/g;
  for (const [, name, body] of source.matchAll(pattern)) {
    const code = /readonly code = '([A-Z_]+)'/.exec(body!)?.[1];
    const status = /readonly statusCode = (\d+)/.exec(body!)?.[1];
    classes.push({ name: name!, code: code ?? '(none)', status: status ? Number(status) : 500 });
  }
  return classes;
}

/** The rows of the catalogue table: error name, code and status. */
function catalogueRows(markdown: string): ErrorClass[] {
  const rows: ErrorClass[] = [];
  for (const [, name, code, status] of markdown.matchAll(
    /^\| `(\w+)` +\| `([A-Z_]+)` +\| (\d+) +\|/gm,
  )) {
    rows.push({ name: name!, code: code!, status: Number(status) });
  }
  return rows;
}

/** Every .ts file under `dir`. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}

/**
 * Whether `name` is used as a value somewhere in `sources` (constructed, or handed to a collector
 * that constructs it), import lines and its own declaration aside.
 */
function isRaised(name: string, sources: readonly string[]): boolean {
  const use = new RegExp(`\\b${name}\\b`);
  return sources.some((text) =>
    text
      .replace(/^import[\s\S]*?from '[^']+';$/gm, '')
      .replace(new RegExp(`export class ${name}\\b`), '')
      .split('\n')
      .some((line) => use.test(line) && !/^\s*(\/\*|\*|\/\/)/.test(line)),
  );
}

describe('error catalogue', () => {
  const classes = errorClasses(ERRORS_SOURCE);
  const sources = sourceFiles(join(ROOT, 'src')).map((file) => readFileSync(file, 'utf8'));

  it('should find the error classes of errors.ts', () => {
    expect(classes.length).toBeGreaterThan(20);
    expect(classes.map((error) => error.code)).not.toContain('(none)');
  });

  it('should document every error class with its code and status in docs/errors.md', () => {
    const rows = catalogueRows(CATALOGUE);
    const missing = classes.filter(
      (error) =>
        !rows.some(
          (row) =>
            row.name === error.name && row.code === error.code && row.status === error.status,
        ),
    );
    expect(
      missing.map((error) => `${error.name} | ${error.code} | ${error.status}`),
      'add a row per class to the table of docs/errors.md',
    ).toEqual([]);
    const stale = rows.filter((row) => !classes.some((error) => error.name === row.name));
    expect(
      stale.map((row) => row.name),
      'docs/errors.md lists classes errors.ts lacks',
    ).toEqual([]);
  });

  it('should raise every error class somewhere in src/', () => {
    const unused = classes.filter((error) => !isRaised(error.name, sources));
    expect(
      unused.map((error) => error.name),
      'raise these where they belong, or remove them from errors.ts and docs/errors.md',
    ).toEqual([]);
  });

  it('should have codes of their own', () => {
    const codes = classes.map((error) => error.code);
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('should tell a raised class from one only imported or documented', () => {
    const importOnly = [
      "import { FooException } from '../errors.js';",
      '/** FooException is thrown elsewhere. */',
    ].join('\n');
    expect(isRaised('FooException', [importOnly])).toBe(false);
    expect(isRaised('FooException', [`${importOnly}\nthrow new FooException('x');`])).toBe(true);
    expect(catalogueRows('| `FooException` | `MR_FOO` | 409 | When. |')).toEqual([
      { name: 'FooException', code: 'MR_FOO', status: 409 },
    ]);
  });
});
