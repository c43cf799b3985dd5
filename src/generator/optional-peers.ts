/**
 * The optional peer dependencies a config's options need, looked up in the project: `check`
 * names each missing one with the command installing it, instead of leaving the user to a
 * TS2307 from `tsc` or a stack at start. A package the app compiles or runs with is a problem;
 * one that only `generate` uses (the reference page's diagrams) is a warning, since the page
 * still works without its drawings.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { MissingPeerDependencyException } from '../runtime/errors.js';
import { resolveStoreUrlSync } from '../runtime/store-url.js';
import type { Issue } from './issues.js';
import type { LoadedConfig } from './load-config.js';

/** What an option needs: the packages, the install command, and whether it is only a warning. */
interface PeerNeed {
  option: string;
  why: string;
  packages: readonly string[];
  install: string;
  warning: boolean;
}

/** The needs of the config's options. */
function needsOf(loaded: LoadedConfig, env: NodeJS.ProcessEnv): PeerNeed[] {
  const { config } = loaded;
  const needs: PeerNeed[] = [];
  if ((config.output?.framework ?? 'fastify') === 'fastify') {
    needs.push({
      option: "output.framework 'fastify'",
      why: 'the generated app is a Fastify app',
      packages: ['fastify'],
      install: 'npm install fastify@^5',
      warning: false,
    });
  } else {
    needs.push(
      {
        option: "output.framework 'express'",
        why: 'the generated app is an Express app',
        packages: ['express'],
        install: 'npm install express@^5',
        warning: false,
      },
      {
        option: "output.framework 'express'",
        why: 'Express ships no type declarations and tsc needs them for the generated app',
        packages: ['@types/express'],
        install: 'npm install -D @types/express',
        warning: false,
      },
    );
  }
  if (config.client?.tanstackQuery === true) {
    needs.push({
      option: 'client.tanstackQuery',
      why: 'query.gen.ts imports it',
      packages: ['@tanstack/query-core'],
      install: 'npm install @tanstack/query-core@^5',
      warning: false,
    });
  }
  // The store the server will open, in the order every command reads it (a bad URL is
  // reported elsewhere; here it needs no driver).
  const store = storeUrlOf(config.store, env);
  if (/^postgres(?:ql)?:/.test(store)) {
    needs.push({
      option: 'a PostgreSQL store',
      why: 'the runtime connects with pg and runs its jobs on pg-boss',
      packages: ['pg', 'pg-boss'],
      install: 'npm install pg@^8 pg-boss@^10',
      warning: false,
    });
  }
  if (config.docs?.enabled === true) {
    needs.push({
      option: 'docs.enabled',
      why: 'generate draws the state diagrams of the reference page with them (in a headless Chromium: MACHINE_ROUTES_CHROMIUM, else /usr/bin/chromium, else npx playwright install chromium); without them the page shows the Mermaid source',
      packages: ['mermaid-isomorphic', 'playwright'],
      install: 'npm install -D mermaid-isomorphic playwright',
      warning: true,
    });
  }
  return needs;
}

/** Whether `name` is installed for code in `directory` (Node's lookup: each `node_modules` up). */
function installed(name: string, directory: string): boolean {
  for (let dir = directory; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'node_modules', name, 'package.json'))) return true;
    if (path.dirname(dir) === dir) return false;
  }
}

/** The optional peers the config's options need and the project lacks. */
export function missingPeers(
  loaded: LoadedConfig,
  env: NodeJS.ProcessEnv = process.env,
): { problems: Issue[]; warnings: Issue[] } {
  const directory = path.dirname(loaded.file);
  const problems: Issue[] = [];
  const warnings: Issue[] = [];
  for (const need of needsOf(loaded, env)) {
    const missing = need.packages.filter((name) => !installed(name, directory));
    if (missing.length === 0) continue;
    const names = missing.map((name) => `'${name}'`).join(' and ');
    const error = new MissingPeerDependencyException(
      `${need.option} needs ${names}, not installed in ${directory}: ${need.why}. Install: ${need.install}`,
      { packages: missing, install: need.install },
    );
    const issue: Issue = {
      name: error.name,
      code: error.code,
      message: error.message,
      details: error.details,
      location: { file: loaded.file, line: 1, column: 1 },
    };
    (need.warning ? warnings : problems).push(issue);
  }
  return { problems, warnings };
}

/** The store URL by `resolveStoreUrlSync`'s order, '' when it is not a valid one. */
function storeUrlOf(store: string | undefined, env: NodeJS.ProcessEnv): string {
  try {
    return resolveStoreUrlSync({ env, config: store }).url;
  } catch {
    return '';
  }
}
