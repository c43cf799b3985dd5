/**
 * `machine-routes routes`: the route table (method, path, name, handler) of every registration;
 * `--format json` gives the same rows, with their registration, to tools.
 */
import { Option, type Command } from '../commander.js';
import { checkProject } from '../../generator/generate.js';
import { printIssues, type CliIo } from '../io.js';

const FORMATS = ['text', 'json'] as const;

/** Adds the command; `exit` receives its exit code. */
export function registerRoutes(program: Command, io: CliIo, exit: (code: number) => void): void {
  program
    .command('routes')
    .description('print the route table')
    .option('-c, --config <path>', 'config file (default: machine-routes.config.ts)')
    .addOption(
      new Option('--format <format>', 'output: text, or json for tools')
        .choices(FORMATS)
        .default('text'),
    )
    .action(async (options: { config?: string; format: (typeof FORMATS)[number] }) => {
      const report = await checkProject({ config: options.config, cwd: io.cwd });
      if (report.manifest === null) {
        printIssues(io, report.issues);
        return exit(1);
      }
      if (options.format === 'json') {
        const routes = report.manifest.registrations.flatMap((registration) =>
          registration.routes.map(({ method, path, name, handler }) => ({
            registration: registration.name,
            method,
            path,
            name,
            handler,
          })),
        );
        io.stdout(JSON.stringify({ routes }, null, 2));
        return exit(0);
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
