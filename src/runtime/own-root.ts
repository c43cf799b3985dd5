/**
 * Where this package's own files are: its `src/` directory (run from its TypeScript sources, as
 * in this repository's tests) or its `dist/` directory (built). The build bundles `dist/` into
 * entry files and shared chunks at different depths (scripts/build.js), so a path relative to
 * a module's own `import.meta.url` would depend on where the bundler put that module: paths of
 * the package's own files (templates, the client runtime's source, package.json) start here.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = fileURLToPath(import.meta.url);
// The last `src` or `dist` directory of this file's path: the package's, whatever the parents.
const at = Math.max(here.lastIndexOf(`${sep}src${sep}`), here.lastIndexOf(`${sep}dist${sep}`));

/** The package's `src/` or `dist/` directory, as a URL ending with `/`. */
export const OWN_ROOT = pathToFileURL(here.slice(0, here.indexOf(sep, at + 1) + 1));

/** Whether the package runs from its TypeScript sources (`src/`) rather than built (`dist/`). */
export const FROM_SOURCES = OWN_ROOT.pathname.endsWith('/src/');

/** This package's version (its package.json sits beside `src/` and `dist/`). */
export function packageVersion(): string {
  const manifest = readFileSync(new URL('../package.json', OWN_ROOT), 'utf8');
  return (JSON.parse(manifest) as { version: string }).version;
}

/** The CommonJS packages the build ships in `dist/vendor/` (scripts/vendor.js). */
export type VendoredPackage = 'commander' | 'croner';

/**
 * Loads `name`, a package the published package carries in `dist/vendor/<name>.cjs` instead of
 * depending on it (scripts/vendor.js: the install weight of issue 33); from the sources, the
 * devDependency of that name. Synchronous, so a caller can load it on first use.
 */
export function requireVendored<T>(name: VendoredPackage): T {
  const require = createRequire(import.meta.url);
  return (
    FROM_SOURCES ? require(name) : require(fileURLToPath(new URL(`vendor/${name}.cjs`, OWN_ROOT)))
  ) as T;
}
