/** The EMF lines a metrics adapter writes on `flush`, read from stdout as CloudWatch would read them. */
export function flushedEmf<T = Record<string, unknown>>(metrics: { flush(): void }): T[] {
  const written: string[] = [];
  const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  });
  try {
    metrics.flush();
  } finally {
    spy.mockRestore();
  }
  return written
    .join('')
    .split('\n')
    .filter((line) => line.includes('"_aws"'))
    .map((line) => JSON.parse(line) as T);
}

/** An embedded-metric-format document: the `_aws` metadata and the root members it names. */
export interface EmfDocument {
  _aws: {
    Timestamp: number;
    CloudWatchMetrics: {
      Namespace: string;
      Dimensions: string[][];
      Metrics: { Name: string; Unit?: string }[];
    }[];
  };
  [member: string]: unknown;
}

/** A metric as CloudWatch extracts it from a document: once per dimension set of its directive. */
export interface PublishedMetric {
  namespace: string;
  name: string;
  unit: string | undefined;
  dimensions: Record<string, unknown>;
}

export function publishedMetrics(documents: EmfDocument[]): PublishedMetric[] {
  return documents.flatMap((document) =>
    document._aws.CloudWatchMetrics.flatMap((directive) =>
      directive.Dimensions.flatMap((set) =>
        directive.Metrics.map((metric) => ({
          namespace: directive.Namespace,
          name: metric.Name,
          unit: metric.Unit,
          dimensions: Object.fromEntries(set.map((key) => [key, document[key]])),
        })),
      ),
    ),
  );
}

/** MetricDatum's units (CloudWatch API reference): an EMF unit outside them is not a valid metric unit. */
const UNITS = new Set([
  'Seconds',
  'Microseconds',
  'Milliseconds',
  'Bytes',
  'Kilobytes',
  'Megabytes',
  'Gigabytes',
  'Terabytes',
  'Bits',
  'Kilobits',
  'Megabits',
  'Gigabits',
  'Terabits',
  'Percent',
  'Count',
  'Bytes/Second',
  'Kilobytes/Second',
  'Megabytes/Second',
  'Gigabytes/Second',
  'Terabytes/Second',
  'Bits/Second',
  'Kilobits/Second',
  'Megabits/Second',
  'Gigabits/Second',
  'Terabits/Second',
  'Count/Second',
  'None',
]);

/** CloudWatch takes an EMF document's metrics if their timestamp is at most 14 days old and 2 hours ahead. */
const MAX_PAST_MS = 14 * 86_400_000;
const MAX_FUTURE_MS = 2 * 3_600_000;

/**
 * What in a document breaks CloudWatch's embedded metric format specification (none: an empty list): the
 * `_aws` metadata with a Timestamp in milliseconds and at least one directive; each directive's namespace, at
 * most 30 keys per dimension set and 100 metric definitions; every dimension a root member with a string
 * value; every metric a root member holding a number or at most 100 numbers, with a CloudWatch unit.
 */
export function emfProblems(document: EmfDocument, now = Date.now()): string[] {
  const problems: string[] = [];
  const aws = document._aws as Partial<EmfDocument['_aws']> | undefined;
  if (typeof aws !== 'object' || aws === null) return ['no _aws object'];
  const { Timestamp, CloudWatchMetrics } = aws;
  if (!Number.isInteger(Timestamp)) problems.push(`Timestamp ${String(Timestamp)} is not an integer`);
  else if (Timestamp! < now - MAX_PAST_MS || Timestamp! > now + MAX_FUTURE_MS)
    problems.push(`Timestamp ${Timestamp} is not milliseconds of now (${now})`);
  if (!Array.isArray(CloudWatchMetrics) || CloudWatchMetrics.length === 0)
    return [...problems, 'no CloudWatchMetrics directive'];
  for (const directive of CloudWatchMetrics) {
    if (typeof directive.Namespace !== 'string' || directive.Namespace.length === 0)
      problems.push('a directive without a Namespace');
    if (!Array.isArray(directive.Dimensions) || directive.Dimensions.length === 0)
      problems.push(`${directive.Namespace}: no dimension set`);
    for (const set of directive.Dimensions ?? []) {
      if (set.length > 30) problems.push(`a dimension set of ${set.length} keys (at most 30)`);
      for (const key of set) {
        const value = document[key];
        if (typeof value !== 'string' || value.length === 0 || value.length > 1024)
          problems.push(`dimension ${key} is ${JSON.stringify(value)}, not a string of 1 to 1024 characters`);
      }
    }
    if (!Array.isArray(directive.Metrics) || directive.Metrics.length === 0)
      problems.push(`${directive.Namespace}: no metric definition`);
    else if (directive.Metrics.length > 100)
      problems.push(`${directive.Metrics.length} metric definitions (at most 100)`);
    for (const { Name, Unit } of directive.Metrics ?? []) {
      const value = document[Name];
      const values = Array.isArray(value) ? (value as unknown[]) : [value];
      if (values.length === 0 || values.length > 100 || !values.every((v) => Number.isFinite(v)))
        problems.push(`metric ${Name} is ${JSON.stringify(value)}, not a number or 1 to 100 numbers`);
      if (Unit !== undefined && !UNITS.has(Unit)) problems.push(`metric ${Name} has unit ${Unit}`);
    }
  }
  return problems;
}
