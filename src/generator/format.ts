/**
 * Formats generated TypeScript with prettier and an explicit config, so output never depends
 * on a `.prettierrc` that happens to sit near the output directory.
 *
 * Verbatim blocks (route tables, printed one route per line under `// prettier-ignore`, and
 * declarations that fit on their line, flat-layout.ts) are spliced in after formatting: prettier
 * would keep them as they are, but parsing them was most of its time on large APIs
 * (bench/generate). A file an emitter laid out whole (`formatted`) is not formatted at all.
 *
 * JSON is emitted in its final layout (`JSON.stringify` with two spaces, deterministic by
 * construction) and left as it is: prettier would only re-wrap short arrays, and on the
 * 1,100-route benchmark (bench/generate) it took 6.8 s, 40% of the whole run.
 */
import type { Options } from 'prettier';
import { loadGeneratorDependency } from './dependencies.js';
import { PRINT_WIDTH } from './flat-layout.js';
import { verbatimPlaceholder, type GeneratedFile } from './manifest.js';

/** The one prettier config of generated files. */
export const PRETTIER_OPTIONS = {
  printWidth: PRINT_WIDTH,
  singleQuote: true,
  trailingComma: 'all',
  semi: true,
  parser: 'typescript',
} as const satisfies Options;

/**
 * Prettier's output by input text, kept across runs of `generate --watch`: after a change to
 * one machine, only the files whose text changed are formatted again. Prettier's output
 * depends on nothing but its input and the fixed options above. After a run the cache holds
 * that run's texts only, so a long watch session does not grow it.
 */
export type FormatCache = Map<string, string>;

/** Formats every TypeScript file; paths and order are kept. */
export async function formatFiles(
  files: readonly GeneratedFile[],
  cache?: FormatCache,
): Promise<GeneratedFile[]> {
  // Loaded on first use: `check` and `routes` never format, and nor does a run whose files
  // are all laid out already.
  let prettier: Promise<typeof import('prettier')> | undefined;
  const used: FormatCache = new Map();
  const format = async (text: string): Promise<string> => {
    const formatted =
      cache?.get(text) ??
      (await (
        await (prettier ??= loadGeneratorDependency('prettier'))
      ).format(text, PRETTIER_OPTIONS));
    used.set(text, formatted);
    return formatted;
  };
  const formatted = await Promise.all(
    files.map(async (file) => {
      // JSON is laid out by JSON.stringify, Mermaid diagrams by their emitter.
      if (file.path.endsWith('.json') || file.path.endsWith('.mmd')) return file;
      if (!file.path.endsWith('.ts')) {
        throw new Error(`No formatter for generated file '${file.path}'.`);
      }
      const text = file.formatted === true ? file.contents : await format(file.contents);
      return { path: file.path, contents: spliceVerbatim(file.path, text, file.verbatim) };
    }),
  );
  if (cache !== undefined) {
    cache.clear();
    for (const [text, result] of used) cache.set(text, result);
  }
  return formatted;
}

/**
 * Puts each verbatim block where its placeholder is: in place of the whole line when the
 * placeholder is a line comment of its own (`verbatimLine`, complete statements), else in
 * place of the placeholder itself (an expression).
 */
function spliceVerbatim(path: string, text: string, blocks: readonly string[] = []): string {
  return blocks.reduce((result, block, index) => {
    const placeholder = verbatimPlaceholder(index);
    const [before, after, ...extra] = result.split(placeholder);
    if (after === undefined || extra.length > 0) {
      throw new Error(`Generated file '${path}' must hold verbatim block ${index} exactly once.`);
    }
    const line = new RegExp(`^[ \\t]*// ${placeholder}$`, 'm').exec(result);
    if (line === null) return `${before}${block}${after}`;
    return `${result.slice(0, line.index)}${block}${result.slice(line.index + line[0].length)}`;
  }, text);
}
