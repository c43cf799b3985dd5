/**
 * `machine-routes generate`: renders every output file and writes it, or with `--check`
 * compares it with what is on disk and lists stale, missing and extra files. With `--watch` it
 * generates again whenever a source file under the config's directory changes.
 */
import { watch as fsWatch } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import type { FormatCache } from '../../generator/format.js';
import { checkProject, emitOptionsOf, outputDirOf, renderFiles } from '../../generator/generate.js';
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
  const files = await renderFiles(
    report.manifest,
    emitOptionsOf(report.loaded),
    report.loaded.config.output?.kinds,
    cache,
  );
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
  const watcher = fsWatch(root, { recursive: true, signal: stop.signal }, (_event, name) => {
    const file = name?.split(path.sep).join('/');
    if (file === undefined || !WATCHED.test(file) || IGNORED.test(file)) return;
    if (isGeneratedFileName(path.posix.basename(file))) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      running = running
        .then(async () => {
          io.stdout(`${file} changed: generating.`);
          await generateOnce(options, io, cache);
        })
        .catch((error: unknown) => io.stderr(`generate failed: ${String(error)}`));
    }, 50);
  });
  io.stdout(`Watching ${path.relative(io.cwd, root) || '.'}/ for changes (Ctrl-C stops).`);
  await new Promise<void>((resolve) => {
    watcher.on('close', resolve);
    stop.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  clearTimeout(timer);
  await running;
  process.off('SIGINT', onSignal);
  process.off('SIGTERM', onSignal);
}
