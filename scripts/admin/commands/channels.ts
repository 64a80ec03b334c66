/** `channels set`: the channels a service may deliver on. */
import { CHANNELS } from '../../../functions/core/routing';
import { list } from '../format';
import * as parse from '../validate';
import { command, type Command } from '../framework';
import { VA, loadService } from './common';

const channelsSet = command({
  words: ['channels', 'set'],
  args: ['<VA>', '<list>'],
  summary: `Set the enabled channels, comma-separated: ${CHANNELS.join(',')}`,
  examples: [`channels set ${VA} sms,whatsapp`],
  parse: ([sid, names]) => ({ sid: parse.serviceSid(sid!), channels: parse.channels(names!) }),
  run: async (context, { sid, channels }) => {
    await loadService(context, sid);
    await context.accounts.setChannels(context.change, sid, channels);
    return { json: { serviceSid: sid, channels }, text: `Channels: ${list(channels)}` };
  },
});

export const channelsCommands: readonly Command[] = [channelsSet];
