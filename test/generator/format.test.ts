import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as prettier from 'prettier';
import { describe, expect, it } from 'vitest';
import { isFlatLine, setAsideFlatLines } from '../../src/generator/flat-layout.js';
import { formatFiles, PRETTIER_OPTIONS, type FormatCache } from '../../src/generator/format.js';
import { verbatimLine, verbatimPlaceholder } from '../../src/generator/manifest.js';
import { ROOT } from './support.js';

describe('formatFiles', () => {
  it('should splice verbatim blocks in after formatting, as they are', async () => {
    const [file] = await formatFiles([
      {
        path: 'table.gen.ts',
        contents: `const  a = {b:1}\n// prettier-ignore\nexport const rows = ${verbatimPlaceholder(0)};\n`,
        verbatim: ['[\n  { id:1 },\n]'],
      },
    ]);
    expect(file).toEqual({
      path: 'table.gen.ts',
      contents: 'const a = { b: 1 };\n// prettier-ignore\nexport const rows = [\n  { id:1 },\n];\n',
    });
  });

  it('should throw when a verbatim block has no placeholder', async () => {
    await expect(
      formatFiles([{ path: 'table.gen.ts', contents: 'export {};\n', verbatim: ['[]'] }]),
    ).rejects.toThrow("Generated file 'table.gen.ts' must hold verbatim block 0 exactly once.");
  });

  it("should put a line placeholder's block in place of the whole line, indentation included", async () => {
    const [file] = await formatFiles([
      {
        path: 'lines.gen.ts',
        contents: `export function f() {\nconst a  = 1\n  ${verbatimLine(0)}\n}\n${verbatimLine(1)}\n`,
        verbatim: ['  const b = 2;\n  const c = 3;', 'export type T = { a: string };'],
      },
    ]);
    expect(file!.contents).toBe(
      'export function f() {\n  const a = 1;\n  const b = 2;\n  const c = 3;\n}\nexport type T = { a: string };\n',
    );
  });

  it('should leave a file laid out by its emitter as it is, apart from its verbatim blocks', async () => {
    const [file] = await formatFiles([
      {
        path: 'done.gen.ts',
        contents: `const  a = 1\nexport const rows = ${verbatimPlaceholder(0)};\n`,
        verbatim: ['[]'],
        formatted: true,
      },
    ]);
    expect(file!.contents).toBe('const  a = 1\nexport const rows = [];\n');
  });

  it("should take a text found in the cache from it, and keep only this run's texts", async () => {
    const cache: FormatCache = new Map([
      ['const a=1\n', 'const a = 1; // cached\n'],
      ['const old=0\n', 'const old = 0;\n'],
    ]);
    const files = await formatFiles(
      [
        { path: 'a.gen.ts', contents: 'const a=1\n' },
        { path: 'b.gen.ts', contents: 'const b=2\n' },
      ],
      cache,
    );
    expect(files.map((file) => file.contents)).toEqual([
      'const a = 1; // cached\n',
      'const b = 2;\n',
    ]);
    expect(cache).toEqual(
      new Map([
        ['const a=1\n', 'const a = 1; // cached\n'],
        ['const b=2\n', 'const b = 2;\n'],
      ]),
    );
  });

  // Every generated TypeScript file of the example and of the snapshot configs: the parts kept
  // out of prettier (flat lines, route tables, files laid out whole) must be what it prints.
  const generated = [
    'generated-example',
    ...['fastify', 'express', 'forwarding'].map((name) => `test/generator/__snapshots__/${name}`),
  ].flatMap((dir) =>
    readdirSync(path.join(ROOT, dir))
      .filter((name) => name.endsWith('.ts'))
      .map((name) => `${dir}/${name}`),
  );
  it.each(generated)('should leave nothing for prettier to change in %s', async (file) => {
    const contents = readFileSync(path.join(ROOT, file), 'utf8');
    expect(await prettier.format(contents, PRETTIER_OPTIONS)).toBe(contents);
  });
});

describe('isFlatLine', () => {
  it.each([
    'export type A = { id: string; count: number; note?: string };',
    "export type S = 'order.draft' | 'order.paid';",
    'export type R = Record<string, unknown>;',
    'export type T = [string, boolean] | null;',
    "router.mount(machineOf('order'), orderRoutes);",
    'export type N = -1 | 0.5 | 3;',
    'export type Q = \'a "quoted" word\';',
  ])('should keep %s as it is', async (line) => {
    expect(isFlatLine(line)).toBe(true);
    // What the claim means: prettier prints the line as it is.
    expect((await prettier.format(`${line.trim()}\n`, PRETTIER_OPTIONS)).trimEnd()).toBe(
      line.trim(),
    );
  });

  it.each([
    ['longer than the print width', `export type A = ${"'x' | ".repeat(20)}'y';`],
    ['double quotes', 'export type S = "a" | "b";'],
    ['an escape', "export type S = 'it\\'s';"],
    ['a quoted key', "export type O = { 'a-b': string };"],
    ['parentheses', 'export type U = (A | B)[];'],
    ['an arrow', 'export type F = (a: string) => void;'],
    ['an exponent', 'export type E = 1e-7;'],
    ['non-ASCII text', "export type S = 'café';"],
    ['a comment', 'export type A = string; // note'],
  ])('should leave a line with %s to prettier', (_name, line) => {
    expect(isFlatLine(line)).toBe(false);
  });

  it('should set aside runs of flat lines as numbered blocks, the others in place', () => {
    const long = `export type L = ${"'x' | ".repeat(20)}'y';`;
    expect(
      setAsideFlatLines(
        ['export type A = string;', 'export type B = number;', long, 'export type C = A;'],
        2,
      ),
    ).toEqual({
      lines: [verbatimLine(2), long, verbatimLine(3)],
      blocks: ['export type A = string;\nexport type B = number;', 'export type C = A;'],
    });
  });
});
