/**
 * The same routes untraced, for the tracing-cost benchmark: `npx tsx bench/http/untraced.ts
 * <dir>` copies this checkout's src/ and bench/ (node_modules linked) to `<dir>` with every
 * telemetry wrapper of the request path made a pass-through (the route's span and count, the
 * step's and the commit's instrumentation, the trace carriers), then
 * `npx tsx bench/http/bound-cpu.ts sqlite <dir> . .+otel` measures untraced, no SDK and SDK
 * registered in one run. The pass-throughs are an early `return` put before each wrapper's body:
 * a wrapper renamed or moved makes this script fail rather than measure a traced copy.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const [target] = process.argv.slice(2);
if (target === undefined) throw new Error('usage: untraced.ts <dir>');
const source = resolve(import.meta.dirname, '../..');
const dir = resolve(target);
mkdirSync(dir, { recursive: true });
for (const entry of ['src', 'bench', 'package.json', 'tsconfig.json'])
  cpSync(join(source, entry), join(dir, entry), { recursive: true });
if (!existsSync(join(dir, 'node_modules')))
  symlinkSync(join(source, 'node_modules'), join(dir, 'node_modules'));

/** File, the function's declaration up to its body's `{`, and what it returns instead. */
const PASS_THROUGHS: [string, string, string][] = [
  ['src/runtime/http/traced-route.ts', 'export function tracedRoute(', 'return handler;'],
  [
    'src/runtime/engine/instrumentation.ts',
    'export function instrumentedInterpreter(',
    // The interpreter's own one-step stateless send, untimed (without it the stateless route
    // called a missing function).
    'return { ...engine, startAndTransition: engine.initialize === initialize && engine.transition === transition ? (definition, event, stepOptions) => (startsAndTransitions(definition, event, stepOptions) ? startAndTransition(definition, event, stepOptions) : null) : null };',
  ],
  [
    'src/runtime/engine/instrumentation.ts',
    'export function timeCommit(',
    'return { ok: () => {}, failed: () => {} } as unknown as CommitTiming;',
  ],
  [
    'src/runtime/engine/work-instrumentation.ts',
    'export function withTraceContext(',
    'return payload;',
  ],
  ['src/runtime/telemetry/tracing.ts', 'export function currentTraceCarrier(', 'return undefined;'],
];
// Every wrapper is looked for before one is patched: a copy with some wrappers made pass-throughs
// and not others measured a half-traced baseline (2026-11-29, after instrumentation.ts split).
const missing = PASS_THROUGHS.filter(([file, declaration]) => {
  const path = join(dir, file);
  return !existsSync(path) || !readFileSync(path, 'utf8').includes(declaration);
}).map(([file, declaration]) => `${file}: '${declaration}' not found`);
if (missing.length > 0)
  throw new Error(`${missing.join('\n')}\nupdate bench/http/untraced.ts; ${dir} is not untraced`);
for (const [file, declaration, body] of PASS_THROUGHS) {
  const path = join(dir, file);
  const text = readFileSync(path, 'utf8');
  const at = text.indexOf(declaration);
  const open = text.indexOf('{\n', text.indexOf(')', at));
  writeFileSync(path, `${text.slice(0, open + 2)}  ${body}\n${text.slice(open + 2)}`);
}
console.log(`untraced copy of ${source} in ${dir}`);
