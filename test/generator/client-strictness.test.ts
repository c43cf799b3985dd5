/**
 * The generated client compiles in a frontend's strictest settings: `strict`, and the
 * @tsconfig/strictest set (exactOptionalPropertyTypes, noPropertyAccessFromIndexSignature,
 * noUnused*, ...), with the DOM library and no Node types, as a browser project has.
 */
import path from 'node:path';
import { createRequire } from 'node:module';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ROOT } from './support.js';

const strictest = createRequire(import.meta.url)('@tsconfig/strictest/tsconfig.json') as {
  compilerOptions: Record<string, unknown>;
};

const FILES = [
  'test/generator/strict-consumer/consumer.ts',
  'generated-example/client.gen.ts',
  'generated-example/query.gen.ts',
  'test/generator/__snapshots__/forwarding/client.gen.ts',
  'test/generator/__snapshots__/express/client.gen.ts',
].map((file) => path.join(ROOT, file));

const BASE: ts.CompilerOptions = {
  noEmit: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
  types: [],
  verbatimModuleSyntax: true,
};

function diagnostics(options: Record<string, unknown>): string[] {
  const { options: parsed, errors } = ts.convertCompilerOptionsFromJson(options, ROOT);
  expect(errors).toEqual([]);
  const program = ts.createProgram(FILES, { ...BASE, ...parsed });
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const where =
      diagnostic.file && diagnostic.start !== undefined
        ? `${path.relative(ROOT, diagnostic.file.fileName)}:${diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start).line + 1} `
        : '';
    return where + ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
  });
}

describe('generated client strictness', () => {
  it('should compile under strict', { timeout: 60_000 }, () => {
    expect(diagnostics({ strict: true })).toEqual([]);
  });

  it(
    'should compile under the @tsconfig/strictest settings (exactOptionalPropertyTypes)',
    { timeout: 60_000 },
    () => {
      expect(strictest.compilerOptions['exactOptionalPropertyTypes']).toBe(true);
      expect(diagnostics(strictest.compilerOptions)).toEqual([]);
    },
  );
});
