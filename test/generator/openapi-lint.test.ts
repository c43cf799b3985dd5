/**
 * The generated document is accepted by the tools a frontend team points at it: `redocly lint`
 * with its recommended rules (the real CLI, in a child process) and @apidevtools/swagger-parser.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import SwaggerParser from '@apidevtools/swagger-parser';
import { describe, expect, it } from 'vitest';
import { ROOT } from './support.js';

const DOCUMENT = path.join(ROOT, 'generated-example/openapi.json');
const REDOCLY = path.join(ROOT, 'node_modules/.bin/redocly');

interface LintProblem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
}

async function redoclyLint(
  file: string,
): Promise<{ totals: { errors: number; warnings: number }; problems: LintProblem[] }> {
  // Exit code 1 means problems were found: the JSON report on stdout says which.
  const run = promisify(execFile);
  const output = await run(
    REDOCLY,
    ['lint', '--extends', 'recommended', '--format', 'json', file],
    {
      cwd: ROOT,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    },
  ).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
  return JSON.parse(output.stdout) as Awaited<ReturnType<typeof redoclyLint>>;
}

describe('the example openapi.json and documentation tools', () => {
  it('should pass redocly lint (recommended) with no errors', async () => {
    const report = await redoclyLint(DOCUMENT);
    expect(report.problems.filter((problem) => problem.severity === 'error')).toEqual([]);
    expect(report.totals.errors).toBe(0);
    // The one warning left: a GET route's payload component is read by the typed client while
    // the document lists its fields as query parameters.
    expect(report.problems.map((problem) => `${problem.ruleId}: ${problem.message}`)).toEqual([
      'no-unused-components: Component: "OrderQuotePayload" is never used.',
    ]);
  }, 60_000);

  it('should be valid for @apidevtools/swagger-parser', async () => {
    const api = await SwaggerParser.validate(DOCUMENT);
    expect(api.info.title).toBe('machine-routes example');
    expect('openapi' in api && api.openapi).toBe('3.1.0');
  });

  it('should state its servers and an explicit root security decision', async () => {
    const document = (await SwaggerParser.parse(DOCUMENT)) as unknown as Record<string, unknown>;
    expect(document['servers']).toEqual([
      { url: '/', description: 'The server that serves this document' },
    ]);
    expect(document['security']).toEqual([]);
  });
});
