/** What several command groups share: loading the service a command names, and the SIDs their examples use. */
import type { Service } from '../../../functions/core/model';
import * as parse from '../validate';
import { AdminError, type CommandContext } from '../framework';

export async function loadService(context: CommandContext, serviceSid: string): Promise<Service> {
  const service = await context.accounts.getService(serviceSid);
  if (!service) throw new AdminError(`No service ${serviceSid} in ${context.targetDescription}`);
  return service;
}

/** Most commands take just the Service SID. */
export const sidOnly = ([sid]: string[]) => parse.serviceSid(sid!);

export const VA = 'VA0123456789abcdef0123456789abcdef';
export const HX = 'HX0123456789abcdef0123456789abcdef';
export const WH = 'WH0123456789abcdef0123456789abcdef';
