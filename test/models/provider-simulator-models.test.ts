/**
 * The provider simulator checks AWS requests against AWS's own service models (test/fixtures/aws-models/README.md),
 * through AWS's own SDK clients: what the model refuses is a ValidationException, and changing one pattern of the
 * model changes the answer. This project runs only where the models are found (jest.config.js).
 */
import { SendTextMessageCommand } from '@aws-sdk/client-pinpoint-sms-voice-v2';
import {
  GetLinkedWhatsAppBusinessAccountPhoneNumberCommand,
  SendWhatsAppMessageCommand,
} from '@aws-sdk/client-socialmessaging';
import { loadModel } from '../../local/smithy';
import {
  ACCOUNT,
  POOL,
  PHONE_NUMBER_ID,
  PHONE_NUMBER_ARN,
  start,
  smsClient,
  socialClient,
  allow,
  textMessage,
  whatsAppMessage,
  failure,
  stopAll,
} from '../support/provider-simulator';

afterEach(stopAll);

describe('the service models', () => {
  test('a request within the model is taken; DryRun is checked and carried nowhere', async () => {
    const running = await start({ grants: [allow('sms-voice:SendTextMessage', POOL)] });
    const client = smsClient(running.simulator.url);
    expect((await client.send(new SendTextMessageCommand(textMessage()))).MessageId).toBeDefined();
    await client.send(
      new SendTextMessageCommand(textMessage({ DestinationPhoneNumber: '+447400999999', DryRun: true })),
    );
    expect(running.carrier.messagesTo('+447400999999')).toEqual([]);
  });

  test.each([
    [
      'MaxPrice under its 2 characters',
      { MaxPrice: '1' },
      'MaxPrice',
      'have length greater than or equal to 2',
    ],
    [
      'MaxPrice outside its pattern',
      { MaxPrice: '0.123456' },
      'MaxPrice',
      'satisfy regular expression pattern',
    ],
    ['TimeToLive under 5 s', { TimeToLive: 4 }, 'TimeToLive', 'have value greater than or equal to 5'],
    [
      'a number outside E.164',
      { DestinationPhoneNumber: '00447400123456' },
      'DestinationPhoneNumber',
      'pattern',
    ],
    ['a message type not in the enum', { MessageType: 'OTP' as never }, 'MessageType', 'enum value set'],
    [
      'an India parameter not in the enum',
      { DestinationCountryParameters: { IN_TEMPLATE: '1' } as never },
      'DestinationCountryParameters/IN_TEMPLATE',
      'enum value set',
    ],
  ])('SendTextMessage: %s is a ValidationException', async (_name, extra, field, constraint) => {
    const running = await start({ grants: [allow('sms-voice:SendTextMessage', POOL)] });
    const error = await failure(
      smsClient(running.simulator.url).send(new SendTextMessageCommand(textMessage(extra))),
    );
    expect(error.name).toBe('ValidationException');
    expect(error.$metadata.httpStatusCode).toBe(400);
    expect(error.Reason).toBe('FIELD_VALIDATION_FAILED');
    expect(error.Fields).toEqual([{ Name: field, Message: expect.stringContaining(constraint) as string }]);
    expect(error.message).toMatch(/^1 validation error detected: /);
    expect(running.carrier.messagesTo(undefined)).toEqual([]);
  });

  test('SendWhatsAppMessage: the phone number ARN with its phone-number-id- prefix kept is refused', async () => {
    const prefixKept = `arn:aws:social-messaging:us-east-1:${ACCOUNT}:phone-number-id/${PHONE_NUMBER_ID}`;
    const running = await start({
      grants: [allow('social-messaging:SendWhatsAppMessage', prefixKept, PHONE_NUMBER_ARN)],
    });
    const client = socialClient(running.simulator.url);
    const error = await failure(
      client.send(
        new SendWhatsAppMessageCommand({
          originationPhoneNumberId: prefixKept,
          message: whatsAppMessage(),
          metaApiVersion: 'v23.0',
        }),
      ),
    );
    expect(error.name).toBe('ValidationException');
    expect(error.$metadata.httpStatusCode).toBe(400);
    expect(error.message).toContain("at '/originationPhoneNumberId' failed to satisfy constraint");
    // The id and the real ARN are both within the pattern.
    for (const originationPhoneNumberId of [PHONE_NUMBER_ID, PHONE_NUMBER_ARN])
      await client.send(
        new SendWhatsAppMessageCommand({
          originationPhoneNumberId,
          message: whatsAppMessage(),
          metaApiVersion: 'v23.0',
        }),
      );
  });

  test('changing one pattern of the model changes the answer', async () => {
    const social = structuredClone(loadModel('socialmessaging'));
    social.shapes['com.amazonaws.socialmessaging#WhatsAppPhoneNumberId']!.traits!['smithy.api#pattern'] =
      '^arn:.*$';
    const running = await start({
      grants: [allow('social-messaging:SendWhatsAppMessage', PHONE_NUMBER_ARN)],
      models: { social },
    });
    const error = await failure(
      socialClient(running.simulator.url).send(
        new SendWhatsAppMessageCommand({
          originationPhoneNumberId: PHONE_NUMBER_ID,
          message: whatsAppMessage(),
          metaApiVersion: 'v23.0',
        }),
      ),
    );
    expect(error.name).toBe('ValidationException');
    expect(error.message).toContain('Member must satisfy regular expression pattern: ^arn:.*$');
  });

  test('GetLinkedWhatsAppBusinessAccountPhoneNumber: checked and authorized like a send', async () => {
    const running = await start({
      grants: [allow('social-messaging:GetLinkedWhatsAppBusinessAccountPhoneNumber', PHONE_NUMBER_ARN)],
    });
    const client = socialClient(running.simulator.url);
    const found = await client.send(
      new GetLinkedWhatsAppBusinessAccountPhoneNumberCommand({ id: PHONE_NUMBER_ID }),
    );
    expect(found.phoneNumber?.arn).toBe(PHONE_NUMBER_ARN);
    const error = await failure(
      client.send(new GetLinkedWhatsAppBusinessAccountPhoneNumberCommand({ id: 'waba-1' })),
    );
    expect(error.name).toBe('ValidationException');
  });
});
