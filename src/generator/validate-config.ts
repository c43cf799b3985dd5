/**
 * Config-level rules no single registration can see. Everything about one registration
 * (router options, unknown middleware and models) is the runtime's to validate.
 */
import {
  InvalidConfigFileException,
  InvalidRouterConfigException,
  type MachineRoutesError,
} from '../runtime/errors.js';
import {
  describeUnknownKey,
  findUnknownKeys,
  KNOWN_KEYS,
  type KeySection,
} from '../runtime/known-keys.js';
import { validateAdminOptions } from '../runtime/http/admin/admin-options.js';
import { declaredMiddleware, registrationName, type MachineRoutesConfig } from './config.js';

/** The config's sections whose keys are checked, by the config key holding them. */
const SECTIONS = [
  'output',
  'openapi',
  'client',
  'server',
  'docs',
  'health',
  'admin',
] as const satisfies readonly KeySection[];

/** Problems of the config as a whole; empty when there are none. */
export function validateConfig(config: MachineRoutesConfig): MachineRoutesError[] {
  const issues: MachineRoutesError[] = [...unknownConfigKeys(config)];
  const seen = new Set<string>();
  for (const registration of config.registrations) {
    const name = registrationName(registration);
    if (seen.has(name)) {
      issues.push(
        new InvalidRouterConfigException(
          `MachineRouter: two registrations are named '${name}', so their routes would share names. Give each registration of '${registration.machine.id}' a distinct 'name'.`,
          { machine: registration.machine.id, registration: name, key: 'name' },
        ),
      );
    }
    seen.add(name);
  }
  const kinds = config.output?.kinds;
  if (config.docs?.enabled === true && kinds !== undefined && !kinds.includes('openapi')) {
    issues.push(
      new InvalidRouterConfigException(
        `docs.enabled serves the emitted openapi.json, but output.kinds (${kinds.join(', ')}) leaves it out. Add 'openapi' to output.kinds, or set docs.enabled to false.`,
        { key: 'docs' },
      ),
    );
  }
  if (config.admin !== undefined && kinds !== undefined && !kinds.includes('openapi')) {
    issues.push(
      new InvalidRouterConfigException(
        `admin documents its routes in the emitted openapi.json and draws the console's diagrams beside it, but output.kinds (${kinds.join(', ')}) leaves it out. Add 'openapi' to output.kinds, or remove admin.`,
        { key: 'admin' },
      ),
    );
  }
  if (config.client?.tanstackQuery === true && kinds !== undefined && !kinds.includes('client')) {
    issues.push(
      new InvalidRouterConfigException(
        `client.tanstackQuery emits bindings of the generated client, but output.kinds (${kinds.join(', ')}) leaves the client out. Add 'client' to output.kinds, or set client.tanstackQuery to false.`,
        { key: 'client' },
      ),
    );
  }
  // The admin group reads and repairs every instance: refused without a middleware the config
  // declares (a name list counts: the app is then handed the implementations).
  if (config.admin !== undefined)
    issues.push(...validateAdminOptions(config.admin, declaredMiddleware(config)));
  return issues;
}

/**
 * Unknown keys of the config and its sections, each with the nearest known key. (Registration
 * keys are the runtime's to check: `planRegistration` reports them, as `MachineRouter` does.)
 * `details.path` is the config key path the locator searches (`config`, `config.output`).
 */
function unknownConfigKeys(config: MachineRoutesConfig): MachineRoutesError[] {
  const places: [string, unknown, readonly string[]][] = [
    ['config', config, KNOWN_KEYS.config],
    ...SECTIONS.map((section): [string, unknown, readonly string[]] => [
      `config.${section}`,
      config[section],
      KNOWN_KEYS[section],
    ]),
  ];
  return places.flatMap(([path, value, known]) =>
    findUnknownKeys(value, known).map(
      (unknown) =>
        new InvalidConfigFileException(
          `defineConfig: ${describeUnknownKey(unknown)} in ${path === 'config' ? 'the config' : `'${path.slice('config.'.length)}'`}. Known keys: ${known.join(', ')}.`,
          { path, key: unknown.key },
        ),
    ),
  );
}
