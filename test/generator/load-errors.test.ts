/**
 * Configs that cannot be loaded: each is one InvalidConfigFileException located in the user's
 * own file (syntax error, import that does not resolve, throw while importing), and a project
 * on zod 3 is told which zod it has.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkProject } from '../../src/generator/generate.js';

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'machine-routes-load-'));
  writeFileSync(path.join(dir, 'package.json'), '{ "type": "commonjs" }\n');
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

function write(name: string, text: string): void {
  mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
  writeFileSync(path.join(dir, name), text);
}

async function onlyIssue() {
  const report = await checkProject({ cwd: dir });
  expect(report.issues).toHaveLength(1);
  const [issue] = report.issues;
  return {
    code: issue!.code,
    message: issue!.message,
    at: issue!.location && {
      file: path.relative(dir, issue!.location.file),
      line: issue!.location.line,
      column: issue!.location.column,
    },
  };
}

const CONFIG_HEAD = `import { defineConfig } from 'machine-routes';\nimport type { MachineRoutesConfig } from 'machine-routes';\n`;

describe('a config that cannot be loaded', () => {
  it('should locate a syntax error in an imported machine file', async () => {
    write('machines/order.ts', `const limit: number = 3;\nexport const order = { limit: ( };\n`);
    write(
      'machine-routes.config.ts',
      `${CONFIG_HEAD}import { order } from './machines/order.js';\nexport default defineConfig({ registrations: [order] } as unknown as MachineRoutesConfig);\n`,
    );
    expect(await onlyIssue()).toEqual({
      code: 'MR_INVALID_CONFIG_FILE',
      message: expect.stringMatching(
        /^Could not load machine-routes\.config\.ts: .*Unexpected token/,
      ),
      at: { file: 'machines/order.ts', line: 2, column: 33 },
    });
  });

  it('should locate an import that does not resolve at its specifier', async () => {
    write(
      'machine-routes.config.ts',
      `${CONFIG_HEAD}\nimport { order } from './machines/ordr.js';\nexport default defineConfig({ registrations: [order] } as unknown as MachineRoutesConfig);\n`,
    );
    expect(await onlyIssue()).toEqual({
      code: 'MR_INVALID_CONFIG_FILE',
      message: "Could not load machine-routes.config.ts: Cannot find module './machines/ordr.js'",
      at: { file: 'machine-routes.config.ts', line: 4, column: 23 },
    });
  });

  it('should locate a throw while the config imports its machines', async () => {
    write(
      'machines/order.ts',
      `type Limits = { max: number };\nconst limits: Limits = { max: 3 };\nif (limits.max < 10) throw new Error('limits too low');\nexport const order = limits;\n`,
    );
    write(
      'machine-routes.config.ts',
      `${CONFIG_HEAD}import { order } from './machines/order.js';\nexport default defineConfig({ registrations: [order] } as unknown as MachineRoutesConfig);\n`,
    );
    expect(await onlyIssue()).toEqual({
      code: 'MR_INVALID_CONFIG_FILE',
      message: 'Could not load machine-routes.config.ts: limits too low',
      at: { file: 'machines/order.ts', line: 3, column: 28 },
    });
  });

  it('should locate a syntax error in the config file itself', async () => {
    write(
      'machine-routes.config.ts',
      `${CONFIG_HEAD}\nconst registrations = [;\nexport default defineConfig({ registrations } as unknown as MachineRoutesConfig);\n`,
    );
    const issue = await onlyIssue();
    expect(issue.code).toBe('MR_INVALID_CONFIG_FILE');
    expect(issue.at).toEqual({ file: 'machine-routes.config.ts', line: 4, column: 24 });
  });

  it('should locate a throw in the config file itself', async () => {
    write(
      'machine-routes.config.ts',
      `${CONFIG_HEAD}const port: number = Number('x');\nif (Number.isNaN(port)) throw new Error('port is not a number');\nexport default defineConfig({ registrations: [] } as unknown as MachineRoutesConfig);\n`,
    );
    expect(await onlyIssue()).toEqual({
      code: 'MR_INVALID_CONFIG_FILE',
      message: 'Could not load machine-routes.config.ts: port is not a number',
      at: { file: 'machine-routes.config.ts', line: 4, column: 31 },
    });
  });

  it('should locate a package that is not installed at its import', async () => {
    write(
      'machine-routes.config.ts',
      `${CONFIG_HEAD}import { nope } from 'no-such-package-here';\nexport default defineConfig({ registrations: [nope] } as unknown as MachineRoutesConfig);\n`,
    );
    const issue = await onlyIssue();
    expect(issue.message).toMatch(/Cannot find module 'no-such-package-here'/);
    expect(issue.at).toEqual({ file: 'machine-routes.config.ts', line: 3, column: 22 });
  });

  it('should locate errors the same way in an ESM project', async () => {
    write('package.json', '{ "type": "module" }\n');
    write(
      'machines/order.ts',
      `type Limits = { max: number };\nconst limits: Limits = { max: 3 };\nif (limits.max < 10) throw new Error('limits too low');\nexport const order = limits;\n`,
    );
    write(
      'machine-routes.config.ts',
      `${CONFIG_HEAD}import { order } from './machines/order.js';\nexport default defineConfig({ registrations: [order] } as unknown as MachineRoutesConfig);\n`,
    );
    expect((await onlyIssue()).at).toEqual({ file: 'machines/order.ts', line: 3, column: 28 });
    write('machines/order.ts', `export const order = { limit: ( };\n`);
    expect((await onlyIssue()).at).toEqual({ file: 'machines/order.ts', line: 1, column: 33 });
  });

  it('should name the zod version when the project has zod 3', async () => {
    write('node_modules/zod/package.json', '{ "name": "zod", "version": "3.25.76" }\n');
    write(
      'machine-routes.config.ts',
      `${CONFIG_HEAD}export default defineConfig({ registrations: [] } as unknown as MachineRoutesConfig);\n`,
    );
    const issue = await onlyIssue();
    expect(issue.message).toBe(
      `machine-routes needs zod 4, but this project has zod 3.25.76 (${path.join(dir, 'node_modules/zod')}). Run npm install zod@^4.`,
    );
  });
});
