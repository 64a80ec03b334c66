/**
 * The EventBridge envelope of an AWS End User Messaging SMS event, as the user guide's "Monitoring with
 * EventBridge" sample shows it (https://docs.aws.amazon.com/sms-voice/latest/userguide/monitor-event-bridge.html);
 * the tests put their own `detail` in it.
 */
export const smsVoiceEventBridgeEvent = (detail: unknown, time = '2025-10-01T18:20:41Z') => ({
  version: '0',
  id: '5c0fa4f8-e4ba-ed02-6101-c795472fccd0',
  'detail-type': 'Text Message Delivery Status Updated',
  source: 'aws.sms-voice',
  account: '111122223333',
  time,
  region: 'us-east-1',
  resources: [],
  detail,
});
