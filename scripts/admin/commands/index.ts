/**
 * Every admin command, one file a group, in the order `help` lists them. A command is its words, arguments and
 * options, the parsing of its arguments (no I/O) and what it asks the stores to do; see `../framework.ts`.
 */
import type { Command } from '../framework';
import { auditCommands } from './audit';
import { balanceCommands } from './balance';
import { capsCommands } from './caps';
import { channelsCommands } from './channels';
import { guardCommands } from './guard';
import { keyCommands } from './key';
import { memberCommands } from './member';
import { priceCommands } from './price';
import { providersCommands } from './providers';
import { rulesCommands } from './rules';
import { serviceCommands } from './service';
import { templateCommands } from './template';
import { webhookCommands } from './webhook';

export const COMMANDS: readonly Command[] = [
  ...serviceCommands,
  ...keyCommands,
  ...balanceCommands,
  ...templateCommands,
  ...rulesCommands,
  ...guardCommands,
  ...capsCommands,
  ...priceCommands,
  ...channelsCommands,
  ...webhookCommands,
  ...memberCommands,
  ...auditCommands,
  ...providersCommands,
];
