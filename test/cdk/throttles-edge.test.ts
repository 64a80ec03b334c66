/**
 * One flood must not stop everyone: each route's own API Gateway throttle, sized from the capacity target
 * (docs/deploy.md, "Throttling"), and the optional edge (`otp:edge`): CloudFront with an AWS WAF WebACL whose rate
 * rules count by API key, and by IP address only where no key is sent or for the console. Unbundled synths.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { ASSUMPTIONS, edgeCost } from '../../bench/cost';
import { readConfig } from '../../lib/config';
import { ROUTES } from '../../lib/functions';
import { OtpStack } from '../../lib/otp-stack';
import { CDK_CONTEXT, synthUnbundled, testApp, type Resources } from '../support/cdk';

type Synth = ReturnType<typeof synthUnbundled>;
const stageOf = (resources: Resources) =>
  Object.values(resources).find((r) => r.Type === 'AWS::ApiGatewayV2::Stage')!.Properties;
const ofType = (resources: Resources, type: string) =>
  Object.values(resources).filter((r) => r.Type === type);

describe('route throttles (default edge off)', () => {
  let plain: Synth;
  beforeAll(() => {
    plain = synthUnbundled();
  }, 60_000);
  afterAll(() => plain.cleanup());

  test('each route has its own limit: 1,000 sends/s and their checks and fetches, receipts, a small console', () => {
    const stage = stageOf(plain.resources);
    const limit = (rate: number, burst: number) => ({
      ThrottlingRateLimit: rate,
      ThrottlingBurstLimit: burst,
    });
    expect(stage.RouteSettings).toEqual({
      'POST /v2/Services/{ServiceSid}/Verifications': limit(1000, 2000),
      'POST /v2/Services/{ServiceSid}/VerificationCheck': limit(1000, 2000),
      'GET /v2/Services/{ServiceSid}/Verifications/{VerificationSid}': limit(2000, 4000),
      'POST /v2/Callbacks/{Provider}': limit(3000, 5000),
      'GET /console': limit(20, 40),
      'GET /console/{asset}': limit(20, 40),
      'ANY /console/api/{proxy+}': limit(20, 40),
    });
    // Every key names a real route (a key that matches no route limits nothing), and every route has a key.
    const routeKeys = ofType(plain.resources, 'AWS::ApiGatewayV2::Route').map((r) => r.Properties.RouteKey);
    expect(Object.keys(stage.RouteSettings as object).sort()).toEqual(
      routeKeys.filter((key) => key !== '$default').sort(),
    );
    expect(Object.keys(stage.RouteSettings as object)).toHaveLength(ROUTES.length);
    // The stage's default now limits only `$default` (requests that match no route).
    expect(stage.DefaultRouteSettings).toEqual(limit(100, 200));
  });

  test('under the account quota per region (10,000 requests/s): the routes’ rates add up to less', () => {
    const settings = Object.values(
      stageOf(plain.resources).RouteSettings as Record<string, { ThrottlingRateLimit: number }>,
    );
    const total = settings.reduce((sum, route) => sum + route.ThrottlingRateLimit, 0) + 100;
    expect(total).toBeLessThan(10_000);
  });

  test('no edge by default: no distribution, no WebACL, no region rule', () => {
    expect(ofType(plain.resources, 'AWS::CloudFront::Distribution')).toEqual([]);
    expect(ofType(plain.resources, 'AWS::WAFv2::WebACL')).toEqual([]);
    expect(Object.keys(plain.template.toJSON().Rules as object)).toEqual(['CheckBootstrapVersion']);
    expect(plain.stack.edge).toBeUndefined();
  });

  test('each group is set from context', () => {
    const custom = synthUnbundled({
      'otp:apiThrottleRateLimit': '50',
      'otp:apiThrottleBurstLimit': 80,
      'otp:consoleThrottleRateLimit': '5',
      'otp:consoleThrottleBurstLimit': '6',
      'otp:receiptThrottleRateLimit': '70',
      'otp:receiptThrottleBurstLimit': '90',
    });
    try {
      const settings = stageOf(custom.resources).RouteSettings as Record<string, object>;
      expect(settings['POST /v2/Services/{ServiceSid}/Verifications']).toEqual({
        ThrottlingRateLimit: 50,
        ThrottlingBurstLimit: 80,
      });
      expect(settings['GET /v2/Services/{ServiceSid}/Verifications/{VerificationSid}']).toEqual({
        ThrottlingRateLimit: 100,
        ThrottlingBurstLimit: 160,
      });
      expect(settings['ANY /console/api/{proxy+}']).toEqual({
        ThrottlingRateLimit: 5,
        ThrottlingBurstLimit: 6,
      });
      expect(settings['POST /v2/Callbacks/{Provider}']).toEqual({
        ThrottlingRateLimit: 70,
        ThrottlingBurstLimit: 90,
      });
    } finally {
      custom.cleanup();
    }
  });
});

describe('the edge (otp:edge)', () => {
  let edge: Synth;
  beforeAll(() => {
    edge = synthUnbundled({ 'otp:edge': true });
  }, 60_000);
  afterAll(() => edge.cleanup());

  const webAcl = () => ofType(edge.resources, 'AWS::WAFv2::WebACL')[0]!.Properties;
  const rule = (name: string) =>
    (webAcl().Rules as { Name: string; Statement: Record<string, unknown>; Action?: unknown }[]).find(
      (r) => r.Name === name,
    )!;
  const notStatement = (statement: object) => ({ NotStatement: { Statement: statement } });
  const pathStartsWith = (prefix: string) => ({
    ByteMatchStatement: {
      FieldToMatch: { UriPath: {} },
      PositionalConstraint: 'STARTS_WITH',
      SearchString: prefix,
      TextTransformations: [{ Priority: 0, Type: 'NONE' }],
    },
  });

  test('CloudFront in front of the HTTP API: nothing cached, everything forwarded, HTTPS both ways, the WebACL', () => {
    const distributions = ofType(edge.resources, 'AWS::CloudFront::Distribution');
    expect(distributions).toHaveLength(1);
    const config = distributions[0]!.Properties.DistributionConfig as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    const apiId = edge.stack.resolve(edge.stack.api.apiId) as { Ref: string };
    expect(config.WebACLId).toEqual({ 'Fn::GetAtt': [expect.stringMatching(/^EdgeWebAcl/), 'Arn'] });
    expect(JSON.stringify(config.Origins[0].DomainName)).toContain(apiId.Ref);
    expect(config.Origins[0].CustomOriginConfig).toMatchObject({
      OriginProtocolPolicy: 'https-only',
      OriginSSLProtocols: ['TLSv1.2'],
    });
    expect(config.DefaultCacheBehavior).toMatchObject({
      ViewerProtocolPolicy: 'https-only',
      AllowedMethods: ['GET', 'HEAD', 'OPTIONS', 'PUT', 'PATCH', 'POST', 'DELETE'],
      // The managed policies CachingDisabled and AllViewerExceptHostHeader.
      CachePolicyId: '4135ea2d-6df8-44a3-9df3-4b5a84be39ad',
      OriginRequestPolicyId: 'b689b0a8-53d0-40ab-baf2-68738e2966ac',
    });
    edge.template.hasOutput('EdgeUrl', { Value: Match.anyValue() });
    // The console's URL is the edge's too: behind the WebACL, as the API is.
    const outputs = edge.template.toJSON().Outputs as Record<string, { Value: unknown }>;
    expect(JSON.stringify(outputs.ConsoleUrl!.Value)).toBe(
      JSON.stringify({
        'Fn::Join': [
          '',
          [...(outputs.EdgeUrl!.Value as { 'Fn::Join': [string, unknown[]] })['Fn::Join'][1], '/console'],
        ],
      }),
    );
  });

  test('the WebACL: CLOUDFRONT scope, AWS managed groups, allow by default; the bench prices its rules', () => {
    expect(webAcl()).toMatchObject({ Scope: 'CLOUDFRONT', DefaultAction: { Allow: {} } });
    // WAF bills per rule (a managed group is one): the bench's edge row counts them.
    expect(webAcl().Rules).toHaveLength(ASSUMPTIONS.edgeWafRules);
    const perVerification = { apiGatewayRequests: 5 } as Parameters<typeof edgeCost>[0]['perVerification'];
    expect(
      edgeCost({
        perVerification,
        totalWithReceiptsOnFunctionUrl: { measured: 0, projected: 0, callbacks: 1 },
      }),
    ).toEqual({ requests: 4, usdPerMillion: 6.72, usdPerMonth: 11 });
    const managed = (webAcl().Rules as { Statement: { ManagedRuleGroupStatement?: { Name: string } } }[])
      .map((r) => r.Statement.ManagedRuleGroupStatement?.Name)
      .filter(Boolean);
    expect(managed).toEqual([
      'AWSManagedRulesAmazonIpReputationList',
      'AWSManagedRulesCommonRuleSet',
      'AWSManagedRulesKnownBadInputsRuleSet',
    ]);
  });

  test('a rate limit per API key: X-API-Key as the aggregation key, ten times the handlers’ per-key limit', () => {
    expect(rule('PerApiKeyRate')).toMatchObject({
      Action: { Block: {} },
      Statement: {
        RateBasedStatement: {
          AggregateKeyType: 'CUSTOM_KEYS',
          CustomKeys: [
            { Header: { Name: 'x-api-key', TextTransformations: [{ Priority: 0, Type: 'NONE' }] } },
          ],
          Limit: 1200,
          EvaluationWindowSec: 60,
        },
      },
    });
    // No scope-down: every keyed request counts against its key, whatever its path.
    expect(
      (rule('PerApiKeyRate').Statement.RateBasedStatement as Record<string, unknown>).ScopeDownStatement,
    ).toBeUndefined();
  });

  test('per IP only without a key (receipt callbacks aside) and for the console: a keyed backend is never cut by IP', () => {
    const keyless = rule('PerIpRateWithoutKey').Statement.RateBasedStatement;
    expect(keyless).toEqual({
      AggregateKeyType: 'IP',
      Limit: 300,
      EvaluationWindowSec: 60,
      ScopeDownStatement: {
        AndStatement: {
          Statements: [
            notStatement({
              SizeConstraintStatement: {
                FieldToMatch: { SingleHeader: { Name: 'x-api-key' } },
                ComparisonOperator: 'GT',
                Size: 0,
                TextTransformations: [{ Priority: 0, Type: 'NONE' }],
              },
            }),
            notStatement(pathStartsWith('/v2/Callbacks/')),
            notStatement(pathStartsWith('/console')),
          ],
        },
      },
    });
    expect(rule('PerIpRateConsole').Statement.RateBasedStatement).toEqual({
      AggregateKeyType: 'IP',
      Limit: 300,
      EvaluationWindowSec: 60,
      ScopeDownStatement: pathStartsWith('/console'),
    });
    // Every IP-keyed rule is scoped down: none counts all requests of an address.
    for (const r of webAcl().Rules as { Statement: { RateBasedStatement?: Record<string, unknown> } }[]) {
      const rate = r.Statement.RateBasedStatement;
      if (rate?.AggregateKeyType === 'IP') expect(rate.ScopeDownStatement).toBeDefined();
    }
  });

  test('the deploy is refused outside us-east-1 (a CLOUDFRONT WebACL exists only there)', () => {
    const rules = edge.template.toJSON().Rules as Record<string, { Assertions: { Assert: unknown }[] }>;
    const { CheckBootstrapVersion, ...ours } = rules;
    expect(CheckBootstrapVersion).toBeDefined();
    expect(Object.values(ours).map((r) => r.Assertions.map((a) => a.Assert))).toEqual([
      [{ 'Fn::Equals': [{ Ref: 'AWS::Region' }, 'us-east-1'] }],
    ]);
    const app = testApp({ context: { ...CDK_CONTEXT, 'aws:cdk:bundling-stacks': [], 'otp:edge': true } });
    expect(
      () => new OtpStack(app, 'Elsewhere', { env: { account: '123456789012', region: 'eu-west-1' } }),
    ).toThrow(/us-east-1/);
  });

  test('the console signs in through the edge as well as at the API', () => {
    const [client] = ofType(edge.resources, 'AWS::Cognito::UserPoolClient');
    const urls = JSON.stringify(client!.Properties.CallbackURLs);
    expect(client!.Properties.CallbackURLs).toHaveLength(2);
    expect(urls).toContain('DomainName');
    expect(client!.Properties.LogoutURLs).toEqual(client!.Properties.CallbackURLs);
  });

  test('cdk-nag: nothing unacknowledged, with the edge on', () => {
    const report = new AwsSolutionsChecks().validateScope(edge.app);
    expect(report.violations.map((v) => `${v.severity} ${v.ruleName}`)).toEqual([]);
    expect(report.success).toBe(true);
    expect(Annotations.fromStack(edge.stack).findError('*', Match.anyValue())).toEqual([]);
  });
});

describe('edge settings', () => {
  const config = (context: Record<string, unknown>) => {
    const outdir = mkdtempSync(path.join(tmpdir(), 'cdk.out'));
    try {
      return readConfig(new App({ context, outdir }).node);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  };

  test('the per-key limit follows otp:keyRequestsPerMinute unless set', () => {
    expect(config({ 'otp:edge': 'true' }).edge).toEqual({
      keyRequestsPerMinute: 1200,
      ipRequestsPerMinute: 300,
    });
    expect(config({ 'otp:edge': true, 'otp:keyRequestsPerMinute': 600 }).edge?.keyRequestsPerMinute).toBe(
      6000,
    );
    expect(
      config({ 'otp:edge': true, 'otp:edgeKeyRequestsPerMinute': 50, 'otp:edgeIpRequestsPerMinute': '20' })
        .edge,
    ).toEqual({ keyRequestsPerMinute: 50, ipRequestsPerMinute: 20 });
    expect(config({}).edge).toBeUndefined();
  });

  test.each([
    [{ 'otp:edge': 'yes' }, /otp:edge must be true or false/],
    [{ 'otp:edgeKeyRequestsPerMinute': 500 }, /needs otp:edge=true/],
    [
      { 'otp:edge': true, 'otp:edgeIpRequestsPerMinute': 5 },
      /otp:edgeIpRequestsPerMinute must be a whole number >= 10/,
    ],
    [{ 'otp:apiThrottleRateLimit': '0' }, /otp:apiThrottleRateLimit/],
    [{ 'otp:consoleThrottleBurstLimit': 'some' }, /otp:consoleThrottleBurstLimit/],
  ])('refuses %j at synth time', (context, message) => {
    expect(() => config(context)).toThrow(message);
  });
});
