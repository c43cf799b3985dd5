/**
 * `machine-routes check` prints the never-succeeds warnings, keeps exit code 0 for them, and
 * fails on them with `--strict`; `--format json` lists them under `warnings`.
 */
import { describe, expect, it } from 'vitest';
import { EXAMPLE_CONFIG } from '../generator/support.js';
import { run } from './run-cli.js';

const STATELESS = 'fixtures/warnings/stateless-never-succeeds.config.ts';

describe('machine-routes check warnings', () => {
  it('should print the warnings and pass without --strict', async () => {
    const result = await run(['check', '--config', STATELESS]);

    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines.map((line) => line.slice(0, 80))).toEqual([
      `warning: ${STATELESS}:8:19 RouteNeverSucceedsException [MR_ROUTE_NEVER_SUCCEEDS] `.slice(
        0,
        80,
      ),
      `warning: ${STATELESS}:8:19 RouteNeverSucceedsException [MR_ROUTE_NEVER_SUCCEEDS] `.slice(
        0,
        80,
      ),
      'No problems: 1 machine, 4 routes; 2 warnings (--strict fails on them).',
    ]);
  });

  it('should fail with --strict, in text and json', async () => {
    const text = await run(['check', '--strict', '--config', STATELESS]);
    expect(text.code).toBe(1);
    expect(text.stdout.split('\n').at(-1)).toBe(
      'No problems: 1 machine, 4 routes; 2 warnings (--strict: failing).',
    );

    const json = await run(['check', '--strict', '--format', 'json', '--config', STATELESS]);
    expect(json.code).toBe(1);
    const body = JSON.parse(json.stdout) as { ok: boolean; issues: unknown[]; warnings: unknown[] };
    expect([body.ok, body.issues]).toEqual([false, []]);
    expect(body.warnings).toEqual([
      expect.objectContaining({
        code: 'MR_ROUTE_NEVER_SUCCEEDS',
        details: expect.objectContaining({ registration: 'order', event: 'APPROVE' }),
        location: { file: STATELESS, line: 8, column: 19 },
      }),
      expect.objectContaining({ code: 'MR_ROUTE_NEVER_SUCCEEDS' }),
    ]);
  });

  it('should pass --strict on a project without warnings', async () => {
    const result = await run(['check', '--strict', '--config', EXAMPLE_CONFIG]);
    expect([result.code, result.stdout]).toEqual([0, 'No problems: 7 machines, 27 routes.']);
  });
});
