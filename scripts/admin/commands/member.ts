/**
 * `member add|remove|list`: who may use a service in the account console. A member is a console user id: the
 * Cognito user's `sub` on AWS (docs/console.md: invite with admin-create-user, then add the member), the e-mail
 * address typed into the local sign-in on `npm start`. Operators (Cognito group `operators`) need no membership.
 */
import { table } from '../format';
import * as parse from '../validate';
import { AdminError, UsageError, command, type Command } from '../framework';
import { VA, loadService, sidOnly } from './common';

/** A Cognito `sub` (a UUID) or a local e-mail address; the console refuses any other shape of user id. */
const USER_ID = /^[A-Za-z0-9@._+:-]{1,128}$/;
const SUB = '3f2a9c41-d07e-4b8a-9c1d-0123456789ab';

function userId(text: string): string {
  if (!USER_ID.test(text)) {
    throw new UsageError(
      `"${text}" is not a console user id: the Cognito user's sub (a UUID), or on the local stack an e-mail address`,
    );
  }
  return text;
}

const memberAdd = command({
  words: ['member', 'add'],
  args: ['<VA>', '<user>'],
  summary: 'Let a console user see and manage a service (user: the Cognito sub, or a local e-mail)',
  details: [
    'On AWS the user is the `sub` of a user of the console user pool (stack output ConsoleUserPoolId), e.g.',
    'from `aws cognito-idp admin-create-user` or `admin-get-user`; on the local stack, the e-mail typed at',
    'the local sign-in. Adding an existing member again changes nothing.',
  ],
  examples: [`member add ${VA} ${SUB}`, `member add ${VA} alice@example.com`],
  parse: ([sid, user]) => ({ sid: parse.serviceSid(sid!), user: userId(user!) }),
  run: async (context, { sid, user }) => {
    await loadService(context, sid);
    const membership = await context.accounts.addMember(context.change, sid, user);
    return {
      json: membership,
      text: `${user} is a member of ${membership.serviceName} (${sid}): the console lists it at the next sign-in.`,
    };
  },
});

const memberRemove = command({
  words: ['member', 'remove'],
  args: ['<VA>', '<user>'],
  summary: 'Take a service away from a console user (the next console request is refused)',
  examples: [`member remove ${VA} ${SUB}`],
  parse: ([sid, user]) => ({ sid: parse.serviceSid(sid!), user: userId(user!) }),
  run: async (context, { sid, user }) => {
    await loadService(context, sid);
    if (!(await context.accounts.removeMember(context.change, sid, user))) {
      throw new AdminError(`${user} is not a member of ${sid} (see member list)`);
    }
    return { json: { serviceSid: sid, userId: user, removed: true }, text: `Removed ${user} from ${sid}.` };
  },
});

const memberList = command({
  words: ['member', 'list'],
  args: ['<VA>'],
  summary: "List a service's console members",
  examples: [`member list ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    await loadService(context, sid);
    const members = (await context.accounts.store.listMembers(sid)).sort((a, b) =>
      a.addedAt.localeCompare(b.addedAt),
    );
    return {
      json: { serviceSid: sid, members },
      text:
        members.length === 0
          ? 'No console members (operators see every service).'
          : table(
              ['User', 'Added'],
              members.map((m) => [m.userId, m.addedAt]),
            ),
    };
  },
});

export const memberCommands: readonly Command[] = [memberAdd, memberRemove, memberList];
