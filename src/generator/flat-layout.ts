/**
 * Lines whose prettier layout is known without running prettier: one line that fits the print
 * width, made only of tokens prettier prints as they are. The emitters print types and
 * statements in that flat form (schema-to-type.ts, ts-literal.ts); a line that passes here is
 * kept out of prettier (a file of such lines and fixed template text is not formatted at all),
 * any other goes through it. On large APIs most declarations are such lines, and prettier was
 * most of the time `generate` took (bench/generate). test/generator/format.test.ts checks that
 * prettier changes nothing in the generated files.
 */
import { verbatimLine } from './manifest.js';

/** The print width of generated files (prettier's `printWidth`, format.ts). */
export const PRINT_WIDTH = 100;

// Outside string literals: identifiers, numbers and the punctuation of flat types and simple
// statements. Not `"` (prettier prefers single quotes), `+`/`e` exponents (it normalizes
// numbers), `/` (comments), `=>`, non-ASCII; `(` only as a call's (it drops redundant
// grouping parentheses).
const PLAIN = /^[A-Za-z0-9_$ {}[\]<>:;?|&,=.)-]$/;
// Inside a single-quoted literal: printable ASCII without escapes or quotes to re-choose.
const QUOTED = /^[\x20-\x7e]$/;

/**
 * Whether prettier would print `line`, at `indent` spaces, exactly as it is. Conservative: a
 * `false` only means prettier decides.
 */
export function isFlatLine(line: string, indent = 0): boolean {
  if (indent + line.length > PRINT_WIDTH || line.includes('=>') || line.includes('  ')) {
    return false;
  }
  let quoted = false;
  for (let index = 0; index < line.length; index++) {
    const char = line[index]!;
    if (quoted) {
      if (char === '\\' || !QUOTED.test(char)) return false;
      if (char === "'") {
        quoted = false;
        // A quoted property key: prettier may unquote it (quoteProps "as-needed").
        if (/^\??:/.test(line.slice(index + 1))) return false;
      }
    } else if (char === "'") {
      quoted = true;
    } else if (char === '(') {
      if (!/[\w$]/.test(line[index - 1] ?? '')) return false;
    } else if (!PLAIN.test(char)) {
      return false;
    }
  }
  // A number in exponent notation (JSON's 1e-7): prettier rewrites it.
  return !quoted && !/(^|[^\w$])\d+(\.\d+)?[eE]/.test(line.replace(/'[^']*'/g, "''"));
}

/** Lines with their flat runs set aside: what goes to prettier, and the runs kept verbatim. */
export interface SetAsideLines {
  /** The lines, each run of flat ones replaced by one `verbatimLine` placeholder. */
  lines: string[];
  /** The runs, in order: block `firstIndex + i` of the file. */
  blocks: string[];
}

/**
 * Sets aside every run of consecutive flat lines (complete statements, each on one line, at
 * `indent` spaces, which the lines carry) as one verbatim block numbered from `firstIndex`;
 * the other lines stay for prettier, in order.
 */
export function setAsideFlatLines(
  lines: readonly string[],
  firstIndex: number,
  indent = 0,
): SetAsideLines {
  const result: SetAsideLines = { lines: [], blocks: [] };
  let run: string[] = [];
  const flush = (): void => {
    if (run.length === 0) return;
    result.lines.push(`${' '.repeat(indent)}${verbatimLine(firstIndex + result.blocks.length)}`);
    result.blocks.push(run.join('\n'));
    run = [];
  };
  for (const line of lines) {
    if (line.startsWith(' '.repeat(indent)) && isFlatLine(line.slice(indent), indent)) {
      run.push(line);
    } else {
      flush();
      result.lines.push(line);
    }
  }
  flush();
  return result;
}
