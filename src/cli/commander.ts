/**
 * commander, as the CLI uses it: the published package carries its own copy
 * (`dist/vendor/commander.cjs`, scripts/vendor.js) instead of installing the package beside it;
 * run from the sources, the devDependency. Every CLI module imports commander from here.
 */
import type * as Commander from 'commander';
import { requireVendored } from '../runtime/own-root.js';

const commander = requireVendored<typeof Commander>('commander');

export const { Command, CommanderError, InvalidArgumentError, Option } = commander;
export type Command = Commander.Command;
export type CommanderError = Commander.CommanderError;
export type Option = Commander.Option;
