/**
 * The provider simulator answers as AWS and Vonage do, judged by their own contracts and never by our adapters:
 * requests go through AWS's own SDK clients (or plain HTTP for Vonage), and the expectations come from IAM's
 * rules with the Service Authorization Reference's ARN formats and the providers' documented receipt sequences.
 * Changing one grant shows the failure AWS would answer. The checks against AWS's service models are in
 * test/models/provider-simulator-models.test.ts.
 */
import { SendTextMessageCommand } from '@aws-sdk/client-pinpoint-sms-voice-v2';
import { SendWhatsAppMessageCommand } from '@aws-sdk/client-socialmessaging';
import { applicationJwt } from '../../functions/adapters/providers/vonage-jwt';
import { deliverGrants } from '../../local/provider-grants';
import { ProviderSimulator } from '../../local/provider-simulator';
import {
  ACCOUNT,
  POOL,
  PHONE_NUMBER_ID,
  PHONE_NUMBER_ARN,
  type Running,
  start,
  smsClient,
  socialClient,
  allow,
  textMessage,
  whatsAppMessage,
  failure,
  events,
  eventually,
  stopAll,
} from '../support/provider-simulator';

afterEach(stopAll);

describe('IAM', () => {
  test('the deliver role as synthesized may send SMS from its pool; without that one grant, AccessDenied', async () => {
    const synthesized = deliverGrants(ProviderSimulator.cdkContext(), ProviderSimulator.scope);
    const sends = await start({ grants: synthesized });
    await smsClient(sends.simulator.url).send(new SendTextMessageCommand(textMessage()));

    const withoutPool = synthesized.map((statement) => ({
      ...statement,
      resources: statement.resources.filter((resource) => resource !== POOL),
    }));
    const denied = await start({ grants: withoutPool });
    const error = await failure(
      smsClient(denied.simulator.url).send(new SendTextMessageCommand(textMessage())),
    );
    expect(error.name).toBe('AccessDeniedException');
    expect(error.message).toBe(
      `User: arn:aws:sts::${ACCOUNT}:assumed-role/OtpLocal-DeliverRole/otp-deliver is not authorized to perform: ` +
        `sms-voice:SendTextMessage on resource: ${POOL} because no identity-based policy allows the ` +
        'sms-voice:SendTextMessage action',
    );
    expect(denied.carrier.messagesTo(undefined)).toEqual([]);
    // The first run after a change to lib/ synthesizes the stack.
  }, 180_000);

  test('every resource a request names needs the grant: the configuration set too', async () => {
    const set = `arn:aws:sms-voice:us-east-1:${ACCOUNT}:configuration-set/otp-local-receipts`;
    const poolOnly = await start({ grants: [allow('sms-voice:SendTextMessage', POOL)] });
    const error = await failure(
      smsClient(poolOnly.simulator.url).send(
        new SendTextMessageCommand(textMessage({ ConfigurationSetName: 'otp-local-receipts' })),
      ),
    );
    expect(error.name).toBe('AccessDeniedException');
    expect(error.message).toContain(`on resource: ${set} `);
    const both = await start({ grants: [allow('sms-voice:SendTextMessage', POOL, set)] });
    await smsClient(both.simulator.url).send(
      new SendTextMessageCommand(textMessage({ ConfigurationSetName: 'otp-local-receipts' })),
    );
  });

  test("a WhatsApp grant on the ARN with the id's prefix kept is no grant on the phone number", async () => {
    const prefixKept = `arn:aws:social-messaging:us-east-1:${ACCOUNT}:phone-number-id/${PHONE_NUMBER_ID}`;
    const send = (running: Running) =>
      socialClient(running.simulator.url).send(
        new SendWhatsAppMessageCommand({
          originationPhoneNumberId: PHONE_NUMBER_ID,
          message: whatsAppMessage(),
          metaApiVersion: 'v23.0',
        }),
      );
    const wrong = await start({ grants: [allow('social-messaging:SendWhatsAppMessage', prefixKept)] });
    const error = await failure(send(wrong));
    expect(error.name).toBe('AccessDeniedException');
    expect(error.$metadata.httpStatusCode).toBe(403);
    expect(error.message).toContain(`on resource: ${PHONE_NUMBER_ARN} `);
    const right = await start({ grants: [allow('social-messaging:SendWhatsAppMessage', PHONE_NUMBER_ARN)] });
    expect((await send(right)).messageId).toBeDefined();
  });

  test('a Deny wins over an Allow; wildcards match as in IAM', async () => {
    const running = await start({
      grants: [
        allow('sms-voice:Send*', 'arn:aws:sms-voice:us-east-1:*:pool/*'),
        { effect: 'Deny', actions: ['sms-voice:*'], resources: [POOL] },
      ],
    });
    expect(
      (await failure(smsClient(running.simulator.url).send(new SendTextMessageCommand(textMessage())))).name,
    ).toBe('AccessDeniedException');
  });
});

describe('receipts as the providers send them', () => {
  test('AWS SMS: TEXT_SUCCESSFUL with isFinal false, then the final TEXT_DELIVERED', async () => {
    const running = await start({ grants: [allow('sms-voice:SendTextMessage', POOL)] });
    running.carrier.setRule({ prefix: '+4474', channels: { sms: { deliver: 100 } } });
    await smsClient(running.simulator.url).send(new SendTextMessageCommand(textMessage()));
    await eventually(() => (running.sns.length === 2 ? true : undefined));
    expect(events(running).map((event) => [event.eventType, event.isFinal])).toEqual([
      ['TEXT_SUCCESSFUL', false],
      ['TEXT_DELIVERED', true],
    ]);
  });

  test('AWS SMS: an unreachable handset, after the carrier took the message', async () => {
    const running = await start({ grants: [allow('sms-voice:SendTextMessage', POOL)] });
    running.carrier.setRule({ prefix: '+4474', channels: { sms: { undeliverable: 100 } } });
    await smsClient(running.simulator.url).send(new SendTextMessageCommand(textMessage()));
    await eventually(() => (running.sns.length === 2 ? true : undefined));
    expect(events(running).map((event) => [event.eventType, event.isFinal])).toEqual([
      ['TEXT_SUCCESSFUL', false],
      ['TEXT_UNREACHABLE', true],
    ]);
  });

  test('with duplicates and reordering on, every event comes twice and the non-final one last', async () => {
    const running = await start({
      grants: [allow('sms-voice:SendTextMessage', POOL)],
      noise: { duplicate: 1, reorder: 1 },
    });
    running.carrier.setRule({ prefix: '+4474', channels: { sms: { deliver: 100 } } });
    await smsClient(running.simulator.url).send(new SendTextMessageCommand(textMessage()));
    await eventually(() => (running.sns.length === 4 ? true : undefined));
    const types = events(running).map((event) => event.eventType);
    expect(types[0]).toBe('TEXT_DELIVERED');
    expect(types.filter((type) => type === 'TEXT_DELIVERED')).toHaveLength(2);
    expect(types.filter((type) => type === 'TEXT_SUCCESSFUL')).toHaveLength(2);
  });

  test('WhatsApp: sent, delivered, read', async () => {
    const running = await start({
      grants: [allow('social-messaging:SendWhatsAppMessage', PHONE_NUMBER_ARN)],
    });
    running.carrier.setRule({ prefix: '+4474', channels: { whatsapp: { deliver: 100 } } });
    await socialClient(running.simulator.url).send(
      new SendWhatsAppMessageCommand({
        originationPhoneNumberId: PHONE_NUMBER_ID,
        message: whatsAppMessage(),
        metaApiVersion: 'v23.0',
      }),
    );
    await eventually(() => (running.sns.length === 3 ? true : undefined));
    const statuses = events(running).map((event) => {
      const entry = JSON.parse(event.whatsAppWebhookEntry as string) as {
        changes: { value: { statuses: { status: string }[] } }[];
      };
      return entry.changes[0]!.value.statuses[0]!.status;
    });
    expect(statuses).toEqual(['sent', 'delivered', 'read']);
  });

  // Meta, "Sending Authentication Message Templates with One-Time Password Buttons": the code goes to the text
  // parameter "of both objects in the components array", the body and the copy-code (URL) button.
  test('WhatsApp: an authentication template without the code in its copy-code button is refused', async () => {
    const running = await start({
      grants: [allow('social-messaging:SendWhatsAppMessage', PHONE_NUMBER_ARN)],
    });
    const body = { type: 'body', parameters: [{ type: 'text', text: '123456' }] };
    const button = (text: string) => ({
      type: 'button',
      sub_type: 'url',
      index: '0',
      parameters: [{ type: 'text', text }],
    });
    const { applicationId, privateKey } = running.simulator.vonage;
    for (const components of [[body], [body, button('654321')]]) {
      const error = await failure(
        socialClient(running.simulator.url).send(
          new SendWhatsAppMessageCommand({
            originationPhoneNumberId: PHONE_NUMBER_ID,
            message: whatsAppMessage('447400123456', components),
            metaApiVersion: 'v23.0',
          }),
        ),
      );
      expect(error.name).toBe('InvalidParametersException');
      const vonage = await fetch(`${running.simulator.url}/v1/messages`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${applicationJwt(applicationId, privateKey, new Date())}`,
        },
        body: JSON.stringify({
          channel: 'whatsapp',
          message_type: 'custom',
          to: '447400123456',
          from: '14155550000',
          custom: {
            type: 'template',
            template: { name: 'otp_authentication', language: { code: 'en_US' }, components },
          },
        }),
      });
      expect(vonage.status).toBe(422);
    }
    expect(running.carrier.messagesTo(undefined)).toEqual([]);
  });

  test('Vonage: submitted then delivered; submitted then undeliverable', async () => {
    const running = await start();
    running.carrier.setRule({ prefix: '+4474001', channels: { sms: { deliver: 100 } } });
    running.carrier.setRule({ prefix: '+4474002', channels: { sms: { undeliverable: 100 } } });
    const { applicationId, privateKey } = running.simulator.vonage;
    for (const to of ['447400111111', '447400222222']) {
      const response = await fetch(`${running.simulator.url}/v1/messages`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${applicationJwt(applicationId, privateKey, new Date())}`,
        },
        body: JSON.stringify({
          channel: 'sms',
          message_type: 'text',
          to,
          from: 'OTPLocal',
          text: 'Code 1',
          client_ref: to,
        }),
      });
      expect(response.status).toBe(202);
    }
    await eventually(() => (running.webhooks.length === 4 ? true : undefined));
    const byNumber = (to: string) =>
      running.webhooks.filter((hook) => hook.to === to).map((hook) => hook.status);
    expect(byNumber('447400111111')).toEqual(['submitted', 'delivered']);
    expect(byNumber('447400222222')).toEqual(['submitted', 'undeliverable']);
  });

  test('Vonage: a request outside its SDK types is a 422 naming the parameter', async () => {
    const running = await start();
    const { applicationId, privateKey } = running.simulator.vonage;
    const response = await fetch(`${running.simulator.url}/v1/messages`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${applicationJwt(applicationId, privateKey, new Date())}`,
      },
      body: JSON.stringify({
        channel: 'sms',
        message_type: 'text',
        to: '447400111111',
        from: 'OTPLocal',
        text: 'Code 1',
        client_ref: 'x'.repeat(101),
      }),
    });
    expect(response.status).toBe(422);
    const body = (await response.json()) as { invalid_parameters: { name: string }[] };
    expect(body.invalid_parameters.map((parameter) => parameter.name)).toEqual(['client_ref']);
  });
});
