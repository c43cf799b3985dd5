/**
 * Shared paths of the generator and CLI suites.
 */
import { fileURLToPath } from 'node:url';

/** The repository root: configs are loaded relative to it, as the CLI does from `cwd`. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The example application's config (its output is generated-example/). */
export const EXAMPLE_CONFIG = 'fixtures/example/machine-routes.config.ts';
