import { createHash } from 'node:crypto';
import { CfnOutput, Duration, Lazy, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpUserPoolAuthorizer } from 'aws-cdk-lib/aws-apigatewayv2-authorizers';
import * as cognito from 'aws-cdk-lib/aws-cognito';
import type { ICommandHooks, NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { Construct } from 'constructs';
import { OPERATOR_GROUP } from '../../functions/console/routes';
import { CONSOLE_SCRIPT_TARGETS } from '../console-assets';
import { Grouping } from './logical-ids';

/**
 * Puts the console's files beside the console function's bundle (`console/`), where functions/entries/console.ts reads
 * them: esbuild (the project's own, already used for the bundles) builds console/ui as lib/console-assets.ts does
 * for the local stack. Shell commands, since CDK renders them for Docker bundling too.
 */
export const CONSOLE_BUNDLING_HOOKS: ICommandHooks = {
  beforeBundling: () => [],
  beforeInstall: () => [],
  afterBundling: (inputDir: string, outputDir: string): string[] => {
    const q = (path: string) => `'${path.replace(/'/g, `'\\''`)}'`;
    const esbuild = q(`${inputDir}/node_modules/.bin/esbuild`);
    const ui = (file: string) => q(`${inputDir}/console/ui/${file}`);
    const out = (file: string) => q(`${outputDir}/console/${file}`);
    return [
      `mkdir -p ${q(`${outputDir}/console`)}`,
      `${esbuild} ${ui('main.ts')} --bundle --minify --format=iife --legal-comments=none --log-level=error ` +
        `--target=${CONSOLE_SCRIPT_TARGETS.join(',')} --outfile=${out('app.js')}`,
      `${esbuild} ${ui('style.css')} --bundle --minify --log-level=error --outfile=${out('app.css')}`,
      `cp ${ui('index.html')} ${out('index.html')}`,
    ];
  },
};

export interface OtpConsoleProps {
  api: HttpApi;
  /** The console function (lib/functions.ts `console`): it learns the sign-in settings from its environment. */
  consoleFunction: NodejsFunction;
}

/**
 * The console's sign-in: a Cognito user pool (no self sign-up: an operator invites each user; TOTP MFA required),
 * its `operators` group, a hosted sign-in domain, a public app client (authorization code with PKCE, back to
 * `<ApiUrl>/console`) and the HTTP API's JWT authorizer that guards every `/console/api` route
 * (lib/constructs/otp-api.ts puts it on the routes the manifest marks `authorizer: 'console'`).
 */
export class OtpConsole extends Grouping {
  readonly userPool: cognito.UserPool;
  readonly client: cognito.UserPoolClient;
  readonly authorizer: HttpUserPoolAuthorizer;
  readonly domain: cognito.UserPoolDomain;
  /** Where sign-in may return to: the console on each origin that serves it (the page sends `<origin>/console`). */
  private readonly signInUrls: string[];

  constructor(scope: Construct, id: string, props: OtpConsoleProps) {
    super(scope, id);
    const stack = Stack.of(this);
    this.userPool = new cognito.UserPool(this, 'ConsoleUserPool', {
      userPoolName: `${stack.stackName}-console`,
      selfSignUpEnabled: false,
      signInAliases: { email: true },
      autoVerify: { email: true },
      standardAttributes: { email: { required: true, mutable: true } },
      passwordPolicy: {
        minLength: 12,
        requireLowercase: true,
        requireUppercase: true,
        requireDigits: true,
        requireSymbols: true,
        tempPasswordValidity: Duration.days(3),
      },
      mfa: cognito.Mfa.REQUIRED,
      mfaSecondFactor: { otp: true, sms: false },
      accountRecovery: cognito.AccountRecovery.EMAIL_ONLY,
      // The users are the customers' people: they outlive a redeploy, like the table.
      removalPolicy: RemovalPolicy.RETAIN,
      deletionProtection: true,
    });
    const plusReason =
      'Threat protection needs the Plus feature plan (priced per user); the console requires TOTP MFA, has no ' +
      'self sign-up, and every user is invited by an operator (docs/console.md).';
    Validations.of(this.userPool).acknowledge({ id: 'AwsSolutions-COG3', reason: plusReason });
    Validations.of(this.userPool).acknowledge({ id: 'AwsSolutions-COG8', reason: plusReason });
    new cognito.CfnUserPoolGroup(this, 'ConsoleOperatorsGroup', {
      userPoolId: this.userPool.userPoolId,
      groupName: OPERATOR_GROUP,
      description: 'Console operators: see every service, create services, top up balances',
    });
    // Domain prefixes are global per region: the account and a hash of the stack name keep them apart.
    const suffix = createHash('sha256').update(stack.stackName).digest('hex').slice(0, 8);
    this.domain = this.userPool.addDomain('ConsoleDomain', {
      cognitoDomain: { domainPrefix: `otp-console-${suffix}-${stack.account}` },
    });
    const consoleUrl = `${props.api.apiEndpoint}/console`;
    this.client = this.userPool.addClient('ConsoleClient', {
      generateSecret: false,
      authFlows: {},
      oAuth: {
        flows: { authorizationCodeGrant: true },
        scopes: [cognito.OAuthScope.OPENID, cognito.OAuthScope.EMAIL],
        callbackUrls: [consoleUrl],
        logoutUrls: [consoleUrl],
      },
      supportedIdentityProviders: [cognito.UserPoolClientIdentityProvider.COGNITO],
      preventUserExistenceErrors: true,
      idTokenValidity: Duration.hours(1),
      accessTokenValidity: Duration.hours(1),
      refreshTokenValidity: Duration.hours(12),
      enableTokenRevocation: true,
    });
    this.authorizer = new HttpUserPoolAuthorizer('ConsoleAuthorizer', this.userPool, {
      userPoolClients: [this.client],
      identitySource: ['$request.header.Authorization'],
    });
    this.signInUrls = [consoleUrl];
    const client = this.client.node.defaultChild as cognito.CfnUserPoolClient;
    // Read at synthesis, so that an origin added later (the edge's) is in the list.
    client.callbackUrLs = Lazy.list({ produce: () => this.signInUrls });
    client.logoutUrLs = Lazy.list({ produce: () => this.signInUrls });
    props.consoleFunction.addEnvironment('CONSOLE_AUTH_URL', this.domain.baseUrl());
    props.consoleFunction.addEnvironment('CONSOLE_CLIENT_ID', this.client.userPoolClientId);

    new CfnOutput(stack, 'ConsoleUrl', {
      description: 'The account console (sign in with a user of ConsoleUserPoolId; docs/console.md)',
      // The last origin added: with otp:edge, the edge's, so the console is used behind its WebACL.
      value: Lazy.string({ produce: () => this.signInUrls[this.signInUrls.length - 1] }),
    });
    new CfnOutput(stack, 'ConsoleUserPoolId', {
      description:
        'The console user pool: invite users with admin-create-user, then npm run admin -- member add',
      value: this.userPool.userPoolId,
    });
  }

  /** Also serve the console's sign-in at another base URL (the edge's), `<baseUrl>/console`. */
  addOrigin(baseUrl: string): void {
    this.signInUrls.push(`${baseUrl}/console`);
  }
}
