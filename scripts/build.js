// Build step (`npm run build`): dist/ as the package ships it.
//
// tsc writes the declarations (one .d.ts per module, the `types` of every export), esbuild the
// JavaScript: the package's entry points (its `exports`, the CLI) bundled at once with code
// splitting, so what several entries share is one chunk, loaded once. A server used to load the
// runtime as about 140 ES modules; Node's loader pays for each (resolution, a file read, a
// compile), tsx more (its loader thread sees every one). One build of every entry keeps one copy
// of each module: the CLI, the generator and a config's `machine-routes/*` imports share its
// classes (`instanceof` on errors). Paths to the package's own files start at
// runtime/own-root.ts, not at a module's place, which the bundler chooses.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = path.join(ROOT, 'dist');

/** The entry points: `exports` of package.json, the CLI, and the modules holding an `import()`. */
const ENTRIES = [
  'src/index.ts',
  'src/config.ts',
  'src/runtime/index.ts',
  'src/fastify.ts',
  'src/express.ts',
  'src/postgres.ts',
  'src/client/runtime.ts',
  'src/testing/index.ts',
  'src/cli/main.ts',
  // tsx rewrites a module holding a dynamic import (and maps it word by word): as entries of
  // their own these stay out of the runtime's large chunk, which tsx then leaves alone.
  'src/runtime/persistence/load-postgres-store.ts',
  'src/runtime/jobs/load-pg-boss-queue.ts',
];

/**
 * Packages bundled into dist/ instead of installed beside it (scripts/vendor.js says why): ES
 * modules only; the CommonJS ones are copied to dist/vendor/ by scripts/vendor.js.
 */
const BUNDLED = new Set(['change-case']);

/** Every bare import but BUNDLED stays an import (esbuild's `packages: 'external'` otherwise). */
const externalPackages = {
  name: 'external-packages',
  setup(builder) {
    builder.onResolve({ filter: /^[^./]/ }, (args) => {
      const parts = args.path.split('/');
      const name = args.path.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
      return BUNDLED.has(name) ? undefined : { path: args.path, external: true };
    });
  },
};

/** The JavaScript files under `dir`. */
function javaScriptFiles(dir) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return javaScriptFiles(full);
    return entry.name.endsWith('.js') ? [full] : [];
  });
}

/**
 * Writes the build's files over dist/, each replaced at once (written beside, then renamed), new
 * chunks before the entries that import them, then removes the JavaScript of earlier builds:
 * a process loading dist/ meanwhile (another test run) never finds an entry missing.
 */
function install(outputFiles) {
  const chunk = (file) => file.path.includes(`${path.sep}chunks${path.sep}`);
  for (const file of [...outputFiles.filter(chunk), ...outputFiles.filter((f) => !chunk(f))]) {
    mkdirSync(path.dirname(file.path), { recursive: true });
    const temporary = `${file.path}.${process.pid}.tmp`;
    writeFileSync(temporary, file.contents);
    renameSync(temporary, file.path);
  }
  const written = new Set(outputFiles.map((file) => file.path));
  for (const file of javaScriptFiles(DIST)) if (!written.has(file)) rmSync(file);
}

/** The entries a server loads together, tied to the runtime's modules (see oneServerChunk). */
const TIED_ENTRIES = new Set(
  [
    'src/index.ts',
    'src/config.ts',
    'src/fastify.ts',
    'src/express.ts',
    'src/postgres.ts',
    'src/testing/index.ts',
    'src/cli/main.ts',
  ].map((entry) => path.join(ROOT, entry)),
);

/**
 * Code splitting makes one chunk per set of entries reaching a module: with eleven entries the
 * runtime came out as 30-odd files, and a server loaded 32 of them (each ES module costs Node's
 * loader about 1.8 M instructions to resolve, read, compile and link, whatever its size). Each
 * server-side entry imports the runtime's entry as well (for the bundle only: the sources stay
 * as they are), so every module the runtime reaches has the same set of entries and lands in
 * one chunk. The client entry (browsers) and the loaders' entries (their `import()` stays out
 * of the large chunk, see ENTRIES) stay apart.
 */
const oneServerChunk = {
  name: 'one-server-chunk',
  setup(builder) {
    builder.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (!TIED_ENTRIES.has(args.path)) return undefined;
      const { readFile } = await import('node:fs/promises');
      const source = await readFile(args.path, 'utf8');
      const runtime = path.relative(
        path.dirname(args.path),
        path.join(ROOT, 'src/runtime/index.ts'),
      );
      return { contents: `import './${runtime.replace(/\\/g, '/')}';\n${source}`, loader: 'ts' };
    });
  },
};

execFileSync(
  process.execPath,
  [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
  { cwd: ROOT, stdio: 'inherit' },
);
const { outputFiles } = await build({
  absWorkingDir: ROOT,
  entryPoints: ENTRIES,
  outdir: DIST,
  outbase: 'src',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Dependencies stay imports: the application's own copies (zod, fastify) must be the ones used.
  // BUNDLED are the exception.
  plugins: [oneServerChunk, externalPackages],
  chunkNames: 'chunks/[name]-[hash]',
  // Class and function names are part of the API (error names, `constructor.name`).
  keepNames: true,
  logLevel: 'warning',
  write: false,
});
// The vendored packages before the entries that load them (see install).
execFileSync(process.execPath, [path.join(ROOT, 'scripts/vendor.js')], {
  cwd: ROOT,
  stdio: 'inherit',
});
install(outputFiles);
execFileSync(process.execPath, [path.join(ROOT, 'scripts/copy-client-runtime.js')], {
  cwd: ROOT,
  stdio: 'inherit',
});
execFileSync(process.execPath, [path.join(ROOT, 'scripts/copy-redoc.js')], {
  cwd: ROOT,
  stdio: 'inherit',
});
