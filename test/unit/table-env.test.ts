import { tableFromEnv } from '../../functions/wiring/dynamo';

describe('tableFromEnv', () => {
  it('keeps DynamoDB Local on its own region when the shell sets AWS_REGION (npm start)', async () => {
    // DynamoDB Local keeps tables per region: a client in eu-west-1 finds none of the local stack's tables.
    const { client } = tableFromEnv({
      TABLE_NAME: 'otp-local',
      DYNAMODB_ENDPOINT: 'http://127.0.0.1:8000',
      AWS_REGION: 'eu-west-1',
    });
    expect(await client.config.region()).toBe('local');
  });

  it("uses the function's region on AWS (no endpoint)", async () => {
    const { client } = tableFromEnv({ TABLE_NAME: 'otp', AWS_REGION: 'eu-west-1' });
    expect(await client.config.region()).toBe('eu-west-1');
  });
});
