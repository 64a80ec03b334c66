/** What several command groups share: loading the service a command names, and the SIDs their examples use. */
import { OtpError } from '../../../functions/core/errors';
import type { Service } from '../../../functions/core/model';
import * as parse from '../validate';
import { AdminError, type CommandContext } from '../framework';

export async function loadService(context: CommandContext, serviceSid: string): Promise<Service> {
  const service = await context.accounts.getService(serviceSid);
  if (!service) throw new AdminError(`No service ${serviceSid} in ${context.targetDescription}`);
  return service;
}

/**
 * Makes `edit` (one entry added to or taken off a list) on the service as read now: `edit` writes under the version
 * it read, so a change that landed in between (the console's, another command's) refuses it (`conflict`), and it
 * is made again on a fresh read rather than writing back a list that lacks that change.
 */
export async function editFreshCopy<T>(
  context: CommandContext,
  serviceSid: string,
  edit: (service: Service) => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const service = await loadService(context, serviceSid);
    try {
      return await edit(service);
    } catch (error) {
      if (attempt >= 5 || !(error instanceof OtpError && error.code === 'conflict')) throw error;
    }
  }
}

/** Most commands take just the Service SID. */
export const sidOnly = ([sid]: string[]) => parse.serviceSid(sid!);

export const VA = 'VA0123456789abcdef0123456789abcdef';
export const HX = 'HX0123456789abcdef0123456789abcdef';
export const WH = 'WH0123456789abcdef0123456789abcdef';
