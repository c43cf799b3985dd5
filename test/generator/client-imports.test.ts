import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { importGraph } from './import-graph.js';
import { ROOT } from './support.js';

const SERVER_CODE = [
  /\/runtime\/persistence\//,
  /\/runtime\/jobs\//,
  /\/runtime\/engine\//,
  /\/runtime\/http\//,
  /^fastify/,
  /^express/,
  /^pg$/,
  /^better-sqlite3$/,
];

/** The build-time tool's dependencies: a generated server must start without them. */
const BUILD_TOOLS = [/^handlebars/, /^prettier/, /^ts-morph/, /^jiti/, /^typescript/];

const matching = (graph: string[], patterns: RegExp[]): string[] =>
  graph.filter((file) => patterns.some((pattern) => pattern.test(file)));

describe('emitClient', () => {
  it('should emit a client whose import graph holds no server code', () => {
    const graph = importGraph(path.join(ROOT, 'generated-example/client.gen.ts'), {
      dynamic: true,
    });
    expect(graph.map((file) => path.relative(ROOT, file))).toEqual([
      'generated-example/client.gen.ts',
      'generated-example/client-runtime.gen.ts',
      'generated-example/client-runtime-types.gen.ts',
    ]);
    expect(matching(graph, SERVER_CODE)).toEqual([]);
  });

  it('should emit TanStack bindings that load only the client (query-core types are erased)', () => {
    const graph = importGraph(path.join(ROOT, 'generated-example/query.gen.ts'), {
      dynamic: true,
    });
    expect(graph.map((file) => path.relative(ROOT, file))).toEqual([
      'generated-example/query.gen.ts',
      'generated-example/query-runtime.gen.ts',
      'generated-example/client-runtime.gen.ts',
      'generated-example/client-runtime-types.gen.ts',
    ]);
    expect(matching(graph, [...SERVER_CODE, /tanstack/])).toEqual([]);
  });

  it('should flag server code when the graph reaches it', () => {
    const graph = importGraph(path.join(ROOT, 'generated-example/app.gen.ts'), { dynamic: true });
    expect(matching(graph, SERVER_CODE)).not.toEqual([]);
  });
});

describe('emitHandlers', () => {
  it('should emit a server whose import graph loads no build tool', () => {
    const graph = importGraph(path.join(ROOT, 'generated-example/server.gen.ts'), {
      dynamic: false,
    });
    expect(graph).toContain(path.join(ROOT, 'fixtures/example/machine-routes.config.ts'));
    expect(matching(graph, BUILD_TOOLS)).toEqual([]);
  });

  it('should emit a server that loads no generator module: its config imports machine-routes/config', () => {
    const graph = importGraph(path.join(ROOT, 'generated-example/server.gen.ts'), {
      dynamic: false,
    });
    // The package root would load the manifest builder and its analyses into every server.
    expect(graph).not.toContain(path.join(ROOT, 'src/index.ts'));
    expect(graph).toContain(path.join(ROOT, 'src/config.ts'));
    const generator = graph
      .filter((file) => file.startsWith(path.join(ROOT, 'src/generator/')))
      .map((file) => path.relative(ROOT, file))
      .sort();
    // config.ts (defineConfig) and models.ts (resolveModelBinders), which import only runtime.
    expect(generator).toEqual(['src/generator/config.ts', 'src/generator/models.ts']);
  });

  it('should flag a generator module when the graph reaches the package root', () => {
    const graph = importGraph(path.join(ROOT, 'src/index.ts'), { dynamic: false });
    expect(graph).toContain(path.join(ROOT, 'src/generator/build-manifest.ts'));
  });

  it('should emit a Fastify server that loads neither Express nor the PostgreSQL drivers', () => {
    // The example is Fastify: express is only behind machine-routes/express, and pg/pg-boss
    // only behind the dynamic imports a postgres:// URL takes.
    const others = [/^express$/, /^pg$/, /^pg-boss$/];
    const server = path.join(ROOT, 'generated-example/server.gen.ts');
    expect(matching(importGraph(server, { dynamic: false }), others)).toEqual([]);
    expect(matching(importGraph(server, { dynamic: true }), others)).toEqual(
      expect.arrayContaining(['pg', 'pg-boss']),
    );
  });

  it('should flag a build tool when the graph reaches one', () => {
    // The package root loads the generator lazily: on first call, not on import.
    const root = path.join(ROOT, 'src/index.ts');
    expect(matching(importGraph(root, { dynamic: true }), BUILD_TOOLS)).toEqual(
      expect.arrayContaining(['jiti', 'handlebars']),
    );
    expect(matching(importGraph(root, { dynamic: false }), BUILD_TOOLS)).toEqual([]);
  });
});
