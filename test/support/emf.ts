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
