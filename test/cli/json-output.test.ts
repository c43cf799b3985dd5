/**
 * The JSON formats of `routes` and `check`, as tools read them.
 */
import { describe, expect, it } from 'vitest';
import { EXAMPLE_CONFIG } from '../generator/support.js';
import { run } from './run-cli.js';

describe('machine-routes routes --format json', () => {
  it('should give the rows of the text table, each with its registration', async () => {
    const text = await run(['routes', '--config', EXAMPLE_CONFIG]);
    const json = await run(['routes', '--config', EXAMPLE_CONFIG, '--format', 'json']);
    expect(json.code).toBe(0);
    const { routes } = JSON.parse(json.stdout) as {
      routes: {
        registration: string;
        method: string;
        path: string;
        name: string;
        handler: string;
      }[];
    };
    const rows = text.stdout
      .split('\n')
      .slice(1)
      .map((line) => line.split(/ {2,}/));
    expect(routes.map(({ method, path, name, handler }) => [method, path, name, handler])).toEqual(
      rows,
    );
    expect(new Set(routes.map((route) => route.registration)).size).toBeGreaterThan(1);
  });
});

describe('machine-routes check --format json', () => {
  it('should give each issue one location, relative to the working directory', async () => {
    const config = 'fixtures/invalid/undefined-target.config.ts';
    const result = await run(['check', '--format', 'json', '--config', config]);
    expect(result.code).toBe(1);
    const { issues } = JSON.parse(result.stdout) as { issues: object[] };
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({ location: { file: config, line: 11, column: 29 } });
    expect(JSON.stringify(issues[0]).match(/"location"/g)).toHaveLength(1);
  });
});
