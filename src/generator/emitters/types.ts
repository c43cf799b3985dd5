/**
 * What every emitter shares: its signature and its options. An emitter is a pure function of
 * the manifest; it reads no file and no clock.
 */
import type { Framework } from '../config.js';
import type { GeneratedFile, RouteManifest } from '../manifest.js';

export type { Framework };

/** Options of every emitter, resolved from the config (defaults applied). */
export interface EmitOptions {
  framework: Framework;
  openapi: {
    title: string;
    version: string;
    /** `info.description`; `null`: none. */
    description: string | null;
    /** Description of the `bearerAuth` security scheme; `null`: the default text. */
    bearerAuthDescription: string | null;
    /** `info.license`; absent or `null`: none. */
    license?: { name: string; identifier?: string; url?: string } | null;
    /** `servers` of the document; absent: the origin that serves it (`/`). */
    servers?: { url: string; description?: string }[];
  };
  /** The served API reference (config `docs`); `null` when not enabled. */
  docs?: { prefix: string } | null;
  /** The admin route group (config `admin`); `null` or absent when not enabled. */
  admin?: { prefix: string; middleware: string[] } | null;
  /**
   * Base URL the client defaults to (`null`: callers must pass one); whether the TanStack
   * Query bindings are emitted beside it (absent: no).
   */
  client: { baseUrl: string | null; tanstackQuery?: boolean };
}

/** Turns the manifest into files; never formats (format.ts does) and never writes. */
export type Emitter = (manifest: RouteManifest, options: EmitOptions) => GeneratedFile[];
