/**
 * `machine-routes generate`: renders every output file and writes it, or with `--check`
 * compares it with what is on disk and lists stale, missing and extra files. With `--watch` it
 * generates again whenever a source file under the config's directory changes.
 */
import { readdirSync, statSync, watch as fsWatch } from 'node:fs';
import path from 'node:path';
import type { Command } from '../commander.js';
import type { FormatCache } from '../../generator/format.js';
import {
  checkProject,
  emitOptionsOf,
  outputDirOf,
  renderFiles,
  withDrawnDiagrams,
} from '../../generator/generate.js';
import { resolveConfigFile } from '../../generator/load-config.js';
import { diffOutput, isGeneratedFileName, writeOutput } from '../../generator/write-files.js';
import { printIssues, type CliIo } from '../io.js';

interface GenerateOptions {
  config?: string;
  check?: boolean;
  watch?: boolean;
}

/** Adds the command; `exit` receives its exit code. */
export function registerGenerate(program: Command, io: CliIo, exit: (code: number) => void): void {
  program
    .command('generate')
    .description('emit route handlers, openapi.json and the typed client')
    .option('-c, --config <path>', 'config file (default: machine-routes.config.ts)')
    .option('--check', 'compare with the files on disk instead of writing; exit 1 when they differ')
    .option('-w, --watch', 'generate again whenever a source file changes, until interrupted')
    .action(async (options: GenerateOptions) => {
      if (options.check && options.watch) {
        io.stderr('--check and --watch cannot be used together.');
        return exit(1);
      }
      // In watch mode, a change to one machine formats again only the files whose text changed.
      const cache: FormatCache | undefined = options.watch ? new Map() : undefined;
      const code = await generateOnce(options, io, cache);
      if (!options.watch) return exit(code);
      await watch(options, io, cache!);
      exit(0);
    });
}

/**
 * One `generate` (or `generate --check`) run; returns its exit code. `cache` is prettier's
 * results of the previous run, in watch mode.
 */
async function generateOnce(
  options: GenerateOptions,
  io: CliIo,
  cache?: FormatCache,
): Promise<number> {
  const report = await checkProject({ config: options.config, cwd: io.cwd });
  if (report.manifest === null || report.loaded === null) {
    printIssues(io, report.issues);
    return 1;
  }
  const dir = outputDirOf(report.loaded);
  const emitOptions = emitOptionsOf(report.loaded);
  const rendered = await renderFiles(
    report.manifest,
    emitOptions,
    report.loaded.config.output?.kinds,
    cache,
  );
  const { files, warnings } = await withDrawnDiagrams(rendered, emitOptions, {
    outputDir: dir,
    draw: options.check !== true,
  });
  warnings.forEach((warning) => io.stderr(`warning: ${warning}`));
  const shown = path.relative(io.cwd, dir) || '.';
  if (options.check) {
    const diff = diffOutput(dir, files);
    const lines = [
      ...diff.stale.map((file) => `stale:   ${shown}/${file}`),
      ...diff.missing.map((file) => `missing: ${shown}/${file}`),
      ...diff.extra.map((file) => `extra:   ${shown}/${file}`),
    ];
    if (lines.length === 0) {
      io.stdout(`${shown}/ is up to date (${files.length} files).`);
      return 0;
    }
    lines.forEach((line) => io.stdout(line));
    io.stderr(`${shown}/ is out of date: run machine-routes generate.`);
    return 1;
  }
  const diff = writeOutput(dir, files);
  if (diff.missing.length + diff.stale.length + diff.extra.length === 0) {
    io.stdout(`${shown}/ is up to date (${files.length} files).`);
    return 0;
  }
  io.stdout(
    `Wrote ${files.length} files to ${shown}/ (${diff.missing.length} new, ${diff.stale.length} changed, ${diff.extra.length} removed).`,
  );
  return 0;
}

// Sources that can change what is generated; the output itself and installs are not watched.
const WATCHED = /\.(?:[cm]?ts|[cm]?js|json)$/;
const IGNORED = /(?:^|\/)(?:node_modules|\.git|dist|build)(?:\/|$)/;

/**
 * Calls `onChange` with the path (relative to `root`, `/`-separated) of every entry that changes
 * in `root` or a directory under it that `ignored` keeps, until `signal` aborts: one
 * non-recursive watcher per directory, and one more for each directory created later.
 *
 * Not `fs.watch(root, { recursive: true })`: on Linux Node emulates it with a watcher per file,
 * and a file that an editor saves by renaming a temporary file over it (vim, JetBrains IDEs,
 * `sed -i`) loses its watcher, so only its first save was seen. A directory's watcher sees every
 * rename into it.
 */
function watchTree(
  root: string,
  ignored: (relative: string) => boolean,
  signal: AbortSignal,
  onChange: (relative: string) => void,
): void {
  const watched = new Set<string>();
  const relativeOf = (file: string) => path.relative(root, file).split(path.sep).join('/');
  const add = (directory: string): void => {
    if (watched.has(directory) || signal.aborted) return;
    let entries;
    try {
      entries = readdirSync(directory, { withFileTypes: true });
    } catch {
      return; // removed meanwhile
    }
    watched.add(directory);
    const watcher = fsWatch(directory, { signal }, (_event, name) => {
      if (name === null) return;
      const file = path.join(directory, name);
      const relative = relativeOf(file);
      if (ignored(relative)) return;
      if (statSync(file, { throwIfNoEntry: false })?.isDirectory() === true) add(file);
      onChange(relative);
    });
    // A watched directory that is removed ends its watcher; a new one of that name is added
    // by its parent's watcher.
    watcher.on('error', () => {
      watched.delete(directory);
      watcher.close();
    });
    for (const entry of entries) {
      const child = path.join(directory, entry.name);
      if (entry.isDirectory() && !ignored(relativeOf(child))) add(child);
    }
  };
  add(root);
}

/**
 * Regenerates whenever a source under the config's directory changes, until SIGINT/SIGTERM
 * (or `io.signal`). Changes are batched for 50 ms; a run waits for the previous one to end.
 */
async function watch(options: GenerateOptions, io: CliIo, cache: FormatCache): Promise<void> {
  const root = path.dirname(resolveConfigFile({ config: options.config, cwd: io.cwd }));
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  io.signal?.addEventListener('abort', onSignal, { once: true });
  let timer: NodeJS.Timeout | undefined;
  let running = Promise.resolve();
  watchTree(
    root,
    (file) => IGNORED.test(file),
    stop.signal,
    (file) => {
      if (!WATCHED.test(file) || isGeneratedFileName(path.posix.basename(file))) return;
      clearTimeout(timer);
      timer = setTimeout(() => {
        running = running
          .then(async () => {
            io.stdout(`${file} changed: generating.`);
            await generateOnce(options, io, cache);
          })
          .catch((error: unknown) => io.stderr(`generate failed: ${String(error)}`));
      }, 50);
    },
  );
  io.stdout(`Watching ${path.relative(io.cwd, root) || '.'}/ for changes (Ctrl-C stops).`);
  await new Promise<void>((resolve) => {
    if (stop.signal.aborted) resolve();
    stop.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  clearTimeout(timer);
  await running;
  process.off('SIGINT', onSignal);
  process.off('SIGTERM', onSignal);
}
