/**
 * Best-effort location of the user's `defineMachine` call, read from a stack trace, so build-time
 * errors can point at a file and line.
 */
import { fileURLToPath } from 'node:url';
import type { SourceLocation } from '../errors.js';
import { OWN_ROOT } from '../own-root.js';

const FRAME = /\(?((?:file:\/\/)?[^\s()]+?):(\d+):(\d+)\)?\s*$/;
// Every module of the package: built, defineMachine and its callers share chunks.
const OWN_DIRECTORY = fileURLToPath(OWN_ROOT);

/** The first stack frame outside this directory, or `undefined` when none can be parsed. */
export function callerLocation(): SourceLocation | undefined {
  const stack = new Error().stack?.split('\n').slice(1) ?? [];
  for (const frame of stack) {
    const match = FRAME.exec(frame.trim());
    if (match === null) continue;
    const [, rawFile = '', line = '0', column = '0'] = match;
    if (rawFile.startsWith('node:')) continue;
    const file = rawFile.startsWith('file://') ? fileURLToPath(rawFile) : rawFile;
    if (file.startsWith(OWN_DIRECTORY)) continue;
    return { file, line: Number(line), column: Number(column) };
  }
  return undefined;
}
