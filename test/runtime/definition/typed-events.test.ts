/**
 * Behaviors see typed events, inferred from the machine as written. Compiled under `strict`:
 * the README's first machine, taken from README.md as it is printed there (it writes
 * `context.total = event.payload.amount`), and fixtures/types/typed-events.ts, whose
 * `@ts-expect-error` lines mark the mistakes the types must catch: with those directives
 * blanked, exactly the marked lines fail.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const TYPED_EVENTS = path.join(ROOT, 'fixtures/types/typed-events.ts');
/** Where the README's machine is compiled from: beside the fixtures, so imports resolve alike. */
const README_MACHINE = path.join(ROOT, 'fixtures/types/readme-machine.ts');

const OPTIONS: ts.CompilerOptions = {
  noEmit: true,
  strict: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  customConditions: ['machine-routes-source'],
  lib: ['lib.es2023.d.ts'],
  types: ['node'],
  skipLibCheck: true,
};

const EXPECT_ERROR = /^\s*\/\/ @ts-expect-error.*$/;

function readmeMachine(): string {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const block = /```ts\n(\/\/ machines\/order\.ts\n[\s\S]*?)```/.exec(readme)?.[1];
  expect(block, 'README.md has a ```ts block starting // machines/order.ts').toBeDefined();
  return block!;
}

/** `file:line TScode message` of each diagnostic; `files` maps a path to its (virtual) text. */
function diagnostics(files: Record<string, string>): string[] {
  const host = ts.createCompilerHost(OPTIONS);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (name) => path.resolve(name) in files || fileExists.call(host, name);
  host.readFile = (name) => files[path.resolve(name)] ?? readFile.call(host, name);
  host.getSourceFile = (name, language, ...rest) => {
    const text = files[path.resolve(name)];
    return text === undefined
      ? getSourceFile.call(host, name, language, ...rest)
      : ts.createSourceFile(name, text, language);
  };
  const program = ts.createProgram(Object.keys(files), OPTIONS, host);
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const line =
      diagnostic.file && diagnostic.start !== undefined
        ? diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start).line + 1
        : 0;
    const file = diagnostic.file ? path.relative(ROOT, diagnostic.file.fileName) : '';
    return `${file}:${line} TS${diagnostic.code} ${ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ')}`;
  });
}

function linesOf(found: string[], file: string): Set<number> {
  const prefix = `${path.relative(ROOT, file)}:`;
  return new Set(
    found
      .filter((entry) => entry.startsWith(prefix))
      .map((entry) => Number(entry.slice(prefix.length).split(' ')[0])),
  );
}

describe('typed events in behaviors', () => {
  it(
    "compiles the README's machine and the typed-event cases under strict",
    { timeout: 180_000 },
    () => {
      const readme = readmeMachine();
      expect(readme).toContain('context.total = event.payload.amount;');
      expect(readme).not.toContain('Number(event.payload');
      const typedEvents = fs.readFileSync(TYPED_EVENTS, 'utf8');
      expect(diagnostics({ [README_MACHINE]: readme, [TYPED_EVENTS]: typedEvents })).toEqual([]);
    },
  );

  it(
    'reports a wrong payload key, and exactly the marked mistakes without their @ts-expect-error',
    { timeout: 180_000 },
    () => {
      const readme = readmeMachine().replace(
        'context.total = event.payload.amount;',
        'context.total = event.payload.amnt;',
      );
      const lines = fs.readFileSync(TYPED_EVENTS, 'utf8').split('\n');
      const marked = new Set(
        lines.flatMap((line, index) => (EXPECT_ERROR.test(line) ? [index + 2] : [])),
      );
      // Blanked in place, so that line numbers stay those of the file.
      const blanked = lines.map((line) => (EXPECT_ERROR.test(line) ? '' : line)).join('\n');

      const found = diagnostics({ [README_MACHINE]: readme, [TYPED_EVENTS]: blanked });

      expect(found.filter((entry) => entry.startsWith('fixtures/types/readme-machine.ts'))).toEqual(
        [
          expect.stringMatching(
            /TS2339 Property 'amnt' does not exist on type '\{ amount: number; \}'/,
          ),
        ],
      );
      expect(linesOf(found, TYPED_EVENTS)).toEqual(marked);
      expect(marked.size).toBeGreaterThanOrEqual(6);
    },
  );
});
