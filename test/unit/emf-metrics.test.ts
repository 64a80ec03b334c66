/**
 * The EMF adapter (functions/adapters/metrics.ts) as CloudWatch reads its lines: every value an invocation
 * recorded is published under the dimensions it was recorded with, however many there are.
 */
import { EmfMetrics } from '../../functions/adapters/metrics';
import { METRIC } from '../../functions/core/metrics';
import { emfProblems, flushedEmf, publishedMetrics, type EmfDocument } from '../support/emf';

test('more than 100 values of one metric keep their dimensions, in documents of the format', () => {
  const metrics = new EmfMetrics({ serviceName: 'otp-emf-test' });
  for (let i = 0; i < 250; i++) metrics.timing(METRIC.receiptLatency, i, { channel: 'sms' });
  metrics.count(METRIC.fallbacks, { channel: 'sms' });
  const documents = flushedEmf<EmfDocument>(metrics);
  for (const document of documents) expect(emfProblems(document)).toEqual([]);
  const published = publishedMetrics(documents);
  for (const metric of published)
    expect(metric.dimensions).toEqual({ service: 'otp-emf-test', channel: 'sms' });
  const values = documents.flatMap((document) => [document[METRIC.receiptLatency] ?? []].flat());
  expect(values).toHaveLength(250);
  expect(published.filter((metric) => metric.name === METRIC.fallbacks)).toHaveLength(1);
});
