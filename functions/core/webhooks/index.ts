/**
 * Customer webhooks (docs/webhooks.md): which changes of a verification are events, what an event carries, which
 * endpoints receive it, and the retry schedule. The events come from the table's change stream (a
 * transactional outbox: the write that changes a verification is the record of the event), so the OTP request
 * path does no extra work for them. Transport, signing keys, the queue and the stream are ports.
 */
export * from './deliveries';
export * from './endpoints';
export * from './events';
export * from './publish';
export * from './queue';
export * from './retries';
export * from './sender';
export * from './settings';
export * from './url';
