/**
 * The bench's DynamoDB meter counts round trips as the handler waits them: requests sent together once, requests
 * one after another once each, with and without the API-key middleware's; a probe pricing writes (reads around
 * each) does not split requests sent together. DynamoDB Local.
 */
import { GetCommand, PutCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { DynamoMeter } from '../../bench/meter';
import { freshTable, type TestTable } from '../support/table';

let table: TestTable;
let TableName: string;

beforeAll(async () => {
  table = await freshTable('meter');
  TableName = table.name;
});
afterAll(() => table?.close());

function metered(withProbe: boolean) {
  const client = table.client();
  const probe = table.client();
  const meter = new DynamoMeter('test', withProbe ? probe : undefined);
  meter.attach(client);
  return { client, meter };
}

const get = (client: DynamoDBDocumentClient, pk: string) =>
  client.send(new GetCommand({ TableName, Key: { pk, sk: pk } }));
/** A write on an API key's item: the meter counts it as the API-key middleware's. */
const keyWrite = (client: DynamoDBDocumentClient) =>
  client.send(
    new UpdateCommand({
      TableName,
      Key: { pk: 'APIKEY#meter', sk: 'APIKEY' },
      UpdateExpression: 'ADD hits :one',
      ExpressionAttributeValues: { ':one': 1 },
    }),
  );
const put = (client: DynamoDBDocumentClient, pk: string) =>
  client.send(new PutCommand({ TableName, Item: { pk, sk: pk, at: Date.now() } }));

/** What one piece of work added to the meter's counts. */
async function counted(meter: DynamoMeter, work: () => Promise<unknown>) {
  const [calls, roundTrips, ownRoundTrips] = [meter.calls, meter.roundTrips, meter.ownRoundTrips];
  await work();
  return {
    calls: meter.calls - calls,
    roundTrips: meter.roundTrips - roundTrips,
    ownRoundTrips: meter.ownRoundTrips - ownRoundTrips,
  };
}

describe.each([false, true])('DynamoMeter round trips (probe pricing writes: %s)', (withProbe) => {
  it('counts requests sent together once and requests one after another once each', async () => {
    const { client, meter } = metered(withProbe);
    expect(await counted(meter, () => Promise.all([get(client, 'A'), get(client, 'B')]))).toEqual({
      calls: 2,
      roundTrips: 1,
      ownRoundTrips: 1,
    });
    expect(
      await counted(meter, async () => {
        await get(client, 'A');
        await put(client, 'B');
      }),
    ).toEqual({ calls: 2, roundTrips: 2, ownRoundTrips: 2 });
  });

  it("leaves the API key's write out of the operation's own round trips, beside a read or before a write", async () => {
    const { client, meter } = metered(withProbe);
    // A fetch: the key's write and the read together.
    expect(await counted(meter, () => Promise.all([keyWrite(client), get(client, 'V')]))).toEqual({
      calls: 2,
      roundTrips: 1,
      ownRoundTrips: 1,
    });
    // A check: the key's write, then the operation's.
    expect(
      await counted(meter, async () => {
        await keyWrite(client);
        await put(client, 'V');
      }),
    ).toEqual({ calls: 2, roundTrips: 2, ownRoundTrips: 1 });
  });
});
