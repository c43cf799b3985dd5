/**
 * `machine-routes generate`: renders every output file and writes it, or with `--check`
 * compares it with what is on disk and lists stale, missing and extra files.
 */
import path from 'node:path';
import type { Command } from 'commander';
import { checkProject, emitOptionsOf, outputDirOf, renderFiles } from '../../generator/generate.js';
import { diffOutput, writeOutput } from '../../generator/write-files.js';
import { printIssues, type CliIo } from '../io.js';

interface GenerateOptions {
  config?: string;
  check?: boolean;
}

/** Adds the command; `exit` receives its exit code. */
export function registerGenerate(program: Command, io: CliIo, exit: (code: number) => void): void {
  program
    .command('generate')
    .description('emit route handlers, openapi.json and the typed client')
    .option('-c, --config <path>', 'config file (default: machine-routes.config.ts)')
    .option('--check', 'compare with the files on disk instead of writing; exit 1 when they differ')
    .action(async (options: GenerateOptions) => {
      const report = await checkProject({ config: options.config, cwd: io.cwd });
      if (report.manifest === null || report.loaded === null) {
        printIssues(io, report.issues);
        return exit(1);
      }
      const dir = outputDirOf(report.loaded);
      const files = await renderFiles(
        report.manifest,
        emitOptionsOf(report.loaded),
        report.loaded.config.output?.kinds,
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
          return exit(0);
        }
        lines.forEach((line) => io.stdout(line));
        io.stderr(`${shown}/ is out of date: run machine-routes generate.`);
        return exit(1);
      }
      const diff = writeOutput(dir, files);
      if (diff.missing.length + diff.stale.length + diff.extra.length === 0) {
        io.stdout(`${shown}/ is up to date (${files.length} files).`);
        return exit(0);
      }
      io.stdout(
        `Wrote ${files.length} files to ${shown}/ (${diff.missing.length} new, ${diff.stale.length} changed, ${diff.extra.length} removed).`,
      );
      exit(0);
    });
}
