/**
 * `machine-routes routes`: the route table (method, path, name, handler) of every registration.
 */
import type { Command } from 'commander';
import { checkProject } from '../../generator/generate.js';
import { printIssues, type CliIo } from '../io.js';

/** Adds the command; `exit` receives its exit code. */
export function registerRoutes(program: Command, io: CliIo, exit: (code: number) => void): void {
  program
    .command('routes')
    .description('print the route table')
    .option('-c, --config <path>', 'config file (default: machine-routes.config.ts)')
    .action(async (options: { config?: string }) => {
      const report = await checkProject({ config: options.config, cwd: io.cwd });
      if (report.manifest === null) {
        printIssues(io, report.issues);
        return exit(1);
      }
      const rows = [
        ['METHOD', 'PATH', 'NAME', 'HANDLER'],
        ...report.manifest.registrations.flatMap((registration) =>
          registration.routes.map((route) => [route.method, route.path, route.name, route.handler]),
        ),
      ];
      const widths = rows[0]!.map((_, column) =>
        Math.max(...rows.map((row) => row[column]!.length)),
      );
      for (const row of rows) {
        io.stdout(
          row
            .map((cell, column) =>
              column === row.length - 1 ? cell : cell.padEnd(widths[column]!),
            )
            .join('  '),
        );
      }
      exit(0);
    });
}
