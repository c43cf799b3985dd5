/**
 * Finds where a build-time problem sits in the user's source with ts-morph: the property of a
 * registration in the config file, or the key of a machine definition (following the state
 * path of `details.path` down `config.states`).
 *
 * Only syntax is read (no type checker), so locating stays fast; when a key cannot be found the
 * closest enclosing place is returned (the state, the defineMachine call, the registration).
 */
import type { CallExpression, Node, ObjectLiteralExpression, SourceFile } from 'ts-morph';
import { fileURLToPath } from 'node:url';
import type { MachineRoutesError, SourceLocation } from '../runtime/errors.js';
import { loadGeneratorDependency } from './dependencies.js';
import type { Issue } from './issues.js';

// ts-morph, a generator dependency (dependencies.ts), set by `createSourceLocator`: the only
// way to a `SourceLocator`, so every function below runs after it.
let morph: typeof import('ts-morph');

/** Locates the problems of one `check` run. */
export interface IssueLocator {
  /** The issue with the most precise location found: the offending key, else its enclosing place. */
  locate(error: MachineRoutesError): Issue;
}

/** A locator for `context`, once ts-morph is loaded. */
export async function createSourceLocator(context: LocateContext): Promise<IssueLocator> {
  morph ??= await loadGeneratorDependency('ts-morph');
  return new SourceLocator(context);
}

/** What locating needs to know about the config. */
export interface LocateContext {
  /** Absolute path of the config file. */
  configFile: string;
  /** Registration index by registration name. */
  registrationIndex: ReadonlyMap<string, number>;
  /** Where each machine (by definition id) was defined, when known. */
  machineSources: ReadonlyMap<string, SourceLocation>;
}

/** Parses source files once per `check` run. */
class SourceLocator implements IssueLocator {
  private readonly project = new morph.Project({
    useInMemoryFileSystem: false,
    skipAddingFilesFromTsConfig: true,
    skipFileDependencyResolution: true,
    compilerOptions: { allowJs: true },
  });

  constructor(private readonly context: LocateContext) {}

  /** The issue with the most precise location found: the offending key, else its enclosing place. */
  locate(error: MachineRoutesError): Issue {
    const details = error.details ?? {};
    const location =
      this.find(details) ?? (details.location && normalize(details.location)) ?? null;
    return { name: error.name, code: error.code, message: error.message, details, location };
  }

  private find(details: MachineRoutesError['details']): SourceLocation | undefined {
    // A key of the config itself (`config`, `config.output`) or of a timers entry of the config
    // (`config.timers[0].schedules[1]`, which names its machine too): searched in the config file.
    const path = details.path ?? '';
    if (
      (details.machine === undefined && /^config(\.|$)/.test(path)) ||
      path.startsWith('config.timers[')
    ) {
      const file = this.sourceFile(this.context.configFile);
      if (file !== undefined && details.key !== undefined) {
        const scope = configScope(file, details.path as string);
        return (scope && findKey(scope, details.key)) ?? findKey(file, details.key);
      }
    }
    if (typeof details.registration === 'string') {
      const found = this.findInRegistration(details.registration, details.key);
      if (found !== undefined) return found;
    }
    if (typeof details.machine === 'string') {
      const scenario = /^scenarios\.(.+)$/.exec(details.path ?? '');
      const file = details.location && this.sourceFile(normalize(details.location).file);
      if (scenario !== null && file !== undefined) {
        const found = findScenario(file, scenario[1] as string, details.key);
        if (found !== undefined) return found;
      }
      // Definition problems carry the defineMachine call site; the key is searched from there.
      const known = details.location ?? this.context.machineSources.get(details.machine);
      const source = known && normalize(known);
      if (source !== undefined)
        return this.findInMachine(source, details.machine, details.path, details.key) ?? source;
    }
    return undefined;
  }

  private sourceFile(file: string): SourceFile | undefined {
    try {
      return this.project.getSourceFile(file) ?? this.project.addSourceFileAtPath(file);
    } catch {
      return undefined;
    }
  }

  private findInRegistration(name: string, key: string | undefined): SourceLocation | undefined {
    const index = this.context.registrationIndex.get(name);
    const file = this.sourceFile(this.context.configFile);
    if (index === undefined || file === undefined) return undefined;
    const registrations = file
      .getDescendantsOfKind(morph.SyntaxKind.PropertyAssignment)
      .find((property) => property.getName() === 'registrations')
      ?.getInitializer();
    if (registrations === undefined || !morph.Node.isArrayLiteralExpression(registrations))
      return undefined;
    const element = registrations.getElements()[index];
    if (element === undefined) return at(registrations);
    if (key !== undefined && morph.Node.isObjectLiteralExpression(element)) {
      const property = element.getProperty(key);
      if (property !== undefined) return at(property);
    }
    // The key may be a value instead (an unknown middleware name): search the registration.
    return (key !== undefined ? findKey(element, key) : undefined) ?? at(element);
  }

  private findInMachine(
    source: SourceLocation,
    machineId: string,
    statePath: string | undefined,
    key: string | undefined,
  ): SourceLocation | undefined {
    const file = this.sourceFile(source.file);
    const definition = file && machineArgument(file, source.line, machineId);
    if (definition === undefined) return undefined;
    const scope = scopeOf(definition, statePath);
    return key === undefined
      ? at(scope)
      : (findKey(scope, key) ?? findKey(definition, key) ?? at(scope));
  }
}

/**
 * The object passed to the `defineMachine` call of `machineId`: the call on `line`, else the
 * call whose `config.id` is the machine id (a stack line can be off when source maps are not
 * applied, e.g. under a test runner's own stack formatting).
 */
function machineArgument(
  file: SourceFile,
  line: number,
  machineId: string,
): ObjectLiteralExpression | undefined {
  const candidates = file
    .getDescendantsOfKind(morph.SyntaxKind.CallExpression)
    .map((call) => ({ call, argument: call.getArguments()[0] }))
    .map(({ call, argument }) => ({ call, definition: argument && resolveObject(argument) }))
    .filter(
      (candidate): candidate is { call: CallExpression; definition: ObjectLiteralExpression } =>
        candidate.definition !== undefined,
    );
  const onLine = candidates.find(
    ({ call }) => file.getLineAndColumnAtPos(call.getStart()).line === line,
  );
  const byId = candidates.find(({ definition }) => {
    const config = objectProperty(definition, 'config');
    const id = config?.getProperty('id');
    const value =
      id !== undefined && morph.Node.isPropertyAssignment(id) ? id.getInitializer() : undefined;
    return (
      value !== undefined &&
      morph.Node.isStringLiteral(value) &&
      value.getLiteralValue() === machineId
    );
  });
  return (onLine ?? byId)?.definition;
}

/**
 * The node of `defineMachine`'s argument a problem's `path` names: `endpoints[2]` (or
 * `endpoints`) is an entry of the endpoint list, anything else a dotted state path under
 * `config.states`. The deepest node found is returned.
 */
function scopeOf(definition: ObjectLiteralExpression, statePath: string | undefined): Node {
  const endpoint = /^endpoints(?:\[(\d+)\])?/.exec(statePath ?? '');
  if (endpoint !== null) {
    const list = definition.getProperty('endpoints');
    const initializer =
      list !== undefined && morph.Node.isPropertyAssignment(list)
        ? list.getInitializer()
        : undefined;
    if (initializer === undefined || !morph.Node.isArrayLiteralExpression(initializer))
      return definition;
    return (
      (endpoint[1] === undefined ? undefined : initializer.getElements()[Number(endpoint[1])]) ??
      initializer
    );
  }
  let scope: Node = definition;
  let state: ObjectLiteralExpression | undefined = objectProperty(definition, 'config');
  if (state === undefined || statePath === undefined || statePath === '')
    return state ?? definition;
  scope = state;
  for (const segment of statePath.split('.')) {
    const states: ObjectLiteralExpression | undefined = objectProperty(state, 'states');
    state = states && objectProperty(states, segment);
    if (state === undefined) break;
    scope = state;
  }
  return scope;
}

/**
 * A scenario problem: the key inside the object literal whose `slug` is `slug` (a
 * `defineScenario` argument or an entry of `scenarios`), else that object.
 */
function findScenario(
  file: SourceFile,
  slug: string,
  key: string | undefined,
): SourceLocation | undefined {
  const object = file
    .getDescendantsOfKind(morph.SyntaxKind.ObjectLiteralExpression)
    .find((candidate) => {
      const property = candidate.getProperty('slug');
      const value =
        property !== undefined && morph.Node.isPropertyAssignment(property)
          ? property.getInitializer()
          : undefined;
      return (
        value !== undefined && morph.Node.isStringLiteral(value) && value.getLiteralValue() === slug
      );
    });
  if (object === undefined) return undefined;
  return (key === undefined ? undefined : findKey(object, key)) ?? at(object);
}

/** The object literal `node` is, or names (an identifier declared in the same file). */
function resolveObject(node: Node): ObjectLiteralExpression | undefined {
  if (morph.Node.isObjectLiteralExpression(node)) return node;
  if (morph.Node.isIdentifier(node)) {
    const declaration = node.getSourceFile().getVariableDeclaration(node.getText());
    const initializer = declaration?.getInitializer();
    return initializer && resolveObject(initializer);
  }
  if (
    morph.Node.isAsExpression(node) ||
    morph.Node.isSatisfiesExpression(node) ||
    morph.Node.isParenthesizedExpression(node)
  ) {
    return resolveObject(node.getExpression());
  }
  return undefined;
}

function objectProperty(
  object: ObjectLiteralExpression,
  name: string,
): ObjectLiteralExpression | undefined {
  const property =
    object.getProperty(name) ?? object.getProperty(`'${name}'`) ?? object.getProperty(`"${name}"`);
  if (property === undefined || !morph.Node.isPropertyAssignment(property)) return undefined;
  const initializer = property.getInitializer();
  return initializer && resolveObject(initializer);
}

/** The first property named `key`, or string literal / identifier reading `key`, under `scope`. */
function findKey(scope: Node, key: string): SourceLocation | undefined {
  const matches = (node: Node): boolean => {
    if (morph.Node.isPropertyAssignment(node) || morph.Node.isShorthandPropertyAssignment(node)) {
      return unquote(node.getName()) === key;
    }
    if (morph.Node.isStringLiteral(node) || morph.Node.isNoSubstitutionTemplateLiteral(node)) {
      // A quoted property name ('@always': ...) is found through its property assignment.
      const parent = node.getParent();
      return (
        node.getLiteralValue() === key &&
        !(morph.Node.isPropertyAssignment(parent) && parent.getNameNode() === node)
      );
    }
    return false;
  };
  const match = matches(scope) ? scope : scope.getFirstDescendant(matches);
  return match && at(match);
}

function unquote(name: string): string {
  return name.replace(/^['"]|['"]$/g, '');
}

function at(node: Node): SourceLocation {
  const file = node.getSourceFile();
  const { line, column } = file.getLineAndColumnAtPos(node.getStart());
  return { file: file.getFilePath(), line, column };
}

/**
 * The object literal of a config key path in the config file: the `defineConfig` argument (or
 * the default export) for `config`, its `output` property for `config.output`, the second
 * schedule of the first timers entry for `config.timers[0].schedules[1]`.
 */
function configScope(file: SourceFile, path: string): Node | undefined {
  const call = file
    .getDescendantsOfKind(morph.SyntaxKind.CallExpression)
    .find((candidate) => candidate.getExpression().getText() === 'defineConfig');
  const exported = file.getExportAssignment((assignment) => !assignment.isExportEquals());
  let scope: Node | undefined =
    call?.getArguments()[0] ?? (exported && resolveObject(exported.getExpression()));
  for (const segment of path.split('.').slice(1)) {
    const [, name, index] = /^([^[]+)(?:\[(\d+)\])?$/.exec(segment) ?? [];
    if (scope === undefined || name === undefined || !morph.Node.isObjectLiteralExpression(scope))
      return undefined;
    const property = scope.getProperty(name);
    const value =
      property !== undefined && morph.Node.isPropertyAssignment(property)
        ? property.getInitializer()
        : undefined;
    if (index === undefined) {
      scope = value && resolveObject(value);
      continue;
    }
    const list = value && unwrap(value);
    const element =
      list !== undefined && morph.Node.isArrayLiteralExpression(list)
        ? list.getElements()[Number(index)]
        : undefined;
    scope = element && resolveObject(element);
  }
  return scope;
}

/** `node` without `as`, `satisfies` and parentheses around it. */
function unwrap(node: Node): Node {
  return morph.Node.isAsExpression(node) ||
    morph.Node.isSatisfiesExpression(node) ||
    morph.Node.isParenthesizedExpression(node)
    ? unwrap(node.getExpression())
    : node;
}

/** Accepts `file://` URLs from stack traces as well as paths. */
function normalize(location: SourceLocation): SourceLocation {
  return location.file.startsWith('file://')
    ? { ...location, file: fileURLToPath(location.file) }
    : location;
}
