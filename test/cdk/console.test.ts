/**
 * The console's resources in the template: the user pool and its client, the JWT authorizer on every console API
 * route and on nothing else, the page served by the console function, its outputs and its grants.
 */
import { Match } from 'aws-cdk-lib/assertions';
import { ROUTES } from '../../lib/functions';
import { logicalIdIn, synthUnbundled } from '../support/cdk';

const { stack, template, resources, cleanup } = synthUnbundled();
afterAll(cleanup);
const logicalId = (construct: Parameters<typeof logicalIdIn>[1]) => logicalIdIn(stack, construct);
const ref = (id: string) => ({ Ref: id });
const routeResources = () =>
  Object.values(resources).filter((r) => r.Type === 'AWS::ApiGatewayV2::Route') as unknown as {
    Properties: { RouteKey: string; AuthorizationType: string; AuthorizerId?: unknown; Target: unknown };
  }[];

test('a user pool: no self sign-up, e-mail sign-in, TOTP MFA required, strong passwords, kept on delete', () => {
  const poolId = logicalId(stack.console.userPool);
  const pool = resources[poolId]!;
  expect(pool.Properties).toMatchObject({
    AdminCreateUserConfig: { AllowAdminCreateUserOnly: true },
    UsernameAttributes: ['email'],
    MfaConfiguration: 'ON',
    EnabledMfas: ['SOFTWARE_TOKEN_MFA'],
    Policies: {
      PasswordPolicy: {
        MinimumLength: 12,
        RequireLowercase: true,
        RequireUppercase: true,
        RequireNumbers: true,
        RequireSymbols: true,
      },
    },
    DeletionProtection: 'ACTIVE',
  });
  expect((pool as unknown as { DeletionPolicy: string }).DeletionPolicy).toBe('Retain');
  template.hasResourceProperties('AWS::Cognito::UserPoolGroup', {
    GroupName: 'operators',
    UserPoolId: ref(poolId),
  });
  template.resourceCountIs('AWS::Cognito::UserPool', 1);
});

test('a public app client: authorization code only, back to <ApiUrl>/console, no secret', () => {
  const client = resources[logicalId(stack.console.client)]!;
  expect(client.Properties).toMatchObject({
    GenerateSecret: false,
    AllowedOAuthFlows: ['code'],
    AllowedOAuthFlowsUserPoolClient: true,
    AllowedOAuthScopes: ['openid', 'email'],
    SupportedIdentityProviders: ['COGNITO'],
    PreventUserExistenceErrors: 'ENABLED',
    CallbackURLs: [
      { 'Fn::Join': ['', [{ 'Fn::GetAtt': [logicalId(stack.api), 'ApiEndpoint'] }, '/console']] },
    ],
  });
  // No password flows: the hosted sign-in (with MFA) is the only way to a token.
  expect(client.Properties.ExplicitAuthFlows).toBeUndefined();
});

test('the JWT authorizer trusts exactly this pool and this client', () => {
  template.resourceCountIs('AWS::ApiGatewayV2::Authorizer', 1);
  template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
    AuthorizerType: 'JWT',
    IdentitySource: ['$request.header.Authorization'],
    JwtConfiguration: {
      Audience: [ref(logicalId(stack.console.client))],
      Issuer: {
        'Fn::Join': [
          '',
          [
            'https://cognito-idp.',
            ref('AWS::Region'),
            '.amazonaws.com/',
            ref(logicalId(stack.console.userPool)),
          ],
        ],
      },
    },
  });
});

test('every console API route has the authorizer; the page, its files and the public API do not', () => {
  const apiRoutes = ROUTES.filter((r) => r.authorizer === 'console').map((r) => `${r.method} ${r.path}`);
  expect(apiRoutes).toEqual(['ANY /console/api/{proxy+}']);
  const authorizerId = Object.entries(resources).find(
    ([, r]) => r.Type === 'AWS::ApiGatewayV2::Authorizer',
  )![0];
  for (const route of routeResources()) {
    const guarded = route.Properties.RouteKey.startsWith('ANY /console/api/');
    expect([
      route.Properties.RouteKey,
      route.Properties.AuthorizationType,
      route.Properties.AuthorizerId,
    ]).toEqual([
      route.Properties.RouteKey,
      guarded ? 'JWT' : 'NONE',
      guarded ? ref(authorizerId) : undefined,
    ]);
  }
  // Every path under /console/api is one of the guarded routes: none is served by another route.
  const consoleKeys = routeResources()
    .map((r) => r.Properties.RouteKey)
    .filter((key) => key.includes('/console'));
  expect(consoleKeys.sort()).toEqual(['ANY /console/api/{proxy+}', 'GET /console', 'GET /console/{asset}']);
});

test('the console function serves its routes and learns the sign-in settings, nothing secret', () => {
  const fn = resources[logicalId(stack.functions.console)]!;
  const variables = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
  expect(variables.CONSOLE_CLIENT_ID).toEqual(ref(logicalId(stack.console.client)));
  expect(JSON.stringify(variables.CONSOLE_AUTH_URL)).toContain(logicalId(stack.console.domain));
  const targets = new Set(
    routeResources()
      .filter((r) => r.Properties.RouteKey.includes('/console'))
      .map((r) => JSON.stringify(r.Properties.Target)),
  );
  // One integration for the three routes.
  expect(targets.size).toBe(1);
});

test('outputs: the console URL and the user pool to invite users into', () => {
  template.hasOutput('ConsoleUrl', {
    Value: { 'Fn::Join': ['', [{ 'Fn::GetAtt': [logicalId(stack.api), 'ApiEndpoint'] }, '/console']] },
  });
  template.hasOutput('ConsoleUserPoolId', { Value: ref(logicalId(stack.console.userPool)) });
});

test("the hosted sign-in domain is the stack's own (account and a hash of the stack name)", () => {
  template.hasResourceProperties('AWS::Cognito::UserPoolDomain', {
    Domain: {
      'Fn::Join': ['', [Match.stringLikeRegexp('^otp-console-[0-9a-f]{8}-$'), ref('AWS::AccountId')]],
    },
  });
});
