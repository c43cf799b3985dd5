/**
 * Formats generated TypeScript with prettier and an explicit config, so output never depends
 * on a `.prettierrc` that happens to sit near the output directory.
 *
 * Verbatim blocks (route tables, printed one route per line under `// prettier-ignore`) are
 * spliced in after formatting: prettier would keep them as they are, but parsing them was half
 * of its time on large APIs (bench/generate).
 *
 * JSON is emitted in its final layout (`JSON.stringify` with two spaces, deterministic by
 * construction) and left as it is: prettier would only re-wrap short arrays, and on the
 * 1,100-route benchmark (bench/generate) it took 6.8 s, 40% of the whole run.
 */
import type { Options } from 'prettier';
import { verbatimPlaceholder, type GeneratedFile } from './manifest.js';

/** The one prettier config of generated files. */
export const PRETTIER_OPTIONS: Options = {
  printWidth: 100,
  singleQuote: true,
  trailingComma: 'all',
  semi: true,
  parser: 'typescript',
};

/** Formats every TypeScript file; paths and order are kept. */
export async function formatFiles(files: readonly GeneratedFile[]): Promise<GeneratedFile[]> {
  // Loaded on first use: `check` and `routes` never format.
  const prettier = await import('prettier');
  return Promise.all(
    files.map(async (file) => {
      // JSON is laid out by JSON.stringify, Mermaid diagrams by their emitter.
      if (file.path.endsWith('.json') || file.path.endsWith('.mmd')) return file;
      if (!file.path.endsWith('.ts')) {
        throw new Error(`No formatter for generated file '${file.path}'.`);
      }
      const formatted = await prettier.format(file.contents, PRETTIER_OPTIONS);
      return { path: file.path, contents: spliceVerbatim(file.path, formatted, file.verbatim) };
    }),
  );
}

function spliceVerbatim(path: string, text: string, blocks: readonly string[] = []): string {
  return blocks.reduce((result, block, index) => {
    const [before, after, ...extra] = result.split(verbatimPlaceholder(index));
    if (after === undefined || extra.length > 0) {
      throw new Error(`Generated file '${path}' must hold verbatim block ${index} exactly once.`);
    }
    return `${before}${block}${after}`;
  }, text);
}
