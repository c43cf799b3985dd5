/**
 * `machine-routes check`: every definition-time and registration-time problem, located in the
 * user's source and sorted by file and line. Exit code 1 when there is any.
 */
import type { Command } from 'commander';
import { checkProject } from '../../generator/generate.js';
import { printIssues, relativeIssue, type CliIo } from '../io.js';

interface CheckOptions {
  config?: string;
  format: 'text' | 'json';
}

/** Adds the command; `exit` receives its exit code. */
export function registerCheck(program: Command, io: CliIo, exit: (code: number) => void): void {
  program
    .command('check')
    .description('validate every machine and registration of the config')
    .option('-c, --config <path>', 'config file (default: machine-routes.config.ts)')
    .option('--format <format>', 'output format: text or json', 'text')
    .action(async (options: CheckOptions) => {
      const report = await checkProject({ config: options.config, cwd: io.cwd });
      const routes =
        report.manifest?.registrations.reduce(
          (count, registration) => count + registration.routes.length,
          0,
        ) ?? 0;
      const machines = report.manifest?.machines.length ?? 0;
      if (options.format === 'json') {
        const issues = report.issues.map((issue) => relativeIssue(issue, io.cwd));
        io.stdout(JSON.stringify({ ok: issues.length === 0, machines, routes, issues }, null, 2));
      } else if (report.issues.length > 0) {
        printIssues(io, report.issues);
      } else {
        io.stdout(
          `No problems: ${machines} machine${machines === 1 ? '' : 's'}, ${routes} route${routes === 1 ? '' : 's'}.`,
        );
      }
      exit(report.issues.length > 0 ? 1 : 0);
    });
}
