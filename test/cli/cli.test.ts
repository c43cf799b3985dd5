import {
  mkdirSync,
  mkdtempSync,
  renameSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  existsSync,
  unlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { run } from './run-cli.js';
import { EXAMPLE_CONFIG, ROOT } from '../generator/support.js';

describe('machine-routes --version', () => {
  it("should print the package's version", async () => {
    const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
    expect(await run(['--version'])).toEqual({ code: 0, stdout: version, stderr: '' });
  });
});

describe('machine-routes init', () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'machine-routes-init-'));
    writeFileSync(
      path.join(dir, 'package.json'),
      '{ "name": "app", "scripts": { "test": "x" } }\n',
    );
  });

  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("should write the README's first machine, its config and scripts that check passes", async () => {
    const init = await run(['init'], dir);
    expect(init.code).toBe(0);
    // Nothing installed yet: the README's install lines, the packages the project lacks.
    expect(init.stdout.split('\n').at(-1)).toBe(
      'Next: npm install machine-routes zod@^4 fastify && npm install -D machine-routes-generator typescript @types/node, then npx machine-routes generate.',
    );
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    for (const file of ['machine-routes.config.ts', 'machines/order.ts']) {
      expect(readme).toContain(`\`\`\`ts\n${readFileSync(path.join(dir, file), 'utf8')}\`\`\``);
    }
    // The README's tsconfig.json, which compiles what init wrote.
    expect(readme).toContain(
      `\`\`\`json\n${readFileSync(path.join(dir, 'tsconfig.json'), 'utf8')}\`\`\``,
    );
    expect(JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')).scripts).toEqual({
      'machines:check': 'machine-routes check',
      'machines:generate': 'machine-routes generate',
      test: 'x',
    });
    // The framework is not installed yet: check names it with its install command.
    const before = await run(['check'], dir);
    expect(before.code).toBe(1);
    expect(before.stdout).toContain("output.framework 'fastify' needs 'fastify', not installed in");
    expect(before.stdout).toContain('Install: npm install fastify@^5');
    mkdirSync(path.join(dir, 'node_modules/fastify'), { recursive: true });
    writeFileSync(path.join(dir, 'node_modules/fastify/package.json'), '{}\n');
    expect(await run(['check'], dir)).toEqual({
      code: 0,
      stdout: 'No problems: 1 machine, 4 routes.',
      stderr: '',
    });
    expect(await run(['init'], dir)).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'Not overwriting machine-routes.config.ts, machines/order.ts: init starts a new project.',
    });
  });
});

describe('machine-routes init in a project with a tsconfig.json of its own', () => {
  it('should keep it and say what it must compile', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'machine-routes-init-'));
    try {
      writeFileSync(path.join(dir, 'tsconfig.json'), '{}\n');
      const init = await run(['init'], dir);
      expect(init.stdout).toContain(
        'kept your tsconfig.json: it must compile machine-routes.config.ts, machines/order.ts and src/',
      );
      expect(readFileSync(path.join(dir, 'tsconfig.json'), 'utf8')).toBe('{}\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('machine-routes init in a project that installed the packages first', () => {
  it('should not ask to install them again', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'machine-routes-init-'));
    try {
      writeFileSync(
        path.join(dir, 'package.json'),
        JSON.stringify({
          dependencies: { 'machine-routes': '^0.1.0', zod: '^4.0.0', express: '^5.0.0' },
          devDependencies: { typescript: '^5.9.0' },
        }),
      );
      const init = await run(['init'], dir);
      expect(init.code).toBe(0);
      expect(init.stdout.split('\n').at(-1)).toBe(
        'Next: npm install -D machine-routes-generator @types/node @types/express, then npx machine-routes generate.',
      );
      // The framework package.json has, written into the config.
      expect(readFileSync(path.join(dir, 'machine-routes.config.ts'), 'utf8')).toContain(
        "output: { dir: 'src/generated', framework: 'express' },",
      );
      expect(existsSync(path.join(dir, 'tsconfig.json'))).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('machine-routes check', () => {
  it('should print a summary and exit 0 for a valid config', async () => {
    expect(await run(['check', '--config', EXAMPLE_CONFIG])).toEqual({
      code: 0,
      stdout: 'No problems: 7 machines, 27 routes.',
      stderr: '',
    });
  });

  it('should print each problem as file:line:col and exit 1', async () => {
    const result = await run(['check', '--config', 'fixtures/invalid/undefined-target.config.ts']);
    expect(result.code).toBe(1);
    expect(result.stdout.split('\n')).toEqual([
      "fixtures/invalid/undefined-target.config.ts:11:29 UndefinedTargetStateException [MR_UNDEFINED_TARGET_STATE] Machine 'order', state 'idle': transition 'SUBMIT' targets 'shipped', which is not a sibling, an ancestor's sibling or a path from the root. Check the spelling or use a dotted path from the root (e.g. 'checkout.payment').",
    ]);
    expect(result.stderr).toBe('1 problem found.');
  });

  it('should print problems as GitHub workflow annotations with --format github', async () => {
    const config = 'fixtures/invalid/undefined-target.config.ts';
    const result = await run(['check', '--format', 'github', '--config', config]);
    expect(result.code).toBe(1);
    // Properties escape ':' and ','; the message keeps its commas.
    expect(result.stdout.split('\n')).toEqual([
      "::error file=fixtures/invalid/undefined-target.config.ts,line=11,col=29,title=UndefinedTargetStateException [MR_UNDEFINED_TARGET_STATE]::Machine 'order', state 'idle': transition 'SUBMIT' targets 'shipped', which is not a sibling, an ancestor's sibling or a path from the root. Check the spelling or use a dotted path from the root (e.g. 'checkout.payment').",
    ]);
    expect(result.stderr).toBe('1 problem found.');
  });

  it('should refuse an unknown --format', async () => {
    const result = await run(['check', '--format', 'xml', '--config', EXAMPLE_CONFIG]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("option '--format <format>' argument 'xml' is invalid");
    expect(result.stderr).toContain('text, json, github');
  });

  it('should print problems as JSON with --format json', async () => {
    const result = await run([
      'check',
      '--format',
      'json',
      '--config',
      'fixtures/invalid/router-only-and-except.config.ts',
    ]);
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toEqual({
      ok: false,
      machines: 0,
      routes: 0,
      issues: [
        {
          name: 'InvalidRouterConfigException',
          code: 'MR_INVALID_ROUTER_CONFIG',
          message:
            "MachineRouter: 'only' and 'except' cannot be used together. Keep one of them. (machine 'order', registration 'order')",
          details: { machine: 'order', registration: 'order', key: 'only' },
          location: {
            file: 'fixtures/invalid/router-only-and-except.config.ts',
            line: 19,
            column: 48,
          },
        },
      ],
    });
  });

  it('should explain a missing config file', async () => {
    const result = await run(['check'], path.join(ROOT, 'fixtures'));
    expect(result.code).toBe(1);
    expect(result.stdout).toBe(
      `machine-routes.config.ts:1:1 InvalidConfigFileException [MR_INVALID_CONFIG_FILE] No machine-routes.config.ts found in ${path.join(ROOT, 'fixtures')}. Create one exporting defineConfig({ ... }), or pass --config <path>.`,
    );
  });

  it('should explain a --config path that does not exist', async () => {
    const result = await run(['check', '--config', 'nope.config.ts']);
    expect(result.stdout).toBe(
      "nope.config.ts:1:1 InvalidConfigFileException [MR_INVALID_CONFIG_FILE] Config file 'nope.config.ts' does not exist. Check the --config path.",
    );
  });
});

describe('machine-routes routes', () => {
  it('should print the route table', async () => {
    const result = await run(['routes', '--config', EXAMPLE_CONFIG]);
    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines[0]).toBe(
      'METHOD  PATH                                    NAME                      HANDLER',
    );
    expect(lines).toContain(
      'POST    /orders/{machineId}/submit              order.submit              machineIdBound',
    );
    expect(lines).toContain(
      'POST    /invoices/{invoice}/pay                 invoice.pay               modelBound',
    );
    expect(lines).toContain(
      'POST    /checkouts/{machineId}/provide-card     checkout.provide_card     forwardedMachineIdBound',
    );
    expect(lines).toContain(
      'GET     /orders/{machineId}/status              order.read.status         read',
    );
    expect(lines).toHaveLength(28);
  });
});

describe('machine-routes generate', () => {
  let dir: string;

  beforeEach(() => {
    // A project outside the repository: the config imports the example by absolute path.
    // Without docs and admin: drawing their diagrams takes a browser (test/cli/diagram-svgs.test.ts draws).
    dir = mkdtempSync(path.join(tmpdir(), 'machine-routes-'));
    writeFileSync(path.join(dir, 'package.json'), '{ "type": "module" }\n');
    writeFileSync(
      path.join(dir, 'machine-routes.config.ts'),
      `import example from ${JSON.stringify(path.join(ROOT, EXAMPLE_CONFIG))};\n` +
        `export default { ...example, docs: undefined, admin: undefined, output: { dir: 'out', framework: 'express' } };\n`,
    );
  });

  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('should report generated-example/ as up to date', async () => {
    expect(await run(['generate', '--check', '--config', EXAMPLE_CONFIG])).toEqual({
      code: 0,
      stdout: 'generated-example/ is up to date (33 files).',
      stderr: '',
    });
  });

  it('should write every file, then list stale, missing and extra files with --check', async () => {
    expect((await run(['generate'], dir)).stdout).toBe(
      'Wrote 24 files to out/ (24 new, 0 changed, 0 removed).',
    );
    expect((await run(['generate', '--check'], dir)).code).toBe(0);

    // Unchanged files are not rewritten (watchers and incremental builds see no change).
    const out = path.join(dir, 'out');
    const written = statSync(path.join(out, 'app.gen.ts')).mtimeMs;
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await run(['generate'], dir)).stdout).toBe('out/ is up to date (24 files).');
    expect(statSync(path.join(out, 'app.gen.ts')).mtimeMs).toBe(written);

    writeFileSync(
      path.join(out, 'client.gen.ts'),
      `${readFileSync(path.join(out, 'client.gen.ts'), 'utf8')}// edited\n`,
    );
    unlinkSync(path.join(out, 'openapi.json'));
    writeFileSync(path.join(out, 'old.routes.gen.ts'), '// left over\n');
    writeFileSync(path.join(out, 'notes.md'), 'not generated\n');
    expect(await run(['generate', '--check'], dir)).toEqual({
      code: 1,
      stdout: [
        'stale:   out/client.gen.ts',
        'missing: out/openapi.json',
        'extra:   out/old.routes.gen.ts',
      ].join('\n'),
      stderr: 'out/ is out of date: run machine-routes generate.',
    });

    expect((await run(['generate'], dir)).stdout).toBe(
      'Wrote 24 files to out/ (1 new, 1 changed, 1 removed).',
    );
    expect(existsSync(path.join(out, 'old.routes.gen.ts'))).toBe(false);
    expect(readFileSync(path.join(out, 'notes.md'), 'utf8')).toBe('not generated\n');
    expect((await run(['generate', '--check'], dir)).code).toBe(0);
  });
});

describe('machine-routes generate --watch', () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'machine-routes-watch-'));
    writeFileSync(path.join(dir, 'package.json'), '{ "type": "module" }\n');
  });

  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  // Without docs and admin, as above: drawing the diagrams takes a browser.
  const config = (framework: string) =>
    `import example from ${JSON.stringify(path.join(ROOT, EXAMPLE_CONFIG))};\n` +
    `export default { ...example, docs: undefined, admin: undefined, output: { dir: 'out', framework: '${framework}' } };\n`;

  it('should generate, then generate again when a source changes, until stopped', async () => {
    writeFileSync(path.join(dir, 'machine-routes.config.ts'), config('express'));
    const stdout: string[] = [];
    const stop = new AbortController();
    const running = runCli(['generate', '--watch'], {
      cwd: dir,
      stdout: (text) => stdout.push(text),
      stderr: (text) => stdout.push(text),
      signal: stop.signal,
    });
    const printed = async (text: string) => {
      for (let i = 0; i < 500 && !stdout.some((line) => line.includes(text)); i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(stdout.join('\n')).toContain(text);
    };
    await printed('Watching ./ for changes');
    expect(stdout[0]).toBe('Wrote 24 files to out/ (24 new, 0 changed, 0 removed).');

    writeFileSync(path.join(dir, 'machine-routes.config.ts'), config('fastify'));
    await printed('machine-routes.config.ts changed: generating.');
    // app.gen.ts and server.gen.ts import the framework's entry point.
    await printed('Wrote 24 files to out/ (0 new, 2 changed, 0 removed).');
    expect(readFileSync(path.join(dir, 'out/app.gen.ts'), 'utf8')).toContain(
      "from 'machine-routes/fastify'",
    );
    stop.abort();
    expect(await running).toBe(0);
  }, 60_000);

  // Editors that save atomically (vim, JetBrains IDEs, `sed -i`) write a temporary file and
  // rename it over the original. Node's recursive fs.watch on Linux watches each file, and the
  // replaced file lost its watcher: the first such save was seen, every later one was not.
  it('should generate again on every save that renames a new file over the source', async () => {
    const configFile = path.join(dir, 'machine-routes.config.ts');
    mkdirSync(path.join(dir, 'machines'));
    const machineFile = path.join(dir, 'machines/extra.ts');
    const saveByRename = (file: string, text: string) => {
      writeFileSync(`${file}.tmp`, text);
      renameSync(`${file}.tmp`, file);
    };
    writeFileSync(configFile, config('express'));
    writeFileSync(machineFile, 'export const version = 0;\n');
    const stdout: string[] = [];
    const stop = new AbortController();
    const running = runCli(['generate', '--watch'], {
      cwd: dir,
      stdout: (text) => stdout.push(text),
      stderr: (text) => stdout.push(text),
      signal: stop.signal,
    });
    const printedTimes = async (text: string, times: number) => {
      const count = () => stdout.filter((line) => line.includes(text)).length;
      for (let i = 0; i < 200 && count() < times; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(count(), `'${text}' in:\n${stdout.join('\n')}`).toBe(times);
    };
    await printedTimes('Watching ./ for changes', 1);
    const frameworks = ['fastify', 'express', 'fastify'];
    for (const [index, framework] of frameworks.entries()) {
      saveByRename(configFile, config(framework));
      await printedTimes('machine-routes.config.ts changed: generating.', index + 1);
      await printedTimes('(0 new, 2 changed, 0 removed)', index + 1);
    }
    for (const version of [1, 2]) {
      saveByRename(machineFile, `export const version = ${version};\n`);
      await printedTimes('machines/extra.ts changed: generating.', version);
    }
    stop.abort();
    expect(await running).toBe(0);
  }, 60_000);

  it('should refuse --watch with --check', async () => {
    expect(await run(['generate', '--watch', '--check'], dir)).toEqual({
      code: 1,
      stdout: '',
      stderr: '--check and --watch cannot be used together.',
    });
  });
});
