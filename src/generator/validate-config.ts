/**
 * Config-level rules no single registration can see. Everything about one registration
 * (router options, unknown middleware and models) is the runtime's to validate.
 */
import { InvalidRouterConfigException, type MachineRoutesError } from '../runtime/errors.js';
import { registrationName, type MachineRoutesConfig } from './config.js';

/** Problems of the config as a whole; empty when there are none. */
export function validateConfig(config: MachineRoutesConfig): MachineRoutesError[] {
  const issues: MachineRoutesError[] = [];
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
  return issues;
}
