/**
 * `machine-routes check`: every definition-time and registration-time problem, located in the
 * user's source and sorted by file and line. Exit code 1 when there is any.
 */
import { Option, type Command } from 'commander';
import { checkProject } from '../../generator/generate.js';
import type { Issue } from '../../generator/issues.js';
import { printIssues, printProblemCount, relativeIssue, type CliIo } from '../io.js';

interface CheckOptions {
  config?: string;
  format: (typeof FORMATS)[number];
}

const FORMATS = ['text', 'json', 'github'] as const;

/** Adds the command; `exit` receives its exit code. */
export function registerCheck(program: Command, io: CliIo, exit: (code: number) => void): void {
  program
    .command('check')
    .description('validate every machine and registration of the config')
    .option('-c, --config <path>', 'config file (default: machine-routes.config.ts)')
    .addOption(
      new Option('--format <format>', 'output: text, json, or github (workflow annotations)')
        .choices(FORMATS)
        .default('text'),
    )
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
      } else if (options.format === 'github') {
        for (const issue of report.issues)
          io.stdout(githubAnnotation(relativeIssue(issue, io.cwd)));
        if (report.issues.length > 0) printProblemCount(io, report.issues.length);
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

/**
 * A GitHub Actions workflow command that annotates the issue's file and line in a pull request:
 * `::error file=f,line=l,col=c,title=Name [code]::message`. Data and property values are
 * escaped as the runner expects.
 */
export function githubAnnotation(issue: Issue): string {
  const data = (text: string) =>
    text.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
  const property = (text: string) => data(text).replace(/:/g, '%3A').replace(/,/g, '%2C');
  const place =
    issue.location === null
      ? []
      : [
          `file=${property(issue.location.file)}`,
          `line=${issue.location.line}`,
          `col=${issue.location.column}`,
        ];
  const properties = [...place, `title=${property(`${issue.name} [${issue.code}]`)}`];
  return `::error ${properties.join(',')}::${data(issue.message)}`;
}
