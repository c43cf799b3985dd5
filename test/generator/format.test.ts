import { readFileSync } from 'node:fs';
import path from 'node:path';
import * as prettier from 'prettier';
import { describe, expect, it } from 'vitest';
import { formatFiles, PRETTIER_OPTIONS } from '../../src/generator/format.js';
import { verbatimPlaceholder } from '../../src/generator/manifest.js';
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

  it.each(['order.routes.gen.ts', 'fulfillment.routes.gen.ts', 'client.gen.ts'])(
    'should leave nothing for prettier to change in %s',
    async (name) => {
      const contents = readFileSync(path.join(ROOT, 'generated-example', name), 'utf8');
      expect(await prettier.format(contents, PRETTIER_OPTIONS)).toBe(contents);
    },
  );
});
