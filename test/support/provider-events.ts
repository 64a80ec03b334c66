/**
 * An AWS End User Messaging Social event as the WhatsApp Business Account's SNS event destination publishes it:
 * the AWS header of the user guide's "Message and event format" page
 * (https://docs.aws.amazon.com/social-messaging/latest/userguide/managing-event-destination-dlrs.html: `context`,
 * `whatsAppWebhookEntry` as a JSON string, `aws_account_id`, `message_timestamp`, `messageId`) around Meta's
 * webhook entry for a message status (WhatsApp Cloud API webhooks, `statuses[]` with `id` = the `wamid.…`,
 * `status`, `timestamp`, `recipient_id`, `biz_opaque_callback_data`, and `errors[]` when failed). `messageId` is
 * AWS's id of the message, the one SendWhatsAppMessage answered; `undefined` leaves it out, as AWS does on some
 * events.
 */
export const whatsAppSnsEvent = (options: {
  status: 'sent' | 'delivered' | 'read' | 'failed';
  reference: string | undefined;
  messageId: string | undefined;
  wamid?: string;
}) => ({
  context: {
    MetaWabaIds: [
      {
        wabaId: '1234567890abcde',
        arn: 'arn:aws:social-messaging:us-east-1:123456789012:waba/fb2594b8a7974770b128a409e2example',
      },
    ],
    MetaPhoneNumberIds: [
      {
        metaPhoneNumberId: 'abcde1234567890',
        arn: 'arn:aws:social-messaging:us-east-1:123456789012:phone-number-id/976c72a700aac43eaf573ae050example',
      },
    ],
  },
  whatsAppWebhookEntry: JSON.stringify({
    id: '1234567890abcde',
    changes: [
      {
        field: 'messages',
        value: {
          messaging_product: 'whatsapp',
          metadata: { display_phone_number: '15550984277', phone_number_id: 'abcde1234567890' },
          statuses: [
            {
              id: options.wamid ?? 'wamid.HBgLMTQxNTU1NTAxMDAVAgARGBI5QTNDQTVCM0Q0Q0Q2RTY3RTcA',
              status: options.status,
              timestamp: '1736379043',
              recipient_id: '14155550100',
              ...(options.reference !== undefined && { biz_opaque_callback_data: options.reference }),
              ...(options.status === 'failed' && {
                errors: [{ code: 131026, title: 'Message undeliverable' }],
              }),
            },
          ],
        },
      },
    ],
  }),
  aws_account_id: '123456789012',
  message_timestamp: '2025-01-08T23:30:43.271279391Z',
  ...(options.messageId !== undefined && { messageId: options.messageId }),
});
