/**
 * Where a config failed to load, in the user's own source: the file and line of a syntax error,
 * of an import that does not resolve, or of the statement that threw while the config's modules
 * were evaluated. Frames of node_modules, of Node itself and of machine-routes are skipped.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SourceLocation } from '../runtime/errors.js';
import { OWN_ROOT as OWN_ROOT_URL } from '../runtime/own-root.js';

const TRAILING_PLACE = /((?:file:\/\/)?\/[^\s()]+?):(\d+):(\d+)\)?\s*$/;
// src/ when run from source, dist/ once built: the package's own code, never the user's.
const OWN_ROOT = fileURLToPath(OWN_ROOT_URL);

/** The user's place of `error`, or `undefined` when it names none. */
export function loadErrorLocation(error: unknown): SourceLocation | undefined {
  if (!(error instanceof Error)) return undefined;
  const requireStack = (error as { requireStack?: unknown }).requireStack;
  const missing = /^Cannot find module '([^']+)'/.exec(error.message);
  if (missing !== null && Array.isArray(requireStack) && typeof requireStack[0] === 'string') {
    return specifierLocation(requireStack[0], missing[1]!);
  }
  // A parse error's message ends with its place (`ParseError: Unexpected token\n file:3:22`),
  // its column counted from 0.
  if (error.message.startsWith('ParseError:')) {
    const parsed = userPlace(error.message.split('\n').at(-1) ?? '');
    if (parsed !== undefined) return { ...parsed, column: parsed.column + 1 };
  }
  for (const frame of error.stack?.split('\n').slice(1) ?? []) {
    const place = userPlace(frame);
    if (place !== undefined) return place;
  }
  return undefined;
}

/** The place at the end of `text` when it is in the user's own files. */
function userPlace(text: string): SourceLocation | undefined {
  const match = TRAILING_PLACE.exec(text.trim());
  if (match === null) return undefined;
  const [, raw = '', line = '0', column = '0'] = match;
  const file = raw.startsWith('file://') ? fileURLToPath(raw) : raw;
  if (file.startsWith(OWN_ROOT) || file.split(path.sep).includes('node_modules')) return undefined;
  return { file, line: Number(line), column: Number(column) };
}

/** The first quoted occurrence of `specifier` in `file` (its import), else the file's start. */
function specifierLocation(file: string, specifier: string): SourceLocation {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return { file, line: 1, column: 1 };
  }
  const lines = text.split('\n');
  for (const [index, line] of lines.entries()) {
    for (const quote of ["'", '"', '`']) {
      const column = line.indexOf(`${quote}${specifier}${quote}`);
      if (column !== -1) return { file, line: index + 1, column: column + 1 };
    }
  }
  return { file, line: 1, column: 1 };
}
