/** `webhook add|list|disable|enable|rotate|remove`: webhook endpoints and their signing secrets. */
import { cryptoRandom } from '../../../functions/adapters/crypto';
import {
  MAX_WEBHOOK_ENDPOINTS_PER_SERVICE,
  webhookEndpointView,
  type WebhookEndpoint,
} from '../../../functions/core/webhooks';
import { rows, table } from '../format';
import * as parse from '../validate';
import { AdminError, command, type Command, type CommandContext, type OptionValues } from '../framework';
import { VA, WH, loadService, sidOnly } from './common';

/** The admin command allows http:// and loopback URLs only for a local table (the local stack's receiver). */
const targetsLocalTable = (values: OptionValues): boolean =>
  values.table === undefined || values.endpoint !== undefined;

const SECRET_NOTE = [
  'The secret is shown once; only an encrypted copy is stored. Sealing it needs the webhook key: the running',
  'local stack provides it; a deployed table needs --secret-arn ARN (the stack output WebhookKeySecretArn, read',
  'with your AWS credentials) or OTP_WEBHOOK_SECRET_ARN; OTP_MASTER_KEY gives it directly (another DynamoDB Local).',
];

const secretText = (secret: string) => `${secret}   (shown once: store it now)`;

async function loadEndpoint(
  context: CommandContext,
  sid: string,
  endpointSid: string,
): Promise<WebhookEndpoint> {
  await loadService(context, sid);
  const endpoint = await context.webhooks.getEndpoint(sid, endpointSid);
  if (!endpoint)
    throw new AdminError(`No webhook endpoint ${endpointSid} in service ${sid} (see webhook list)`);
  return endpoint;
}

const webhookAdd = command({
  words: ['webhook', 'add'],
  args: ['<VA>', '<url>'],
  options: ['secret-arn'],
  optionsUsage: '[--secret-arn ARN]',
  summary: `Register a webhook endpoint (at most ${MAX_WEBHOOK_ENDPOINTS_PER_SERVICE}); prints its signing secret once`,
  details: [
    'Every event of the service is posted to the URL, signed per Standard Webhooks (see docs/webhooks.md).',
    'A deployed table takes only public https:// URLs; the local stack also takes its own receiver,',
    '<base URL>/_local/webhooks/receiver.',
    ...SECRET_NOTE,
  ],
  examples: [
    `webhook add ${VA} https://hooks.example.com/otp --secret-arn arn:aws:secretsmanager:eu-west-1:123456789012:secret:WebhookKey-abc`,
    `webhook add ${VA} http://127.0.0.1:3000/_local/webhooks/receiver`,
  ],
  parse: ([sid, url], values) => ({
    sid: parse.serviceSid(sid!),
    url: parse.webhookUrl(url!, { allowPrivate: targetsLocalTable(values) }),
  }),
  run: async (context, { sid, url }) => {
    await loadService(context, sid);
    const vault = await context.webhookVault();
    const added = await context.webhooks.addEndpoint(sid, url, vault, cryptoRandom);
    if (!added.ok) {
      throw new AdminError(
        added.reason === 'too_many'
          ? `Service ${sid} already has ${MAX_WEBHOOK_ENDPOINTS_PER_SERVICE} webhook endpoints; remove one first`
          : `No service ${sid} in ${context.targetDescription}`,
      );
    }
    await context.accounts.recordChange(context.change, sid, 'webhook.add', undefined, {
      endpointSid: added.endpoint.sid,
      url: added.endpoint.url,
    });
    return {
      json: { serviceSid: sid, ...webhookEndpointView(added.endpoint), secret: added.secret },
      text: [
        `Added webhook endpoint ${added.endpoint.sid}.`,
        rows([
          ['URL', added.endpoint.url],
          ['Signing secret', secretText(added.secret)],
        ]),
      ].join('\n'),
    };
  },
});

const webhookList = command({
  words: ['webhook', 'list'],
  args: ['<VA>'],
  summary: "List a service's webhook endpoints",
  examples: [`webhook list ${VA}`],
  parse: sidOnly,
  run: async (context, sid) => {
    await loadService(context, sid);
    const endpoints = (await context.webhooks.listEndpoints(sid)).sort((a, b) =>
      a.createdAt.localeCompare(b.createdAt),
    );
    return {
      json: { serviceSid: sid, endpoints: endpoints.map(webhookEndpointView) },
      text:
        endpoints.length === 0
          ? 'No webhook endpoints.'
          : table(
              ['Endpoint SID', 'Status', 'Created', 'URL'],
              endpoints.map((e) => [e.sid, e.enabled ? 'enabled' : 'disabled', e.createdAt, e.url]),
            ),
    };
  },
});

function webhookSwitch(enable: boolean): Command {
  const action = enable ? 'enable' : 'disable';
  return command({
    words: ['webhook', action],
    args: ['<VA>', '<WH>'],
    summary: enable
      ? 'Enable a webhook endpoint again (events from now on)'
      : 'Stop posting to a webhook endpoint; queued retries are dropped',
    examples: [`webhook ${action} ${VA} ${WH}`],
    parse: ([sid, endpoint]) => ({ sid: parse.serviceSid(sid!), endpointSid: parse.webhookSid(endpoint!) }),
    run: async (context, { sid, endpointSid }) => {
      const endpoint = await loadEndpoint(context, sid, endpointSid);
      const changed = endpoint.enabled !== enable;
      if (changed) {
        await context.webhooks.setEnabled(sid, endpointSid, enable);
        await context.accounts.recordChange(context.change, sid, `webhook.${action}`, undefined, {
          endpointSid,
        });
      }
      return {
        json: { serviceSid: sid, endpointSid, enabled: enable, changed },
        text: changed
          ? `Webhook endpoint ${endpointSid} ${action}d.`
          : `Webhook endpoint ${endpointSid} was already ${action}d; nothing changed.`,
      };
    },
  });
}

const webhookRotate = command({
  words: ['webhook', 'rotate'],
  args: ['<VA>', '<WH>'],
  options: ['secret-arn', 'now'],
  optionsUsage: '[--now] [--secret-arn ARN]',
  summary: 'New signing secret, shown once; the old one also signs for 24 hours, or not at all with --now',
  details: [
    'During the 24 hours both signatures are sent (webhook-signature: "v1,<new> v1,<old>"), so the receiver can',
    'switch to the new secret without missing an event.',
    '--now cuts every previous secret off at once (a leaked secret): from the next delivery on, retries already',
    'queued included, only the new secret signs, and the receiver refuses events until it has the new secret.',
    ...SECRET_NOTE,
  ],
  examples: [`webhook rotate ${VA} ${WH}`, `webhook rotate ${VA} ${WH} --now`],
  parse: ([sid, endpoint], values) => ({
    sid: parse.serviceSid(sid!),
    endpointSid: parse.webhookSid(endpoint!),
    immediate: values.now === true,
  }),
  run: async (context, { sid, endpointSid, immediate }) => {
    await loadEndpoint(context, sid, endpointSid);
    const vault = await context.webhookVault();
    const now = new Date();
    const secret = await context.webhooks.rotateSecret(sid, endpointSid, vault, now, { immediate });
    if (!secret) throw new AdminError(`No webhook endpoint ${endpointSid} in service ${sid}`);
    await context.accounts.recordChange(context.change, sid, 'webhook.rotate', undefined, {
      endpointSid,
      immediate,
    });
    const rotated = await context.webhooks.getEndpoint(sid, endpointSid);
    return {
      json: { serviceSid: sid, ...webhookEndpointView(rotated!), secret },
      text: [
        `New signing secret for ${endpointSid}.`,
        rows([
          ['Signing secret', secretText(secret)],
          [
            'Old secret',
            rotated?.previousSecretUntil
              ? `also signs until ${rotated.previousSecretUntil}`
              : 'no longer signs (cut off now)',
          ],
        ]),
      ].join('\n'),
    };
  },
});

const webhookRemove = command({
  words: ['webhook', 'remove'],
  args: ['<VA>', '<WH>'],
  summary: 'Remove a webhook endpoint and its secret; queued retries are dropped',
  examples: [`webhook remove ${VA} ${WH}`],
  parse: ([sid, endpoint]) => ({ sid: parse.serviceSid(sid!), endpointSid: parse.webhookSid(endpoint!) }),
  run: async (context, { sid, endpointSid }) => {
    await loadEndpoint(context, sid, endpointSid);
    if (!(await context.webhooks.removeEndpoint(sid, endpointSid))) {
      throw new AdminError(`No webhook endpoint ${endpointSid} in service ${sid}`);
    }
    await context.accounts.recordChange(context.change, sid, 'webhook.remove', { endpointSid }, undefined);
    return {
      json: { serviceSid: sid, endpointSid, removed: true },
      text: `Removed webhook endpoint ${endpointSid}.`,
    };
  },
});

export const webhookCommands: readonly Command[] = [
  webhookAdd,
  webhookList,
  webhookSwitch(false),
  webhookSwitch(true),
  webhookRotate,
  webhookRemove,
];
