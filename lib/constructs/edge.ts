import { CfnOutput, CfnRule, Fn, Aws, Stack, Token, Validations } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudfront from 'aws-cdk-lib/aws-cloudfront';
import * as origins from 'aws-cdk-lib/aws-cloudfront-origins';
import * as wafv2 from 'aws-cdk-lib/aws-wafv2';
import type { Construct } from 'constructs';
import type { EdgeConfig } from '../config';
import { RECEIPT_ROUTE } from '../../functions/http/routes';
import { Grouping } from './logical-ids';

/** A WebACL of scope CLOUDFRONT exists only in this region (AWS WAF's rule for CloudFront). */
const EDGE_REGION = 'us-east-1';
/** The header that carries the API key (docs/api.md); WAF compares header names without regard to case. */
const API_KEY_HEADER = 'x-api-key';
/** Where the console's page, files and API live (lib/functions.ts, the console's routes). */
const CONSOLE_PATH_PREFIX = '/console';
/** Where the providers post receipts: no API key, a few provider addresses, high rates (see the rules). */
const CALLBACK_PATH_PREFIX = RECEIPT_ROUTE.path.slice(0, RECEIPT_ROUTE.path.indexOf('{'));
/** Rate-based rules count over this window; the limits are per window, so per minute here. */
const RATE_WINDOW_SECONDS = 60;

export interface OtpEdgeProps {
  api: HttpApi;
  edge: EdgeConfig;
}

/**
 * `otp:edge`: CloudFront in front of the HTTP API, with an AWS WAF WebACL (an HTTP API cannot have one itself).
 * Nothing is cached: every request goes to the API, as before, after the WebACL's rules:
 *
 * - AWS's managed IP reputation list, common rule set and known bad inputs;
 * - a rate limit per API key (`X-API-Key` as the aggregation key), far above the handlers' own per-key limit;
 * - per IP address, only for requests that carry no key (outside the receipt callbacks) and for the console.
 *   Callers of the API are backends behind few addresses, so an IP limit on keyed requests would cut a busy
 *   service; its keys are limited by key instead.
 *
 * The WebACL must be created in us-east-1, so with the edge the whole stack is: a CloudFormation rule refuses the
 * deploy elsewhere before anything is created (docs/deploy.md, "The edge", says why and what it gives up).
 */
export class OtpEdge extends Grouping {
  readonly webAcl: wafv2.CfnWebACL;
  readonly distribution: cloudfront.Distribution;
  /** `https://<distribution domain>`: the API's base URL through the edge. */
  readonly url: string;

  constructor(scope: Construct, id: string, props: OtpEdgeProps) {
    super(scope, id);
    const stack = Stack.of(this);
    if (!Token.isUnresolved(stack.region) && stack.region !== EDGE_REGION) {
      throw new Error(
        `otp:edge needs the stack in ${EDGE_REGION} (its WebACL's scope CLOUDFRONT); got ${stack.region}`,
      );
    }
    new CfnRule(this, 'EdgeRegionRule', {
      assertions: [
        {
          assert: Fn.conditionEquals(Aws.REGION, EDGE_REGION),
          assertDescription: `otp:edge deploys only to ${EDGE_REGION}: a CLOUDFRONT WebACL exists only there`,
        },
      ],
    });

    this.webAcl = new wafv2.CfnWebACL(this, 'EdgeWebAcl', {
      scope: 'CLOUDFRONT',
      defaultAction: { allow: {} },
      visibilityConfig: visibility('OtpEdge'),
      rules: [
        managedGroup('IpReputation', 0, 'AWSManagedRulesAmazonIpReputationList'),
        {
          name: 'PerApiKeyRate',
          priority: 1,
          action: { block: {} },
          statement: {
            rateBasedStatement: {
              aggregateKeyType: 'CUSTOM_KEYS',
              // A request without the header is not counted here: the per-IP rule below takes it.
              customKeys: [{ header: { name: API_KEY_HEADER, textTransformations: NO_TRANSFORMATION } }],
              limit: props.edge.keyRequestsPerMinute,
              evaluationWindowSec: RATE_WINDOW_SECONDS,
            },
          },
          visibilityConfig: visibility('PerApiKeyRate'),
        },
        perIpRate('PerIpRateWithoutKey', 2, props.edge.ipRequestsPerMinute, {
          andStatement: {
            statements: [
              { notStatement: { statement: hasApiKey() } },
              // Receipts carry the provider's signature, not a key, and come from the provider's few addresses:
              // the receipt route's throttle limits them, and a forged one costs no table request.
              { notStatement: { statement: pathStartsWith(CALLBACK_PATH_PREFIX) } },
              { notStatement: { statement: pathStartsWith(CONSOLE_PATH_PREFIX) } },
            ],
          },
        }),
        perIpRate('PerIpRateConsole', 3, props.edge.ipRequestsPerMinute, pathStartsWith(CONSOLE_PATH_PREFIX)),
        managedGroup('CommonRuleSet', 4, 'AWSManagedRulesCommonRuleSet', [
          // Backends' HTTP clients do not all send a User-Agent; its absence says nothing about a caller here.
          { name: 'NoUserAgent_HEADER', actionToUse: { count: {} } },
        ]),
        managedGroup('KnownBadInputs', 5, 'AWSManagedRulesKnownBadInputsRuleSet'),
      ],
    });

    // `https://<id>.execute-api.<region>.amazonaws.com` -> its host name.
    const apiHost = Fn.select(2, Fn.split('/', props.api.apiEndpoint));
    this.distribution = new cloudfront.Distribution(this, 'EdgeDistribution', {
      comment: `${stack.stackName}: AWS WAF in front of the HTTP API`,
      webAclId: this.webAcl.attrArn,
      httpVersion: cloudfront.HttpVersion.HTTP2_AND_3,
      defaultBehavior: {
        origin: new origins.HttpOrigin(apiHost, {
          protocolPolicy: cloudfront.OriginProtocolPolicy.HTTPS_ONLY,
          originSslProtocols: [cloudfront.OriginSslPolicy.TLS_V1_2],
        }),
        // POSTs cannot follow a redirect: plain HTTP is refused, not redirected.
        viewerProtocolPolicy: cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
        allowedMethods: cloudfront.AllowedMethods.ALLOW_ALL,
        // Every answer is per caller. With caching disabled this policy also forwards `Authorization` (the
        // console's token) and every other header, the query string and the body; the Host is the API's own.
        cachePolicy: cloudfront.CachePolicy.CACHING_DISABLED,
        originRequestPolicy: cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER,
      },
    });
    this.url = `https://${this.distribution.distributionDomainName}`;

    Validations.of(this.distribution).acknowledge(
      {
        id: 'AwsSolutions-CFR1',
        reason:
          'Callers are backends worldwide; which countries a service may send to is its own setting (the ' +
          'guard allow-list), not where its servers are.',
      },
      {
        id: 'AwsSolutions-CFR3',
        reason:
          'The API stage already logs every request that passes (without keys or bodies); the WebACL metrics ' +
          'and sampled requests show the blocked ones. Standard logs would need an ACL-enabled bucket.',
      },
      {
        id: 'AwsSolutions-CFR4',
        reason:
          'The default *.cloudfront.net certificate, whose policy CloudFront fixes; a custom domain with its own ' +
          'certificate and TLSv1.2_2021 is the deployer’s choice (docs/deploy.md, "The edge").',
      },
    );

    new CfnOutput(stack, 'EdgeUrl', {
      description: 'Base URL of the API through CloudFront and AWS WAF (otp:edge); append /v2/Services/...',
      value: this.url,
    });
  }
}

const NO_TRANSFORMATION = [{ priority: 0, type: 'NONE' }];

const visibility = (metricName: string): wafv2.CfnWebACL.VisibilityConfigProperty => ({
  cloudWatchMetricsEnabled: true,
  metricName,
  sampledRequestsEnabled: true,
});

function managedGroup(
  name: string,
  priority: number,
  group: string,
  ruleActionOverrides?: wafv2.CfnWebACL.RuleActionOverrideProperty[],
): wafv2.CfnWebACL.RuleProperty {
  return {
    name,
    priority,
    overrideAction: { none: {} },
    statement: {
      managedRuleGroupStatement: {
        vendorName: 'AWS',
        name: group,
        ...(ruleActionOverrides && { ruleActionOverrides }),
      },
    },
    visibilityConfig: visibility(name),
  };
}

function perIpRate(
  name: string,
  priority: number,
  limit: number,
  scopeDownStatement: wafv2.CfnWebACL.StatementProperty,
): wafv2.CfnWebACL.RuleProperty {
  return {
    name,
    priority,
    action: { block: {} },
    statement: {
      rateBasedStatement: {
        aggregateKeyType: 'IP',
        limit,
        evaluationWindowSec: RATE_WINDOW_SECONDS,
        scopeDownStatement,
      },
    },
    visibilityConfig: visibility(name),
  };
}

/** The request has a non-empty `X-API-Key` (a missing header never matches a size constraint). */
const hasApiKey = (): wafv2.CfnWebACL.StatementProperty => ({
  sizeConstraintStatement: {
    fieldToMatch: { singleHeader: { Name: API_KEY_HEADER } },
    comparisonOperator: 'GT',
    size: 0,
    textTransformations: NO_TRANSFORMATION,
  },
});

const pathStartsWith = (prefix: string): wafv2.CfnWebACL.StatementProperty => ({
  byteMatchStatement: {
    fieldToMatch: { uriPath: {} },
    positionalConstraint: 'STARTS_WITH',
    searchString: prefix,
    textTransformations: NO_TRANSFORMATION,
  },
});
