/**
 * The AWS service models the provider simulator checks requests against (test/fixtures/aws-models/README.md)
 * are as new as the SDK clients the adapters send with: the input members of each operation we call are the
 * same in the model and in the installed client's schema. An SDK upgrade that adds a member fails here until
 * newer models are placed.
 */
import * as sms from '@aws-sdk/client-pinpoint-sms-voice-v2';
import * as social from '@aws-sdk/client-socialmessaging';
import { loadModel } from '../../local/smithy';

/** A structure schema of the SDK: `[3, namespace, name, traits, memberNames, memberSchemas, requiredCount]`. */
const sdkMembers = (schema: unknown): string[] => [...((schema as unknown[])[4] as string[])].sort();

const modelMembers = (file: string, shape: string): string[] => {
  const found = loadModel(file).shapes[shape];
  if (!found?.members) throw new Error(`${file} has no structure ${shape}`);
  return Object.keys(found.members).sort();
};

test.each([
  [
    'pinpoint-sms-voice-v2',
    'com.amazonaws.pinpointsmsvoicev2#SendTextMessageRequest',
    (sms as unknown as Record<string, unknown>)['SendTextMessageRequest$'],
  ],
  [
    'socialmessaging',
    'com.amazonaws.socialmessaging#SendWhatsAppMessageInput',
    (social as unknown as Record<string, unknown>)['SendWhatsAppMessageInput$'],
  ],
  [
    'socialmessaging',
    'com.amazonaws.socialmessaging#GetLinkedWhatsAppBusinessAccountPhoneNumberInput',
    (social as unknown as Record<string, unknown>)['GetLinkedWhatsAppBusinessAccountPhoneNumberInput$'],
  ],
])('%s %s has the members of the installed client', (file, shape, schema) => {
  expect(schema).toBeDefined();
  expect(modelMembers(file, shape)).toEqual(sdkMembers(schema));
});
